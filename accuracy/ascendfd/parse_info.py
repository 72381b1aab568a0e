"""What parsing one process's plogs yields (model/parse_info.py): remote info, timeout events,
the per-pid result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .keywords import MAX_TIME, MIN_TIME


# ---- model/parse_info.py ------------------------------------------------------------------
@dataclass
class RemoteInfo:
    device_ip: str = ""
    phy_device_id: str = ""
    server_ip: str = ""
    eid: str = ""


@dataclass
class TimeoutEvent:
    error_type: str = ""
    error_time: str = ""
    key_info: str = ""
    root_flag: bool = False
    connected_ranks: list[str] = field(default_factory=list)
    identifier: str = ""
    tag: str = ""
    index: str = ""
    remote_rank: str = ""
    remote_info: list[RemoteInfo] = field(default_factory=list)


@dataclass
class PidResult:
    pid: str
    base: dict[str, Any]
    error: dict[str, Any]
    start_train_time: str = MAX_TIME
    end_train_time: str = MIN_TIME
    lagging_time: str = MIN_TIME
    recovery_success_time: str = MIN_TIME
    start_resumable_training_time: str = MIN_TIME
    tls_status: str = ""
    aicpu_notify_wait_remote: str = ""
    show_error: list[str] = field(default_factory=list)
