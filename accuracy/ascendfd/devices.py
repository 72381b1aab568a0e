"""The diagnosis side's devices (pkg/diag/root_cluster/utils.py:51-485): Device, RankDevice,
Identifier and the DeviceTable that holds them all.
"""

from __future__ import annotations

from typing import Any

from .keywords import (
    CONNECT_TIMEOUT,
    DEFAULT_IDENTIFIER,
    EXEC_TIMEOUT,
    MAX_TIME,
    NEGATIVE_ONE,
    TIMEOUT_NORMAL,
    TIMEOUT_NOTIFY,
)
from .line_utils import is_valid_ip
from .parse_info import RemoteInfo, TimeoutEvent


# ---- pkg/diag/root_cluster/utils.py -----------------------------------------------------------
class Device:  # utils.py:51-234
    def __init__(
        self,
        pid: str = NEGATIVE_ONE,
        worker_name: str = "worker-NA",
        table: DeviceTable | None = None,
    ) -> None:
        self.pid = pid
        self.worker_name = worker_name
        self.device_table = table
        self.server_id = ""
        self.device_ip = ""
        self.logic_device_id = ""
        self.phy_device_id = ""
        self.tls_status = ""
        self.generation_info = ""
        self.identifier_map: dict[str, Identifier] = {}
        self.first_error_module = ""
        self.first_error_time = ""
        self.timeout_error_events_list: list[TimeoutEvent] = []
        self.transport_error_remote: RemoteInfo | None = None
        self.transport_init_error_happened = False
        self.first_timeout_error_event: TimeoutEvent | None = None
        self.timeout_error_map: dict[tuple[str, str], TimeoutEvent] = {}
        self.error_logs_show: list[str] = []

    def __hash__(self) -> int:
        return hash(self.pid + self.worker_name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self.__class__) and hash(self) == hash(other)

    def __str__(self) -> str:
        if self.worker_name == "worker-NA":
            return "Unknown Device"
        if self.device_id == NEGATIVE_ONE and self.device_table:
            for ident in self.identifier_map:
                return f"{self.worker_name} device-{self.device_table.get_lack_device_id(ident, self.worker_name, self.pid)}"
            return f"{self.worker_name} device-Unknown"
        return f"{self.worker_name} device-{self.device_id}"

    __repr__ = __str__

    @property
    def device_id(self) -> str:
        return self.phy_device_id or self.logic_device_id or NEGATIVE_ONE

    @property
    def err_time(self) -> str:
        return self.first_error_time or MAX_TIME

    def is_error(self) -> bool:
        return bool(self.first_error_module) and self.first_error_time != MAX_TIME

    def update_base_info(self, base: dict[str, Any]) -> None:
        self.logic_device_id = base["logic_device_id"]
        self.phy_device_id = base["phy_device_id"]
        ip = base["device_ip"]
        self.device_ip = ip if (not ip or is_valid_ip(ip)) else ""
        sid = base["server_id"]
        self.server_id = sid if (not sid or is_valid_ip(sid)) else ""
        self.generation_info = base["generation_info"]

    def update_error_info(self, error: dict[str, Any], resume: str) -> None:  # utils.py:162-204
        table = self.device_table
        assert table is not None
        self.first_error_time = error["first_error_time"] or MAX_TIME
        self.first_error_module = error["first_error_module"]
        self.transport_error_remote = error["transport_error_remote"]
        self.transport_init_error_happened = error["transport_init_error_happened"]
        for ev in error["timeout_error_events_list"]:
            if not ev.error_time or ev.error_time < resume:
                continue
            self.timeout_error_events_list.append(TimeoutEvent(**vars(ev)))
        if error["cqe_links"]:
            table.cqe_link_map[self] = error["cqe_links"]
        if not self.timeout_error_events_list:
            return
        self.timeout_error_events_list.sort(key=lambda e: e.error_time)
        for ev in self.timeout_error_events_list:
            if (
                not self.first_timeout_error_event
                or self.first_timeout_error_event.error_type == TIMEOUT_NORMAL
            ):
                self.first_timeout_error_event = ev
            if not ev.identifier:
                if ev.error_type == TIMEOUT_NOTIFY:
                    table.no_group_rank_information_flag = True
                ev.identifier = self._ident_from_tag(ev.tag)
            if ev.identifier == DEFAULT_IDENTIFIER:
                ev.identifier = table.max_rank_num_identifier["identifier_name"]
            key = (ev.identifier, ev.error_type)
            if (
                key not in self.timeout_error_map
                or self.timeout_error_map[key].error_time > ev.error_time
            ):
                self.timeout_error_map[key] = ev

    def _ident_from_tag(self, tag: str) -> str:
        assert self.device_table is not None
        if not tag:
            return DEFAULT_IDENTIFIER
        for name in self.device_table.identifier_dict:
            if name in tag:
                return name
        return DEFAULT_IDENTIFIER


