"""ErrorParser (pkg/parse/root_cluster/parser.py:580-864): a process's error lines, timeout
events, CQE remotes and Cluster Exception Location, from its plog lines.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from .keywords import (
    CLUSTER_EXCEPTION_ROOT_CAUSE,
    CLUSTER_EXCEPTION_ROOT_DEVICE,
    ERROR_ALL,
    ERROR_CQE,
    ERROR_CQE_A5,
    ERROR_CQE_A5_SPLIT,
    ERROR_CQE_LATEST,
    ERROR_CQE_LATEST_SPLIT,
    ERROR_CQE_NEW,
    ERROR_CQE_NEW_SPLIT,
    ERROR_CQE_SPLIT,
    ERROR_HCCL,
    IDENTIFIER_INFO,
    MAX_TIME,
    NOTIFY_IDENTIFIER_INFO,
    NOTIFY_INDEX_INFO,
    NOTIFY_REMOTE_RANK_INFO,
    NOTIFY_TASK_EXCEPTION,
    TAG_INFO,
    TIMEOUT_FFTS,
    TIMEOUT_NORMAL,
    TIMEOUT_NOTIFY,
    TIMEOUT_ROOT_INFO,
    TIMEOUT_SOCKET,
    TRANSPORT_INIT_ERROR,
)
from .line_utils import filter_single_rank_info, is_blacklisted, is_valid_ip
from .parse_info import RemoteInfo, TimeoutEvent


class ErrorParser:  # parser.py:580-864
    OTHER_TIMEOUT_KEYWORDS: ClassVar[dict[str, list[str]]] = {
        TIMEOUT_FFTS: ["FFTS+ run failed"],
        TIMEOUT_NORMAL: ["Wait timeout for sockets recv", "get rasocket timeout", "recv fail"],
    }
    _TRANSPORT_V4 = re.compile(r"remoteIpAddr\[(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})/(\d)]")
    _TRANSPORT_V6 = re.compile(r"remoteIpAddr\[([0-9a-fA-F:]+?)/(\d)]")
    _SOCKET_EID = re.compile(r"(\d{1,3})\s{1,5}\|\s{1,5}IpAddress\[eid\[([0-9a-f:]{1,50})]")
    # parser.py:822 (the IPv6 alternative of regular_table.IPV6_ADDR_PATTERN is left out: IPv4 only)
    _SOCKET_TABLE = re.compile(r"\|\s{1,5}((?:\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}))\((\d{1,5})\)")
    _LINK_NUM = 2

    def __init__(self) -> None:
        self.first_error_time = MAX_TIME
        self.first_error_module = ""
        self.cqe_links: set[str] = set()
        # RootInfoErrorDataCache (parser.py:867-904)
        self.ri_time = MAX_TIME
        self.ri_connected: set[str] = set()
        self.ri_root_flag = False
        self.ri_exist = False
        # NotifyErrorDataCache (parser.py:907-951)
        self.nt: dict[str, Any] = self._new_notify()
        # SocketErrorDataCache (parser.py:954-985)
        self.sk_type = ""
        self.sk_time = MAX_TIME
        self.sk_remote: list[RemoteInfo] = []
        self.sk_exist = False
        self.notify_event_data: dict[str, TimeoutEvent] = {}
        self.timeout_events: list[TimeoutEvent] = []
        self.cluster_exception: dict[str, str] = {}
        self.transport_error_remote: RemoteInfo | None = None
        self.transport_init_error_happened = False

    @staticmethod
    def _new_notify() -> dict[str, Any]:
        return {
            "tag": "",
            "remote_rank": "",
            "time": MAX_TIME,
            "index": "",
            "identifier": "",
            "exist": False,
        }

    def re_init(self) -> None:
        self.__init__()  # type: ignore[misc]

    def parse_line(self, line: str, module: str, log_time: str, resume: str, recovery: str) -> bool:
        ignore = is_blacklisted(line) or log_time < resume or log_time < recovery
        if not line.startswith(ERROR_ALL) or ignore:
            return False
        if log_time < self.first_error_time:
            self.first_error_time = log_time
            self.first_error_module = module
        if not line.startswith(ERROR_HCCL):
            return True
        self._cqe(line)
        self._cluster_exception(line)
        self._root_info(line, log_time)
        self._notify(line, log_time)
        for etype, kws in self.OTHER_TIMEOUT_KEYWORDS.items():
            for kw in kws:
                if kw in line:
                    self.timeout_events.append(TimeoutEvent(etype, log_time, line))
        self._socket(line, log_time)
        self._transport(line)
        return True

    def _flush_notify(self) -> None:
        nt = self.nt
        ev = TimeoutEvent(
            error_type=TIMEOUT_NOTIFY,
            error_time=nt["time"],
            tag=nt["tag"],
            identifier=nt["identifier"],
            index=nt["index"],
            remote_rank=nt["remote_rank"],
        )
        self.nt = self._new_notify()
        # _save_and_refactor_notify_event, parser.py:842-854
        stored = self.notify_event_data.get(ev.tag)
        if stored is None:
            self.notify_event_data[ev.tag] = ev
        elif stored.remote_rank == "local" and ev.remote_rank != "local":
            stored.remote_rank = ev.remote_rank

    def get_result(self) -> dict[str, Any]:  # parser.py:613-635
        if self.nt["exist"]:
            self._flush_notify()
        events = self.timeout_events + list(self.notify_event_data.values())
        if self.sk_exist:
            events.append(
                TimeoutEvent(self.sk_type, self.sk_time, remote_info=self.sk_remote)
                if self.sk_type == TIMEOUT_SOCKET
                else TimeoutEvent(self.sk_type, self.sk_time)
            )
        return {
            "first_error_module": self.first_error_module,
            "first_error_time": self.first_error_time,
            "cqe_links": sorted(self.cqe_links),
            "timeout_error_events_list": events,
            "cluster_exception": self.cluster_exception,
            "transport_error_remote": self.transport_error_remote,
            "transport_init_error_happened": self.transport_init_error_happened,
        }

    def _cqe(self, line: str) -> None:  # parser.py:693-708
        for keyword, split_key in zip(
            [ERROR_CQE, ERROR_CQE_NEW, ERROR_CQE_A5],
            [ERROR_CQE_SPLIT, ERROR_CQE_NEW_SPLIT, ERROR_CQE_A5_SPLIT],
            strict=True,
        ):
            if keyword in line:
                info = filter_single_rank_info(line, split_key)
                if ERROR_CQE_LATEST in line:
                    info = filter_single_rank_info(
                        line.split(ERROR_CQE_LATEST)[-1], ERROR_CQE_LATEST_SPLIT
                    )
                if not info:
                    return
                self.cqe_links.add(info)

    def _cluster_exception(self, line: str) -> None:  # parser.py:830-840
        if CLUSTER_EXCEPTION_ROOT_DEVICE not in line:
            return
        root = filter_single_rank_info(line, CLUSTER_EXCEPTION_ROOT_DEVICE)
        if not root:
            return
        self.cluster_exception[root] = filter_single_rank_info(line, CLUSTER_EXCEPTION_ROOT_CAUSE)

    def _root_info(self, line: str, t: str) -> None:  # parser.py:710-741
        if (
            "DisplayConnectionedRank" in line or "DispalyConnectionedRank" in line
        ) and "connected rankinfo" in line:
            for item in line.split("]:")[-1].strip(";\n").split(","):
                self.ri_connected.add(item.split(":")[0].strip().lstrip("[").rstrip("]"))
                self.ri_exist = True
            return
        for key_id, kw in enumerate(
            [
                "topo exchange server get socket timeout",
                "GetRankBasicInfo from rank[",
                "topo exchange agent get socket timeout",
                "receive from fdhandle failed",
                "receive msg length from fdhandle failed",
            ]
        ):
            if kw in line:
                self.ri_exist = True
                if t < self.ri_time:
                    self.ri_time = t
                    self.ri_root_flag = self.ri_root_flag or key_id <= 1
                return
        if "rootInfo identifier[" not in line:
            return
        ident = filter_single_rank_info(line, IDENTIFIER_INFO)
        if not ident or not self.ri_exist:
            return
        # format_data does not reset the cache (parser.py:740-741): later identifier lines re-emit it
        self.timeout_events.append(
            TimeoutEvent(
                error_type=TIMEOUT_ROOT_INFO,
                error_time=self.ri_time,
                identifier=ident,
                root_flag=self.ri_root_flag,
                connected_ranks=list(self.ri_connected),
            )
        )

    def _notify(self, line: str, t: str) -> None:  # parser.py:743-769
        if NOTIFY_TASK_EXCEPTION not in line:
            return
        if "taskType[Notify Wait]" in line:
            if self.nt["exist"]:
                self._flush_notify()
            self.nt["exist"] = True
            self.nt["tag"] = filter_single_rank_info(line, TAG_INFO)
            self.nt["index"] = filter_single_rank_info(line, NOTIFY_INDEX_INFO)
            self.nt["time"] = min(self.nt["time"], t)
            return
        if "para information" in line:
            rr = filter_single_rank_info(line, NOTIFY_REMOTE_RANK_INFO)
            if not self.nt["remote_rank"] or self.nt["remote_rank"] == "local":
                self.nt["remote_rank"] = rr
            return
        if "groupRank information" in line:
            self.nt["identifier"] = filter_single_rank_info(line, NOTIFY_IDENTIFIER_INFO)

    def _sk_add(self, t: str) -> None:
        self.sk_type = TIMEOUT_SOCKET
        self.sk_time = min(self.sk_time, t)

    def _socket(self, line: str, t: str) -> None:  # parser.py:782-828
        if "the connection failure" in line or "Wait links establish completed failed" in line:
            self.sk_exist = True
            self._sk_add(t)
            return
        if "connected p2p timeout" in line and "remote physic id:" in line:
            self.sk_exist = True
            self._sk_add(t)
            parts = line.split("remote physic id:")
            if len(parts) != 2:
                return
            self.sk_remote.append(RemoteInfo("", parts[1].strip(" .\n")))
            return
        if "channel connect timeout after" in line and "sec, channelNum" in line:
            self.sk_exist = True
            self._sk_add(t)
            return
        if "IpAddress[eid[" in line and "ChannelStatus:" in line:
            self._sk_add(t)
            found = self._SOCKET_EID.findall(line)
            if len(found) == self._LINK_NUM:
                self.sk_remote.append(RemoteInfo(eid=found[-1][-1]))
            return
        if "| no connect |" not in line and "| time out |" not in line:
            return
        found = self._SOCKET_TABLE.findall(line)
        if len(found) != self._LINK_NUM:
            return
        self._sk_add(t)
        self.sk_remote.append(RemoteInfo(found[0][0], ""))

    def _transport(self, line: str) -> None:  # parser.py:856-864
        if self.transport_error_remote or TRANSPORT_INIT_ERROR not in line:
            return
        self.transport_init_error_happened = True
        m = self._TRANSPORT_V4.search(line) or self._TRANSPORT_V6.search(line)
        if m and is_valid_ip(m[1]):
            self.transport_error_remote = RemoteInfo(phy_device_id=m[2], server_ip=m[1])
