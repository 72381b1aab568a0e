"""ascend-fd parse for one worker (node): which plog and device-log files are taken
(parser_saver.py ProcessLogSaver), one PidFileParser per process (parser.py:57-230), TLS status,
AI CPU notify wait and duplicate device ids (rc_parse_job.py).
"""

from __future__ import annotations

import bisect
import os
import re
from datetime import datetime, timedelta
from pathlib import Path

from .base_info_parser import BaseInfoParser
from .error_parser import ErrorParser
from .keywords import (
    ATTR_INIT_SUCCESS,
    DEVICE_LOG_ORIGIN,
    EID_PLANE_INFO,
    ERROR_ALL,
    LAGGING_INFO_ON_WAITING,
    MAX_LOG_NUM,
    MAX_TIME,
    MAX_UINT32,
    MIN_TIME,
    N_SECOND_RECOVERY_FINISH,
    PLOG_ORIGIN,
    SHOW_LINES_NUM,
    TIME_FMT,
    TLS_SWITCH,
)
from .line_utils import get_log_module_and_time
from .parse_info import PidResult


class PidFileParser:  # parser.py:57-230
    def __init__(self, pid: str, device_ip_map: dict[str, str], resume: str, recovery: str) -> None:
        self.pid = pid
        self.start_train_time = MAX_TIME
        self.end_train_time = MIN_TIME
        self.resuming_training_time = resume
        self.recovery_success_time = recovery
        self.lagging_time = MIN_TIME
        self.base = BaseInfoParser(device_ip_map)
        self.error = ErrorParser()
        self.repeat: set[str] = set()
        self.init_info_fetched = False
        self.error_logs: list[str] = []

    def parse_file(self, path: str) -> None:
        if not Path(path).is_file():
            return
        with open(path, encoding="UTF-8", errors="replace") as fh:
            for line in fh:
                try:
                    module, log_time = get_log_module_and_time(line)
                except IndexError:
                    continue
                self._parse_line(line, module, log_time)

    def _need_update(self) -> bool:
        if not self.init_info_fetched:
            self.init_info_fetched = True
            return False
        return True

    def _parse_line(self, line: str, module: str, log_time: str) -> None:  # parser.py:150-185
        if log_time < self.resuming_training_time and self.recovery_success_time == MIN_TIME:
            return
        self.start_train_time = min(log_time, self.start_train_time)
        self.end_train_time = max(self.end_train_time, log_time)
        if "error log can be ignored" in line and "Process group work" not in line:
            self.error.re_init()
            self.repeat.clear()
            return
        if ATTR_INIT_SUCCESS in line and self._need_update():
            self.repeat.clear()
            self.base.re_init()
            return
        if N_SECOND_RECOVERY_FINISH in line and self._need_update():
            self.repeat.clear()
            return
        if LAGGING_INFO_ON_WAITING in line:
            self.lagging_time = max(self.lagging_time, log_time)
        if EID_PLANE_INFO not in line:  # _check_repeat_line, parser.py:197-208
            feature = line.split("[", 2)[-1]
            if feature in self.repeat:
                return
            self.repeat.add(feature)
        self.base.parse_line(line)
        parsed = self.error.parse_line(
            line, module, log_time, self.resuming_training_time, self.recovery_success_time
        )
        if parsed and line.startswith(ERROR_ALL) and line not in self.error_logs:
            self.error_logs.append(line)

    def get_result(self) -> PidResult | None:  # parser.py:81-106
        base = self.base.get_result()
        error = self.error.get_result()
        if not base["rank_map"] and not error["first_error_module"]:
            return None
        if self.resuming_training_time != MIN_TIME:  # _shift_time_by_buffer
            t = datetime.strptime(self.resuming_training_time, TIME_FMT) - timedelta(seconds=10)
            self.resuming_training_time = t.strftime(TIME_FMT)
        return PidResult(
            pid=self.pid,
            base=base,
            error=error,
            start_train_time=self.start_train_time,
            end_train_time=self.end_train_time,
            lagging_time=self.lagging_time,
            recovery_success_time=self.recovery_success_time,
            start_resumable_training_time=self.resuming_training_time,
            show_error=self.error_logs[:SHOW_LINES_NUM],
        )


# ---- pkg/parse/parser_saver.py ProcessLogSaver + rc_parse_job.start_rc_parse_job ---------------
def _add_log(pid: str, path: str, log_dict: dict[str, list[str]], has_limit: bool = True) -> None:
    lst = log_dict.setdefault(pid, [])
    bisect.insort(lst, path)  # parser_saver.py:283-293: keep the first and the last two
    if has_limit and len(lst) > MAX_LOG_NUM + 1:
        log_dict[pid] = lst[:1] + lst[-2:]


