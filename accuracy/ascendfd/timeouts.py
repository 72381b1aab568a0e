"""Who waits for whom (pkg/diag/root_cluster/utils.py:615-868): RemoteRelation, the wait chains
between devices, and TimeoutOfIdentifier, one communicator's timeout errors.
"""

from __future__ import annotations

from .devices import Device, DeviceTable, Identifier
from .faults import FaultDescription
from .keywords import GENERATION_SIGN_A5, TIMEOUT_NOTIFY, TIMEOUT_SOCKET
from .line_utils import is_valid_ip
from .parse_info import RemoteInfo, TimeoutEvent


class RemoteRelation:  # utils.py:615-734
    MAX_TRAVERSED_NUM = 100000

    def __init__(self) -> None:
        self.remote_relation: dict[Device, list[Device]] = {}
        self.reverse_remote_relation: dict[Device, list[Device]] = {}
        self.in_degree_gt1: set[Device] = set()
        self.dst_is_local: set[Device] = set()
        self.traversed: dict[str, int] = {}
        self.remote_links: list[str] = []
        self.cycle_or_last: list[Device] = []
        self.last_unknown = Device()

    def add(self, src: Device, dst: Device | None) -> None:
        if dst is None:
            return
        if src == dst:
            self.dst_is_local.add(src)
            return
        if dst not in self.remote_relation.get(src, []):
            self.remote_relation.setdefault(src, []).append(dst)
        if src not in self.reverse_remote_relation.get(dst, []):
            self.reverse_remote_relation.setdefault(dst, []).append(src)
        if len(self.reverse_remote_relation.get(dst, [])) > 1:
            self.in_degree_gt1.add(dst)

    def check_notify(self) -> tuple[FaultDescription | None, list[Device], list[str]]:  # :651-671
        local = list(self.dst_is_local & set(self.reverse_remote_relation))
        if local:
            self._traverse(local[0], self.reverse_remote_relation)
            self.remote_links.reverse()
            return FaultDescription(125), local, self.remote_links
        if self.in_degree_gt1:
            self._traverse(self.in_degree_gt1.pop(), self.remote_relation)
            return FaultDescription(124), [Device()], self.remote_links
        if self.remote_relation and all(len(v) == 1 for v in self.remote_relation.values()):
            self._traverse(next(iter(self.remote_relation)), self.remote_relation)
            return FaultDescription(124), [Device()], self.remote_links
        return None, [], []

    def check_socket(self, first: Device) -> tuple[list[Device], list[str]]:  # :673-700
        self._traverse(first, self.remote_relation)
        roots = list(set(self.cycle_or_last))
        if str(Device()) not in self.remote_links:
            return roots, self.remote_links
        self.remote_links.remove("Unknown Device")
        self.remote_links.append(self.last_unknown.device_ip)  # infer_task_flag is False here
        return roots, self.remote_links

    def _traverse(self, start: Device, relation: dict[Device, list[Device]]) -> None:  # :702-734
        cur = start
        n = 0
        first_idx = -1
        while n <= self.MAX_TRAVERSED_NUM:
            s = str(cur)
            self.remote_links.append(s)
            if cur == Device():
                self.last_unknown = cur
                break
            if s in self.traversed:
                first_idx = self.traversed[s]
                break
            self.cycle_or_last.append(cur)
            self.traversed[s] = n
            remotes = relation.get(cur, [])
            if not remotes:
                break
            known = [d for d in remotes if d != Device()]
            cur = known[0] if known else remotes[0]
            n += 1
        self.cycle_or_last = self.cycle_or_last[first_idx:]


class TimeoutOfIdentifier:  # utils.py:737-868 (TimeoutErrorOfIdentifier)
    def __init__(self) -> None:
        self.identifier = Identifier()
        self.error_type = ""
        self.first_time = "9999-12-31-23:59:59.999999"
        self.last_time = "1999-12-31-23:59:59.999999"
        self.first_device = Device()
        self.last_device = Device()
        self.error_devices: set[Device] = set()
        self.remote_relation = RemoteRelation()

    @staticmethod
    def get_remote_device(info: RemoteInfo, dev: Device, table: DeviceTable) -> Device:  # :752-792
        if info.eid and dev.generation_info == GENERATION_SIGN_A5:
            r = table.eid_device_map.get(info.eid)
            if r:
                return r
        if info.device_ip and is_valid_ip(info.device_ip):
            r = table.device_ip_map.get(info.device_ip)
            if r:
                return r
            phy = table.vnic_ip_dev_id_relation.get((dev.worker_name, info.device_ip), "")
            r = table.device_id_instance_map.get((dev.worker_name, phy))
            if r:
                return r
        if info.phy_device_id:
            r = table.device_id_instance_map.get((dev.worker_name, info.phy_device_id))
            if r:
                return r
            r = Device(worker_name=dev.worker_name)
            r.phy_device_id = info.phy_device_id
            return r
        r = Device()
        r.device_ip = info.device_ip
        return r

    def update_event(self, ev: TimeoutEvent, dev: Device, table: DeviceTable) -> None:  # :794-816
        self.error_devices.add(dev)
        if self.first_time > ev.error_time:
            self.first_time = ev.error_time
            self.first_device = dev
        if self.last_time < ev.error_time:
            self.last_time = ev.error_time
            self.last_device = dev
        if ev.error_type == TIMEOUT_SOCKET:
            for info in ev.remote_info:
                self.remote_relation.add(dev, self.get_remote_device(info, dev, table))
            return
        if ev.error_type == TIMEOUT_NOTIFY:
            rr = ev.remote_rank
            self.remote_relation.add(
                dev, dev if rr == "local" else self.identifier.rank_id_device_map.get(rr)
            )

    def union(self, other: TimeoutOfIdentifier | None) -> None:  # :818-833
        if not isinstance(other, TimeoutOfIdentifier) or other.identifier != self.identifier:
            return
        if other.first_time < self.first_time and self.first_device != other.first_device:
            self.first_time, self.first_device = other.first_time, other.first_device
        if other.last_time > self.last_time and self.last_device != other.last_device:
            self.last_time, self.last_device = other.last_time, other.last_device
        self.error_devices |= other.error_devices

    def check_index_and_tag(
        self, timeout: int
    ) -> tuple[list[Device], FaultDescription | None]:  # :835-868
        index_dict: dict[str, list[Device]] = {}
        tag_dict: dict[str, list[Device]] = {}
        for dev in self.error_devices:
            ev = dev.timeout_error_map.get((self.identifier.name, TIMEOUT_NOTIFY))
            if ev is None:
                continue
            if ev.index:
                index_dict.setdefault(ev.index, []).append(dev)
            if ev.tag:
                tag_dict.setdefault(ev.tag, []).append(dev)
        if len(index_dict) > 1:
            order = sorted(index_dict, key=lambda x: (0, int(x)) if x.isdigit() else (1, x))
            return index_dict[order[0]], FaultDescription(122).format(timeout, order, order[0])
        if len(tag_dict) > 1:
            tags = sorted(tag_dict.items(), key=lambda x: len(x[1]))
            return tags[0][1], FaultDescription(123).format(timeout, list(tag_dict), tags[0][0])
        return [], None
