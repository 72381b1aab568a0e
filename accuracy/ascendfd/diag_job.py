"""ascend-fd diag on a bundle (pkg/diag/root_cluster/rc_diag_job.py RCDiagWorker): the workers,
the device table built from their parse results, the checker picked, and its answer.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .checker import ErrorChecker
from .devices import Device, DeviceTable, Identifier
from .faults import FAULT_CODES
from .keywords import DEFAULT_IDENTIFIER, MIN_TIME, PLOG_ORIGIN, TIME_FMT
from .parse_info import PidResult
from .worker_parse import parse_worker


# ---- pkg/diag/root_cluster/rc_diag_job.py RCDiagWorker -----------------------------------------
def find_workers(bundle: Path) -> dict[str, Path]:
    base = bundle / "logs" if (bundle / "logs").is_dir() else bundle
    workers: dict[str, Path] = {}
    for sub in sorted(p for p in base.iterdir() if p.is_dir()):
        if any(re.match(PLOG_ORIGIN, f.name) for f in sub.rglob("plog-*.log")):
            workers[sub.name] = sub
    if not workers and any(re.match(PLOG_ORIGIN, f.name) for f in base.glob("plog-*.log")):
        workers[base.name] = base
    return workers


def diagnose_workers(parsed: dict[str, dict[str, PidResult]]) -> dict[str, Any]:
    """RCDiagWorker.start_job (rc_diag_job.py:103-142) followed by BaseChecker.format_output."""
    table = DeviceTable()
    table.worker_list = sorted(parsed)
    # update_cluster_level_parameters (:205-233) and _fetch_worker_lever_parameters (:430-460)
    resume = MIN_TIME
    recovery = MIN_TIME
    all_recovered = True
    latest_lag = MIN_TIME
    lack_base: set[Device] = set()
    for w in sorted(parsed):
        w_resume, w_recovery, all_pid_rec = MIN_TIME, MIN_TIME, True
        for pid, r in parsed[w].items():
            latest_lag = max(latest_lag, r.lagging_time)
            if all_pid_rec and r.recovery_success_time == MIN_TIME:
                all_pid_rec = False
            if r.start_resumable_training_time > r.end_train_time:
                continue
            if r.start_resumable_training_time != MIN_TIME and not any(
                bool(v) for v in r.base.values()
            ):
                lack_base.add(Device(pid, w, table))
            w_resume = max(w_resume, r.start_resumable_training_time)
            if all_pid_rec and r.recovery_success_time > w_recovery:
                w_recovery = r.recovery_success_time
        # an empty worker returns (MIN_TIME, MIN_TIME): truthy, so it does not clear the flag
        w_rec = (w_recovery if all_pid_rec else "") if parsed[w] else MIN_TIME
        if all_recovered and not w_rec:
            all_recovered = False
            recovery = MIN_TIME
        if all_recovered and w_rec > recovery:
            recovery = w_rec
        resume = max(resume, w_resume)
    if all_recovered:
        resume = max(resume, recovery)
    lagging: list[Device] = []
    if latest_lag != MIN_TIME:  # filter_lagging_devices (:235-255)
        latest = datetime.strptime(latest_lag, TIME_FMT)
        found: dict[str, Device] = {}
        for w, rd in parsed.items():
            for pid, r in rd.items():
                d = Device(pid, w, table)
                d.update_base_info(r.base)
                if r.lagging_time == MIN_TIME or abs(
                    latest - datetime.strptime(r.lagging_time, TIME_FMT)
                ) > timedelta(minutes=15):
                    found[str(d)] = d
        lagging = list(found.values())

    pid_found = False
    cluster = False
    aicpu: dict[str, list[str]] = {}
    for w in sorted(parsed):
        for r in parsed[w].values():
            pid_found = True
            # _get_device_instance (:330-390)
            if not r.base["rank_map"]:
                continue
            dev = Device(r.pid, w, table)
            dev.update_base_info(r.base)
            for name, info in r.base["rank_map"].items():
                rank_num = int(info.get("rank_num", -1) or -1)
                if rank_num < 1:
                    continue
                cluster = True
                ident = table.identifier_dict.setdefault(name, Identifier(name, rank_num))
                if name != DEFAULT_IDENTIFIER and ident.rank_num != rank_num:
                    raise RuntimeError(
                        f"The identifier [{name}] have two different rank num values"
                    )
                ident.rank_num = rank_num
                if not info.get("rank_id"):
                    continue
                ident.update_device(dev, info["rank_id"])
                table.update_max_identifier(name, rank_num)
                table.identifier_rank_to_device_ip[f"{name}:{info['rank_id']}"] = dev.device_ip
            for name in r.base["root_list"]:
                if name in table.identifier_dict:
                    table.identifier_dict[name].root_device = dev
            for k, v in r.base["timeout_param"].items():
                if k in table.timeouts and v:
                    table.timeouts[k] = int(v)
            # _get_single_pid_parser_info (:288-312)
            dev.update_error_info(r.error, resume)
            table.cluster_exception.update(r.error["cluster_exception"])
            dev.tls_status = r.tls_status
            dev.error_logs_show.extend(r.show_error)
            table.add_device(dev)
            if r.aicpu_notify_wait_remote:
                aicpu.setdefault(dev.device_ip, []).append(r.aicpu_notify_wait_remote)
            if r.base["vnic_ip"] and r.base["phy_device_id"]:
                table.vnic_ip_dev_id_relation[(w, r.base["vnic_ip"])] = r.base["phy_device_id"]
    for ip, lst in aicpu.items():  # add_aicpu_notify_wait_relation (:144-152)
        remote = table.identifier_rank_to_device_ip.get(max(lst)) if lst else None
        if remote:
            table.aicpu_notify_wait_relation[ip] = remote

    out: dict[str, Any] = {"analyze_success": True}
    if not pid_found:
        return _early(115, "no_plog", ["Unknown Device"], [])
    if cluster and lack_base:
        return _early(128, "lack_base_info", [str(d) for d in lack_base], list(lack_base))
    if not cluster:
        return _early(114, "invalid_device", ["Unknown Device"], [])
    chk = ErrorChecker(table, lagging)
    try:
        chk.check()
    except RuntimeError as exc:
        return {**_early(None, "error", [], []), "analyze_success": False, "string": str(exc)}
    roots = list(chk.root_devices)
    if len(roots) > 2:  # add_mindie_error_device's final filter (:196-202)
        roots = [d for d in roots if d and d.worker_name != "worker-NA"]
    roots.sort(key=lambda d: d.err_time)  # format_output (:535-553)
    all_root = len(roots) == table.max_rank_num_identifier["rank_num"]
    assert chk.fault is not None
    return {
        **out,
        "code": chk.fault.code,
        "string": chk.fault.string,
        "branch": chk.branch,
        "root_cause_device": ["ALL Device"] if all_root else [str(d) for d in roots],
        "root_devices": roots,
        "device_link": chk.device_links,
        "remote_link": " -> ".join(chk.remote_links),
        "first_error_device": str(chk.first_error_device) if chk.first_error_device else None,
        "last_error_device": str(chk.last_error_device) if chk.last_error_device else None,
    }


def _early(code: int | None, branch: str, named: list[str], devices: list[Any]) -> dict[str, Any]:
    """ascend-fd's answer when it stops before the root-cause checks (no plog, no rank map…)."""
    return {
        "analyze_success": True,
        "code": code,
        "string": FAULT_CODES[code] if code is not None else "",
        "branch": branch,
        "root_cause_device": named,
        "root_devices": devices,
        "first_error_device": None,
        "last_error_device": None,
        "remote_link": "",
        "device_link": [],
    }


def diagnose_bundle(bundle: Path) -> dict[str, Any]:
    workers = find_workers(bundle)
    parsed = {w: parse_worker(str(p)) for w, p in workers.items()}
    return diagnose_workers(parsed)
