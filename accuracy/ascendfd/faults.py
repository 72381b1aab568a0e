"""ascend-fd's root-cluster fault codes 101-133 and their English strings
(pkg/diag/root_cluster/fault_description.py, utils/i18n.py).
"""

from __future__ import annotations

from typing import Any

# pkg/diag/root_cluster/fault_description.py:32-60, strings from utils/i18n.py (English)
FAULT_CODES: dict[int, str] = {
    101: "PART_ERROR_WITH_NO_TIMEOUT: no timeout error in any plog; the erroring nodes are suspects",
    102: "ALL_NO_ERROR: no error log in any valid plog",
    107: "ALL_SOCKET_ERROR_WITH_TIMEOUT: all ranks socket timeout, spread > CONNECT_TIMEOUT ({}s); last device",
    108: "ALL_SOCKET_ERROR_NOT_TIMEOUT: {} ranks socket timeout within CONNECT_TIMEOUT ({}s); wait chain end/cycle",
    109: "AI_CPU_NOTIFY_TIMEOUT: {} Notify Wait timeout; end or cycle of the wait chain",
    110: "ALL_NOTIFY_ERROR_WITH_TIMEOUT: all ranks notify timeout, spread > EXEC_TIMEOUT ({}s); last device",
    111: "ALL_NOTIFY_ERROR_NOT_TIMEOUT: all ranks notify timeout within EXEC_TIMEOUT ({}s); no root found",
    112: "PART_NOTIFY_ERROR: some ranks notify timeout; the ranks without it are suspects",
    113: "FIRST_ERROR_RANK: first error is not a timeout; error devices without timeout are suspects",
    114: "INVALID_DEVICE_ERROR: single-card task or error before HCCL init; no valid card info",
    115: "NO_PLOG_ERROR: no valid plog file found",
    116: "CQE_ERROR: RoCE retransmission exceeded (ERROR CQE) on some nodes",
    117: "ALL_INIT_FAILED_WITH_TIMEOUT: all ranks root-info init timeout, spread > timeout ({}s); last device",
    118: "ALL_INIT_FAILED_NOT_TIMEOUT: all ranks root-info init timeout within ({}s); root rank",
    119: "PART_INIT_FAILED: some ranks root-info init timeout; the others are suspects",
    120: "TLS_SWITCH_DIFFERENT: TLS SWITCH {} on the root devices, {} elsewhere",
    121: "INIT_FAILED_WITH_NO_CONN_NO_LOG: ranks neither connected to root nor logged",
    122: "ALL_NOTIFY_ERROR_NOT_TIMEOUT_INDEX_ERR: within EXEC_TIMEOUT ({}s); operator indexes {}, min {}",
    123: "ALL_NOTIFY_ERROR_NOT_TIMEOUT_TAG_ERR: within EXEC_TIMEOUT ({}s); tags {}, minority {}",
    124: "ALL_NOTIFY_ERROR_NOT_TIMEOUT_REMOTE_CYCLE: notify wait deadlock cycle; no root",
    125: "ALL_NOTIFY_ERROR_NOT_TIMEOUT_REMOTE_LOCAL: a rank waits for its own slave stream; others wait for it",
    126: "CLUSTER_EXCEPTION_LOCATION_ERROR: HCCL exception diffusion names the root: '{}'",
    127: "NO_VALID_PLOG_INFO_ERROR: no valid information in the plogs",
    128: "LACK_OF_BASE_INFO_AFTER_RESUMING_TRAINING",
    130: "LAGGING_ON_WAITING_TIMEOUT_REPORT: no timeout in plogs; suspected exited or stuck process",
    132: "TRANSPORT_INIT_ERROR: Transport init error; end or cycle of the wait chain",
    133: "TRANSPORT_INIT_ERROR_NO_DEVICE_ID: Transport init error without a resolved wait relation",
}


class FaultDescription:
    def __init__(self, code: int) -> None:
        self.code = code
        self.string = FAULT_CODES.get(code, "")

    def format(self, *args: Any) -> FaultDescription:
        self.string = self.string.format(*args)
        return self
