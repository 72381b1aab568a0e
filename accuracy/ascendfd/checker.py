"""ErrorChecker (pkg/diag/root_cluster/utils.py:871-1277): ascend-fd's root-cluster decision
order over the device table, from lagging devices to the first error device.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from .devices import Device, DeviceTable, Identifier, RankDevice
from .faults import FaultDescription
from .keywords import (
    AI_CPU,
    CONNECT_TIMEOUT,
    EXEC_TIMEOUT,
    GENERATION_SIGN_A5,
    TIME_FMT,
    TIMEOUT_FFTS,
    TIMEOUT_NORMAL,
    TIMEOUT_NOTIFY,
    TIMEOUT_ROOT_INFO,
    TIMEOUT_SOCKET,
)
from .timeouts import TimeoutOfIdentifier


class ErrorChecker:  # utils.py:871-1277
    def __init__(self, table: DeviceTable, lagging: list[Device]) -> None:
        self.table = table
        self.lagging = lagging
        self.root_devices: list[Device] = [Device()]
        self.first_error_device: Device | None = None
        self.last_error_device: Device | None = None
        self.fault: FaultDescription | None = None
        self.device_links: list[str] = []
        self.remote_links: list[str] = []
        self.branch = ""
        # class-level dicts in the source (utils.py:876-878); per run here
        self.timeout_error_info_map: dict[tuple[str, str], TimeoutOfIdentifier] = {}
        self.connected: dict[str, set[str]] = {}

    def check(self) -> None:  # utils.py:949-982
        t = self.table
        if not t.err_device:
            if self.lagging:
                self.fault, self.root_devices, self.branch = (
                    FaultDescription(130),
                    self.lagging,
                    "lagging",
                )
                return
            self.fault, self.root_devices, self.branch = (
                FaultDescription(102),
                [Device()],
                "no_error",
            )
            return
        self._parse_err_content()
        self.first_error_device = t.err_device[0]
        self.last_error_device = t.err_device[-1]
        if self._check_cqe():
            self.branch = "cqe"
            return
        if self._check_cluster_exception():
            self.branch = "cluster_exception"
            return
        if self._check_error_relation(t.get_transport_init_error_relation()):
            self.branch = "transport_init_chain"
            return
        if self._check_timeout():
            return
        all_to = self._all_timeout_devices()
        if not all_to:
            if self._check_error_relation(t.aicpu_notify_wait_relation):
                self.fault = FaultDescription(109).format(AI_CPU)
                self.branch = "aicpu_notify_chain"
                return
            self.fault, self.root_devices, self.branch = (
                FaultDescription(101),
                t.err_device,
                "no_timeout",
            )
            return
        self.fault, self.branch = FaultDescription(113), "first_error_rank"
        self.root_devices = list(set(t.err_device).difference(all_to))

    @staticmethod
    def cycle_find(start: str, relation: dict[str, str]) -> tuple[list[str], list[str]]:  # :885-917
        result: list[str] = []
        seen: list[str] = []
        step = 0
        while step <= 10000:
            if start in seen:
                i = seen.index(start)
                result = seen[i:]
                seen.append(start)
                return result, seen[i:]
            seen.append(start)
            nxt = relation.get(start, "")
            if not nxt:
                break
            start = nxt
            step += 1
        if seen:
            result.append(seen[-1])
        return result, seen

    def _check_error_relation(self, relation: dict[str, str]) -> bool:  # :919-947
        if not relation:
            return False
        first_ip = self.table.err_device[0].device_ip
        if first_ip not in relation:
            first_ip = max(relation)
        roots, links = self.cycle_find(first_ip, relation)
        ipmap = self.table.device_ip_map
        if links and len(links) > 1:
            self.remote_links.extend(str(ipmap[ip]) if ip in ipmap else ip for ip in links)
        tmp = [ipmap[ip] for ip in roots if ip in ipmap]
        if tmp:
            self.root_devices = tmp
            self.fault = FaultDescription(132)
            return True
        return False

    def _check_cqe(self) -> bool:  # :984-1030
        if not self.table.cqe_link_map:
            return False
        err: set[Device] = set()
        for dev, remotes in sorted(self.table.cqe_link_map.items(), key=lambda x: x[0].err_time):
            err.add(dev)
            for uid in remotes:  # _add_device_links, :1219-1244
                target = self.table.device_ip_map.get(uid, Device())
                if dev.generation_info == GENERATION_SIGN_A5:
                    target = self.table.eid_device_map.get(uid, Device())
                if target != Device():
                    self.device_links.append(
                        f"{dev.worker_name} device-{dev.device_id} -> {target.worker_name} device-{target.device_id}"
                    )
                    err.add(target)
                else:
                    self.device_links.append(f"{dev.worker_name} device-{dev.device_id} -> {uid}")

        def one_device() -> list[Device]:
            links = [dl.split(" -> ") for dl in self.device_links]
            rank_count: dict[str, int] = {}
            target_count: dict[str, int] = {}
            for r, tr in links:
                rank_count[r] = rank_count.get(r, 0) + 1
                target_count[tr] = target_count.get(tr, 0) + 1
            if set(rank_count) == set(target_count) or len(links) == 1:
                return []
            most = max(target_count, key=lambda k: target_count[k])
            others = {tr for r, tr in links if r != most}
            if len(others) != 1:
                return []
            return [d for d in err if str(d) in (most,)]

        self.root_devices = one_device() or list(err)
        self.fault = FaultDescription(116)
        return True

    def _check_cluster_exception(self) -> bool:  # :1032-1056
        if not self.table.cluster_exception:
            return False
        roots: list[Device] = []
        causes: set[str] = set()
        for info, cause in self.table.cluster_exception.items():
            parts = info.split("/")
            if len(parts) != 2:
                continue
            dev = self.table.server_device_map.get((parts[0], parts[1]), Device())
            if dev == Device():
                continue
            roots.append(dev)
            causes.add(cause)
        if not roots:
            return False
        self.root_devices = roots
        self.fault = FaultDescription(126).format(
            "".join(f"{i + 1}. {c};" for i, c in enumerate(causes))
        )
        return True

    def _check_timeout(self) -> bool:  # :1058-1097
        assert self.first_error_device is not None
        first = self.first_error_device.first_timeout_error_event
        if not first:
            return False
        ident, ttype = first.identifier, first.error_type
        info = self.timeout_error_info_map.get((ident, ttype))
        if not info:
            return False
        if ttype in (TIMEOUT_SOCKET, TIMEOUT_ROOT_INFO):
            info.union(self.timeout_error_info_map.get((ident, TIMEOUT_NORMAL)))
        if ttype == TIMEOUT_NORMAL:
            sock = self.timeout_error_info_map.get((ident, TIMEOUT_SOCKET))
            if not sock and self.table.transport_init_error_flag:
                self.fault, self.root_devices, self.branch = (
                    FaultDescription(133),
                    [Device()],
                    "transport_init_no_relation",
                )
                return True
            info.union(sock)
            ttype = TIMEOUT_SOCKET
        spread = (
            datetime.strptime(info.last_time, TIME_FMT)
            - datetime.strptime(info.first_time, TIME_FMT)
        ).total_seconds()
        if ttype == TIMEOUT_SOCKET:
            self._socket(info, spread)
        elif ttype in (TIMEOUT_NOTIFY, TIMEOUT_FFTS):
            self._notify(info, spread)
        elif ttype == TIMEOUT_ROOT_INFO:
            self._init(info, spread)
        else:
            return False
        return True

    def _init(self, info: TimeoutOfIdentifier, spread: float) -> None:  # :1099-1136
        ident = info.identifier
        connected = self.connected.get(ident.name, set())
        lost: list[Device] = []
        if ident and connected:
            ids = list(ident.device_rank_id_map.values())
            lost = [
                RankDevice(ident.name, r)
                for r in range(int(ident.rank_num))
                if str(r) not in ids and str(r) not in connected
            ]
        if lost:
            self.fault, self.root_devices, self.branch = (
                FaultDescription(121),
                lost,
                "init_no_conn_no_log",
            )
            return
        timeout = self.table.timeouts[CONNECT_TIMEOUT]
        no_err = set(ident.device_rank_id_map) - info.error_devices
        if no_err:
            self.fault, self.root_devices, self.branch = (
                FaultDescription(119),
                list(no_err),
                "init_part",
            )
            return
        if float(timeout) < spread:
            self.fault, self.root_devices, self.branch = (
                FaultDescription(117).format(timeout),
                [info.last_device],
                "init_spread_last",
            )
            return
        self.fault, self.root_devices, self.branch = (
            FaultDescription(118).format(timeout),
            [ident.root_device],
            "init_root_rank",
        )

    def _socket(self, info: TimeoutOfIdentifier, spread: float) -> None:  # :1138-1169
        timeout = self.table.timeouts[CONNECT_TIMEOUT]
        all_ranks = set(self.table.device_map.values())  # _filter_min_tls_switch_rank, :1264-1277
        counts = Counter(r.tls_status for r in all_ranks if r.tls_status)
        if len(counts) > 2:
            raise RuntimeError(
                "TLS SWITCH status is abnormal, please check."
            )  # InnerError in the source
        if len(counts) == 2:
            minority, majority = sorted(counts.items(), key=lambda x: x[1])
            self.fault = FaultDescription(120).format(minority[0], majority[0])
            self.root_devices = [r for r in all_ranks if r.tls_status == minority[0]]
            self.branch = "tls_minority"
            return
        no_err = set(info.identifier.device_rank_id_map) - info.error_devices
        if not no_err and float(timeout) < spread:
            self.fault, self.root_devices, self.branch = (
                FaultDescription(107).format(timeout),
                [info.last_device],
                "socket_spread_last",
            )
            return
        self.root_devices, self.remote_links = info.remote_relation.check_socket(info.first_device)
        scope = "Part" if no_err else "All"
        self.fault, self.branch = (
            FaultDescription(108).format(scope, timeout),
            f"socket_chain_{scope.lower()}",
        )

    def _notify(self, info: TimeoutOfIdentifier, spread: float) -> None:  # :1171-1207
        timeout = self.table.timeouts[EXEC_TIMEOUT]
        no_err = set(info.identifier.device_rank_id_map) - info.error_devices
        if no_err:
            self.fault, self.root_devices, self.branch = (
                FaultDescription(112),
                list(no_err),
                "notify_part",
            )
            return
        if 0 < int(timeout) < spread:
            self.fault, self.root_devices, self.branch = (
                FaultDescription(110).format(timeout),
                [info.last_device],
                "notify_spread_last",
            )
            return
        if info.error_type == TIMEOUT_NOTIFY:
            roots, desc = info.check_index_and_tag(timeout)
            if roots:
                self.fault, self.root_devices = desc, roots
                self.branch = (
                    "notify_index" if desc is not None and desc.code == 122 else "notify_tag"
                )
                return
            self.fault, self.root_devices, self.remote_links = info.remote_relation.check_notify()
            self.branch = "notify_remote_graph"
        if not self.fault:
            self.fault, self.root_devices, self.branch = (
                FaultDescription(111).format(timeout),
                [Device()],
                "notify_no_root",
            )

    def _all_timeout_devices(self) -> set[Device]:
        out: set[Device] = set()
        for info in self.timeout_error_info_map.values():
            out |= info.error_devices
        return out

    def _parse_err_content(self) -> None:  # :1246-1262
        self.table.err_device.sort(key=lambda d: d.err_time)
        for dev in self.table.err_device:
            for key, ev in dev.timeout_error_map.items():
                name, ttype = key
                info = self.timeout_error_info_map.setdefault(key, TimeoutOfIdentifier())
                info.identifier = self.table.identifier_dict.get(name, Identifier())
                info.error_type = ttype
                info.update_event(ev, dev, self.table)
                if ttype == TIMEOUT_ROOT_INFO and ev.connected_ranks:
                    self.connected[name] = set(ev.connected_ranks)