class RankDevice(Device):  # utils.py:240-259
    def __init__(self, identifier: str, rank_id: int) -> None:
        super().__init__()
        self.identifier = identifier
        self.rank_id = str(rank_id)

    def __hash__(self) -> int:
        return hash(self.identifier + self.rank_id)

    def __str__(self) -> str:
        return f"{self.identifier} rank-{self.rank_id}"


class Identifier:  # utils.py:262-316
    def __init__(self, name: str = DEFAULT_IDENTIFIER, rank_num: int = -1) -> None:
        self.name = name
        self.rank_num = rank_num
        self.device_rank_id_map: dict[Device, str] = {}
        self.rank_id_device_map: dict[str, Device] = {}
        self.root_device = Device()

    def __hash__(self) -> int:
        return hash(self.name)

    def update_device(self, dev: Device, rank_id: str) -> None:
        self.device_rank_id_map[dev] = rank_id
        self.rank_id_device_map[rank_id] = dev
        dev.identifier_map[self.name] = self


class DeviceTable:  # utils.py:319-485
    def __init__(self) -> None:
        self.worker_list: list[str] = []
        self.max_rank_num_identifier: dict[str, Any] = {
            "rank_num": -1,
            "identifier_name": DEFAULT_IDENTIFIER,
        }
        self.identifier_dict: dict[str, Identifier] = {}
        self.device_map: dict[tuple[str, str], Device] = {}
        self.server_device_map: dict[tuple[str, str], Device] = {}
        self.device_ip_map: dict[str, Device] = {}
        self.device_id_instance_map: dict[tuple[str, str], Device] = {}
        self.vnic_ip_dev_id_relation: dict[tuple[str, str], str] = {}
        self.err_device: list[Device] = []
        self.no_err_device: list[Device] = []
        self.cqe_link_map: dict[Device, list[str]] = {}
        self.timeouts = {CONNECT_TIMEOUT: 120, EXEC_TIMEOUT: 1800}
        self.no_group_rank_information_flag = False
        self.cluster_exception: dict[str, str] = {}
        self.identifier_rank_to_device_ip: dict[str, str] = {}
        self.aicpu_notify_wait_relation: dict[str, str] = {}
        self.transport_init_error_flag = False
        self.eid_device_map: dict[str, Device] = {}

    def update_max_identifier(self, name: str, rank_num: int) -> None:
        if rank_num > self.max_rank_num_identifier["rank_num"]:
            self.max_rank_num_identifier = {"rank_num": rank_num, "identifier_name": name}

    def add_device(self, dev: Device) -> None:
        self.device_map[(dev.worker_name, dev.pid)] = dev
        if dev.server_id and dev.device_id:
            self.server_device_map[(dev.server_id, dev.device_id)] = dev
        if dev.phy_device_id:
            self.device_id_instance_map[(dev.worker_name, dev.phy_device_id)] = dev
        if dev.device_ip and is_valid_ip(dev.device_ip):
            self.device_ip_map[dev.device_ip] = dev
        (self.err_device if dev.is_error() else self.no_err_device).append(dev)

    def get_lack_device_id(
        self, ident_name: str, worker_name: str, pid: str
    ) -> str:  # utils.py:419-440
        dev = self.device_map.get((worker_name, pid), Device())
        ident = self.identifier_dict.get(ident_name, Identifier())
        for store in list(ident.device_rank_id_map):
            if dev == store or dev.worker_name != store.worker_name:
                continue
            store_rank = ident.device_rank_id_map.get(store, NEGATIVE_ONE)
            if NEGATIVE_ONE not in (store_rank, store.device_id):
                dev_rank = ident.device_rank_id_map.get(dev, NEGATIVE_ONE)
                if dev_rank == NEGATIVE_ONE:
                    continue
                did = str(int(store.device_id) + (int(dev_rank) - int(store_rank)))
                dev.phy_device_id = did
                return did
        return "Unknown"

    def get_transport_init_error_relation(self) -> dict[str, str]:  # utils.py:471-485
        relation: dict[str, str] = {}
        for dev in self.server_device_map.values():
            if dev.transport_init_error_happened:
                self.transport_init_error_flag = dev.transport_init_error_happened
            r = dev.transport_error_remote
            if not r or not r.server_ip or not r.phy_device_id:
                continue
            remote = self.server_device_map.get((r.server_ip, r.phy_device_id), Device())
            if remote == Device() or not remote.device_ip:
                continue
            if not is_valid_ip(dev.device_ip) or not is_valid_ip(remote.device_ip):
                continue
            relation[dev.device_ip] = remote.device_ip
        return relation
