"""BaseInfoParser (pkg/parse/root_cluster/parser.py:233-566): a process's rank map, device and
server ids, IPs and timeout settings, from its plog lines.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from .keywords import (
    CONNECT_TIMEOUT,
    CONNECT_TIMEOUT_KEYWORD,
    CONNECT_TIMEOUT_KEYWORD_A5,
    DEFAULT_CONNECT_TIMEOUT_SET_KEYWORD,
    DEFAULT_EXEC_TIMEOUT_SET_KEYWORD,
    DEFAULT_GENERATION_SIGN,
    DEFAULT_IDENTIFIER,
    DEFAULT_RDMA_RETRY_CNT_SET_KEYWORD,
    DEFAULT_RDMA_TIMEOUT_SET_KEYWORD,
    DEVICE_IP_INFO,
    EID_PLANE_INFO,
    ENTRY_DEVICE_INFO,
    ENTRY_RANKS_INFO,
    ENTRY_ROOT_INFO,
    EXEC_TIMEOUT,
    EXEC_TIMEOUT_KEYWORD,
    EXEC_TIMEOUT_KEYWORD_A5,
    EXTERNAL_INPUT_KEYWORD,
    GENERATION_INFO_A5,
    GENERATION_SIGN_A5,
    GET_ROOT_INFO,
    HCCL_ENV_KEYWORD_A5,
    HOST_IP_INFO,
    IDENTIFIER_INFO,
    INIT_ROOT_INFO,
    INVALID_ID,
    INVALID_IP,
    LOGIC_DEVICE_INFO,
    NRANKS_INFO,
    OLD_DEVICE_INFO,
    PHY_DEVICE_INFO,
    RANK_INFO,
    RANK_NUM_INFO,
    RDMA_RETRY_CNT,
    RDMA_RETRY_CNT_KEYWORD,
    RDMA_RETRY_CNT_KEYWORD_A5,
    RDMA_TIMEOUT,
    RDMA_TIMEOUT_KEYWORD,
    RDMA_TIMEOUT_KEYWORD_A5,
    ROOT_INFO_DETECT,
    SERVER_ID_INFO,
    SERVER_INFO,
    SOCKET_PHY_ID_INFO,
    SOCKET_VIRTUAL_NIC_IP_INFO,
    TIME_OUT,
    TIMEOUT_KEYWORD_A5,
    TOTAL_RANK_INFO,
    UNKNOWN_DEVICE_ID,
)
from .line_utils import filter_single_rank_info, is_blacklisted, is_valid_ip


# ---- pkg/parse/root_cluster/parser.py ---------------------------------------------------------
class BaseInfoParser:  # parser.py:233-566
    TIMEOUT_KEYWORD: ClassVar[dict[str, str]] = {
        CONNECT_TIMEOUT: CONNECT_TIMEOUT_KEYWORD,
        EXEC_TIMEOUT: EXEC_TIMEOUT_KEYWORD,
        RDMA_TIMEOUT: RDMA_TIMEOUT_KEYWORD,
        RDMA_RETRY_CNT: RDMA_RETRY_CNT_KEYWORD,
    }
    DEFAULT_TIMEOUT_SET_KEYWORD: ClassVar[dict[str, str]] = {
        CONNECT_TIMEOUT: DEFAULT_CONNECT_TIMEOUT_SET_KEYWORD,
        EXEC_TIMEOUT: DEFAULT_EXEC_TIMEOUT_SET_KEYWORD,
        RDMA_TIMEOUT: DEFAULT_RDMA_TIMEOUT_SET_KEYWORD,
        RDMA_RETRY_CNT: DEFAULT_RDMA_RETRY_CNT_SET_KEYWORD,
    }
    TIMEOUT_KEYWORD_A5_MAP: ClassVar[dict[str, str]] = {
        CONNECT_TIMEOUT: CONNECT_TIMEOUT_KEYWORD_A5,
        EXEC_TIMEOUT: EXEC_TIMEOUT_KEYWORD_A5,
        RDMA_TIMEOUT: RDMA_TIMEOUT_KEYWORD_A5,
        RDMA_RETRY_CNT: RDMA_RETRY_CNT_KEYWORD_A5,
    }
    TIMEOUT_PATTERN = re.compile(TIME_OUT)

    def __init__(self, device_ip_map: dict[str, str]) -> None:
        self.device_ip_map = device_ip_map
        self.logic_device_id = ""
        self.phy_device_id = ""
        self.device_ip = ""
        self.vnic_ip = ""
        self.server_id = ""
        self.rank_map: dict[str, dict[str, Any]] = {}
        self.root_for_identifiers: set[str] = set()
        self.generation_info = DEFAULT_GENERATION_SIGN
        self.timeout_params: dict[str, int] = {}
        self.current_identifier_name = DEFAULT_IDENTIFIER

    def re_init(self) -> None:
        self.__init__(self.device_ip_map)  # type: ignore[misc]

    def parse_line(self, line: str) -> bool:  # parser.py:280-328
        if is_blacklisted(line):
            return False
        if GENERATION_INFO_A5 in line:
            self.generation_info = GENERATION_SIGN_A5
        if GET_ROOT_INFO in line:
            ident = filter_single_rank_info(line, IDENTIFIER_INFO)
            if ident:
                self.root_for_identifiers.add(ident)
            return True
        rank_info_flag = ENTRY_RANKS_INFO in line and RANK_INFO in line
        if ROOT_INFO_DETECT in line or rank_info_flag:
            self._parse_a5_root_info(line)
            return True
        if ENTRY_ROOT_INFO in line:
            self._parse_entry_init_info(line)
            return True
        if (RANK_NUM_INFO in line and RANK_INFO in line) or (
            TOTAL_RANK_INFO in line and SERVER_ID_INFO in line
        ):
            self._parse_common_init_info(line)
            return True
        for cate, keyword in self.DEFAULT_TIMEOUT_SET_KEYWORD.items():
            if (EXTERNAL_INPUT_KEYWORD in line or HCCL_ENV_KEYWORD_A5 in line) and keyword in line:
                if not self.timeout_params.get(cate):
                    timeout = filter_single_rank_info(line, "to [")
                    if timeout:
                        self.timeout_params[cate] = int(float(timeout))
                return True
        for cate, keyword in self.TIMEOUT_KEYWORD.items():
            if keyword in line:
                if not self.timeout_params.get(cate):
                    m = self.TIMEOUT_PATTERN.search(line)
                    if m:
                        self.timeout_params[cate] = int(m[1])
                return True
        if TIMEOUT_KEYWORD_A5 in line:
            for cate, keyword in self.TIMEOUT_KEYWORD_A5_MAP.items():
                if keyword in line and not self.timeout_params.get(cate):
                    timeout = filter_single_rank_info(line, keyword)
                    if timeout:
                        self.timeout_params[cate] = int(float(timeout))
            return True
        if EID_PLANE_INFO in line:  # A5 eid planes: recorded but unused on A2/A3
            return True
        if SOCKET_VIRTUAL_NIC_IP_INFO in line and SOCKET_PHY_ID_INFO in line:
            self.vnic_ip = filter_single_rank_info(line, SOCKET_VIRTUAL_NIC_IP_INFO)
            self.phy_device_id = self.phy_device_id or filter_single_rank_info(
                line, SOCKET_PHY_ID_INFO
            )
            return True
        return False

    def get_result(self) -> dict[str, Any]:  # parser.py:330-354, 379-394
        if not self.phy_device_id and self.logic_device_id:
            self.phy_device_id = self.logic_device_id  # no device_info_map in these bundles
        return {
            "device_ip": self.device_ip
            or self.device_ip_map.get(self.phy_device_id or self.logic_device_id, ""),
            "vnic_ip": self.vnic_ip,
            "logic_device_id": self.logic_device_id,
            "phy_device_id": self.phy_device_id,
            "server_id": self.server_id,
            "root_list": list(self.root_for_identifiers),
            "timeout_param": self.timeout_params,
            "rank_map": self.rank_map,
            "generation_info": self.generation_info,
        }

    def _ident(self, line: str) -> str:
        name = filter_single_rank_info(line, IDENTIFIER_INFO) or DEFAULT_IDENTIFIER
        if name != DEFAULT_IDENTIFIER:
            self.current_identifier_name = name
        return name

    def _parse_entry_init_info(self, line: str) -> None:  # parser.py:445-465
        ident = self._ident(line)
        rank_id = filter_single_rank_info(line, RANK_INFO)
        if rank_id:
            self.rank_map.setdefault(ident, {})["rank_id"] = rank_id
        rank_num = filter_single_rank_info(line, ENTRY_RANKS_INFO)
        if rank_num:
            self.rank_map.setdefault(ident, {})["rank_num"] = int(rank_num)
        logic = filter_single_rank_info(line, ENTRY_DEVICE_INFO)
        if logic == INVALID_ID:
            logic = ""
        self.logic_device_id = self.logic_device_id or logic

    def _parse_a5_root_info(self, line: str) -> None:  # parser.py:467-514
        ident = self._ident(line)
        rank_id = filter_single_rank_info(line, RANK_INFO)
        if rank_id:
            self.rank_map.setdefault(ident, {})["rank_id"] = rank_id
        rank_num_str = filter_single_rank_info(line, NRANKS_INFO) or filter_single_rank_info(
            line, ENTRY_RANKS_INFO
        )
        if rank_num_str:
            try:
                self.rank_map.setdefault(ident, {})["rank_num"] = int(rank_num_str)
            except ValueError:
                self.rank_map.setdefault(ident, {})["rank_num"] = -1
        logic = filter_single_rank_info(line, ENTRY_DEVICE_INFO) or filter_single_rank_info(
            line, LOGIC_DEVICE_INFO
        )
        logic = "" if (not logic or logic == INVALID_ID) else logic
        self.logic_device_id = logic or self.logic_device_id
        phy = filter_single_rank_info(line, SOCKET_PHY_ID_INFO)
        phy = "" if (not phy or phy == INVALID_ID) else phy
        if not phy and logic and ROOT_INFO_DETECT in line:
            phy = UNKNOWN_DEVICE_ID  # no device_info_map here
        self.phy_device_id = phy or self.phy_device_id
        host_ip = filter_single_rank_info(line, HOST_IP_INFO)
        if host_ip != INVALID_IP and is_valid_ip(host_ip):
            self.server_id = self.server_id or host_ip

    def _parse_common_init_info(self, line: str) -> None:  # parser.py:516-566
        ident = self._ident(line)
        rank_id = filter_single_rank_info(line, RANK_INFO)
        rank_num_str = filter_single_rank_info(line, RANK_NUM_INFO) or filter_single_rank_info(
            line, TOTAL_RANK_INFO
        )
        if (ident != DEFAULT_IDENTIFIER or INIT_ROOT_INFO not in line) and rank_num_str:
            try:
                rank_num = int(rank_num_str)
            except ValueError:
                rank_num = -1
            self.rank_map.setdefault(ident, {}).update({"rank_num": rank_num, "rank_id": rank_id})
        logic = filter_single_rank_info(line, OLD_DEVICE_INFO) or filter_single_rank_info(
            line, LOGIC_DEVICE_INFO
        )
        if logic == INVALID_ID:
            logic = ""
        self.logic_device_id = self.logic_device_id or logic
        phy = filter_single_rank_info(line, PHY_DEVICE_INFO)
        if phy == INVALID_ID:
            phy = ""
        self.phy_device_id = self.phy_device_id or phy
        device_ip = filter_single_rank_info(line, DEVICE_IP_INFO)
        if device_ip == INVALID_IP or not is_valid_ip(device_ip):
            device_ip = ""
        self.device_ip = self.device_ip or device_ip
        server_info = filter_single_rank_info(line, SERVER_INFO)
        if server_info:
            server_info = server_info.split("%")[0]
            if not is_valid_ip(server_info):
                server_info = ""
        new_server_id = filter_single_rank_info(line, SERVER_ID_INFO)
        self.server_id = self.server_id or server_info or new_server_id
