"""ascend-fd's keywords, split keys and limits, copied from the source at COMMIT.

Mostly utils/regular_table.py (the line numbers in comments are that file's at COMMIT), with
utils/constant/str_const.py, the default blacklist and the parse limits.
"""

from __future__ import annotations

COMMIT = "22bb3d987bc0208c3eb7395e222b661276133c58"
SRC = "github.com/Ascend/mind-cluster component/ascend-faultdiag/src/ascend_fd"

# ---- utils/regular_table.py (line numbers at COMMIT) ------------------------------------------
TIMEOUT_SOCKET = "Socket"  # :24
TIMEOUT_NOTIFY = "Notify"  # :25
TIMEOUT_FFTS = "FFTSPlus"  # :26
TIMEOUT_ROOT_INFO = "RootInfo"  # :27
TIMEOUT_NORMAL = "normal"  # :28
DEFAULT_IDENTIFIER = "identifier-NA"  # :29
PLOG_ORIGIN = r"plog-(\d{1,10})_\d{1,20}\.log"  # :30
DEVICE_LOG_ORIGIN = r"device-(\d{1,10})_\d{1,20}\.log"  # :131
TIME_OUT = r"timeOut\[(\d{1,10})\]"  # :33
RANK_NUM_INFO = "rankNum["  # :34
TOTAL_RANK_INFO = "totalRanks["
ENTRY_RANKS_INFO = "ranks["
ENTRY_DEVICE_INFO = "deviceLogicId["
IDENTIFIER_INFO = "identifier["
RANK_INFO = "rank["
SERVER_INFO = "server["
SERVER_ID_INFO = "serverId["
OLD_DEVICE_INFO = "device["
LOGIC_DEVICE_INFO = "logicDevId["
PHY_DEVICE_INFO = "phydevId["
DEVICE_IP_INFO = "deviceIp["
TAG_INFO = "tag["
NOTIFY_INDEX_INFO = "index["
NOTIFY_REMOTE_RANK_INFO = "remote rank:["
NOTIFY_IDENTIFIER_INFO = "group:["  # :49
GENERATION_INFO_A5 = "V950"
DEFAULT_GENERATION_SIGN = "A2/A3"
GENERATION_SIGN_A5 = "A5"
EID_PLANE_INFO = "Net2PeerLink"  # :53
SOCKET_VIRTUAL_NIC_IP_INFO = "[Vnic]Listen on ip["  # :58
SOCKET_PHY_ID_INFO = "devPhyId["
CLUSTER_EXCEPTION_ROOT_DEVICE = "Cluster Exception Location[IP/ID]:["  # :60
CLUSTER_EXCEPTION_ROOT_CAUSE = "ExceptionType:["
NOTIFY_TASK_EXCEPTION = "TaskExceptionHandler"
ERROR_ALL = "[ERROR]"
ERROR_HCCL = "[ERROR] HCCL"
ERROR_CQE = "cqe err status[12]"  # :65
ERROR_CQE_NEW = "cqe error status[12]"
ERROR_CQE_A5 = "cqe error status[5]"
ERROR_CQE_LATEST = "remoteIP{"
ERROR_CQE_SPLIT = "ip:["
ERROR_CQE_NEW_SPLIT = "remoteIP:["
ERROR_CQE_A5_SPLIT = "remoteEid[eid["
ERROR_CQE_LATEST_SPLIT = "deviceIp["  # :72
CONNECT_TIMEOUT = "CONNECT_TIMEOUT"
EXEC_TIMEOUT = "EXEC_TIMEOUT"
RDMA_TIMEOUT = "RDMA_TIMEOUT"
RDMA_RETRY_CNT = "RDMA_RETRY_CNT"
CONNECT_TIMEOUT_KEYWORD = "HCCL_CONNECT_TIMEOUT is set"  # :77
EXEC_TIMEOUT_KEYWORD = "ExecTimeOut is set"
RDMA_TIMEOUT_KEYWORD = "rdmaTimeOut is set"
RDMA_RETRY_CNT_KEYWORD = "rdmaRetryCnt is set"
DEFAULT_CONNECT_TIMEOUT_SET_KEYWORD = "HCCL_CONNECT_TIMEOUT set by"  # :81
DEFAULT_EXEC_TIMEOUT_SET_KEYWORD = "HCCL_EXEC_TIMEOUT set by"
DEFAULT_RDMA_TIMEOUT_SET_KEYWORD = "HCCL_RDMA_TIMEOUT set by"
DEFAULT_RDMA_RETRY_CNT_SET_KEYWORD = "HCCL_RDMA_RETRY_CNT set by"
TIMEOUT_KEYWORD_A5 = "Env config"  # :85
HCCL_ENV_KEYWORD_A5 = "HCCL_ENV"
CONNECT_TIMEOUT_KEYWORD_A5 = "linkTimeOut["
EXEC_TIMEOUT_KEYWORD_A5 = "execTimeOut["
RDMA_TIMEOUT_KEYWORD_A5 = "rdmaTimeOut["
RDMA_RETRY_CNT_KEYWORD_A5 = "rdmaRetryCnt["
EXTERNAL_INPUT_KEYWORD = "externalinput.cc"  # :91
ENTRY_ROOT_INFO = "Entry-HcclCommInitRootInfo"
GET_ROOT_INFO = "HcclGetRootInfo success"
INIT_ROOT_INFO = "HcclCommInitRootInfo"
ROOT_INFO_DETECT = "RootInfoDetect"
NRANKS_INFO = "nRanks["
HOST_IP_INFO = "host ip["  # :97
TLS_SWITCH = r"TLS SWITCH \((\d{1,3})\)"  # :117
ATTR_INIT_SUCCESS = "attr init success"  # :126
N_SECOND_RECOVERY_FINISH = "HcclCommResume:success, take time"
LAGGING_INFO_ON_WAITING = "ReportTimeoutProc: report timeout"  # :128
MAX_TIME = "9999-12-31-23:59:59.999999"  # :208
MIN_TIME = "0000-01-01-00:00:00.000000"
# utils/constant/str_const.py:22-30
AI_CPU = "AI CPU"
TRANSPORT_INIT_ERROR = "Transport init error"
UNKNOWN_DEVICE_ID = "Unknown"
# pkg/parse/blacklist/blacklist_op.py:90-94 (the user blacklist is empty by default)
DEFAULT_BLACKLIST = [
    ["Ioctl", "failed"],
    ["Failed", "to", "get", "tgid", "by", "pid"],
    ["DRV", "cannot", "find", "docker", "in"],
]
MAX_LOG_NUM = 2  # pkg/parse/parser_saver.py:130
SHOW_LINES_NUM = 10  # utils/tool.py:79
INVALID_ID = "-1"  # parser.py:53
INVALID_IP = "0.0.0.0"  # noqa: S104  (parser.py:54, a sentinel, not a bind address)
NEGATIVE_ONE = "-1"  # utils.py:46
MAX_UINT32 = 2**32 - 1
TIME_FMT = "%Y-%m-%d-%H:%M:%S.%f"