def collect_worker_files(
    worker_dir: str,
) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, str], dict[str, str]]:
    """ProcessLogSaver.filter_log (parser_saver.py:159-176, 258-303, 305-397)."""
    plog: dict[str, dict[str, list[str]]] = {"run": {}, "debug": {}, "default": {}}
    devlog: dict[str, dict[str, list[str]]] = {"debug": {}, "run": {}, "default": {}}
    run_dir = ""
    for root, dirs, files in os.walk(worker_dir):
        dirs.sort()
        if not run_dir and "plog" in dirs and root.endswith("run"):
            run_dir = str(Path(root) / "plog")
        for name in sorted(files):
            path = str(Path(root) / name)
            upper = Path(path).parent.parent.name
            for key, regex, target in (
                ("plog-", PLOG_ORIGIN, plog),
                ("device-", DEVICE_LOG_ORIGIN, devlog),
            ):
                if name.startswith(key):
                    m = re.match(regex, name)
                    if m:
                        _add_log(
                            m[1],
                            path,
                            target.get(upper if upper in ("debug", "run") else "default", {}),
                        )
                        break
    # _extract_resuming_training_time: grep -rHE --include=plog-* 'attr init success|HcclCommResume...' run/plog
    resume: dict[str, str] = {}
    recovery: dict[str, str] = {}
    if run_dir:
        counts: dict[str, tuple[str, int]] = {}
        for root, _dirs, files in os.walk(run_dir):
            for name in sorted(files):
                if not name.startswith("plog-"):
                    continue
                m = re.match(PLOG_ORIGIN, name)
                path = str(Path(root) / name)
                with open(path, encoding="UTF-8", errors="replace") as fh:
                    for line in fh:
                        if ATTR_INIT_SUCCESS not in line and N_SECOND_RECOVERY_FINISH not in line:
                            continue
                        if not m:
                            continue
                        try:
                            _, t = get_log_module_and_time(line)
                        except IndexError:
                            continue
                        _add_log(m[1], path, plog["run"], False)
                        if N_SECOND_RECOVERY_FINISH in line:
                            recovery[m[1]] = max(recovery.get(m[1], MIN_TIME), t)
                            continue
                        st, c = counts.get(m[1], (t, 0))
                        counts[m[1]] = (max(st, t), c + 1)
        for pid, (t, c) in counts.items():
            resume[pid] = MIN_TIME if c == 1 else t
    plogs: dict[str, list[str]] = {}
    for d in plog.values():
        for pid, lst in d.items():
            plogs.setdefault(pid, []).extend(lst)
    devs: dict[str, list[str]] = {}
    for d in devlog.values():
        for pid, lst in d.items():
            devs.setdefault(pid, []).extend(lst)
    return plogs, devs, resume, recovery


def _tls_status(files: list[str]) -> str:  # rc_parse_job.py:211-220, 407-418
    pat = re.compile(TLS_SWITCH)
    for f in files:
        with open(f, encoding="UTF-8", errors="replace") as fh:
            for line in fh:
                m = pat.search(line.strip())
                if m:
                    return m.group(1)
    return ""


def _field(log_line: str, key: str, must: str = "") -> str:
    if key not in log_line or (must and must not in log_line):
        return ""
    for item in log_line.split(","):
        if key in item:
            return item.split(":")[-1].strip()
    return ""


def _aicpu_notify_wait(files: list[str] | None) -> str:  # rc_parse_job.py:421-460
    if not files:
        return ""
    for f in files:
        remote = ""
        with open(f, encoding="UTF-8", errors="replace") as fh:
            for line in fh:
                if not remote:
                    if "remoteRank:" in line and "NOTIFY WAIT" in line:
                        for item in line.split(","):
                            if "remoteRank:" in item:
                                rid = item.split(":")[-1].strip()
                                if rid != str(MAX_UINT32):
                                    remote = rid
                                    break
                    continue
                group = _field(line, "group:")
                return f"{group}:{remote}" if group else ""
    return ""


def parse_worker(worker_dir: str) -> dict[str, PidResult]:
    plogs, devs, resume, recovery = collect_worker_files(worker_dir)
    results: dict[str, PidResult] = {}
    device_pid: dict[str, str] = {}
    for pid, files in plogs.items():
        p = PidFileParser(pid, {}, resume.get(pid, MIN_TIME), recovery.get(pid, MIN_TIME))
        for f in files:
            p.parse_file(f)
        res = p.get_result()
        if res is None:
            continue
        # check_device_id_repeat, rc_parse_job.py:186-208
        dev_id = res.base["phy_device_id"] or res.base["logic_device_id"]
        if dev_id:
            stored = device_pid.get(dev_id)
            if stored is None or stored not in results:
                device_pid[dev_id] = pid
            elif results[stored].start_train_time <= res.start_train_time:
                results.pop(stored)
                device_pid[dev_id] = pid
            else:
                continue
        res.tls_status = _tls_status(devs.get(pid, []))
        res.aicpu_notify_wait_remote = _aicpu_notify_wait(devs.get(pid))
        results[pid] = res
    return results
