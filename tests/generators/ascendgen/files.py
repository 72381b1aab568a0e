"""Files: which story each process lives, where each stream goes, the rank table; render() of a whole job."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from .lines import Clock, Line, Writer, _clock, anchor_lines, life_start, rotate_points
from .lose import (
    _story_lose_cqe,
    _story_lose_ei0005,
    _story_lose_ej0001,
    _story_lose_heartbeat,
    _story_lose_init_agent,
    _story_lose_init_root,
    _story_lose_init_store,
)
from .model import TLS_FAULTS
from .plan import Plan, Proc, attempt_procs
from .stories import (
    _story_cqe,
    _story_ei0005,
    _story_ei0006,
    _story_ej0001,
    _story_exec,
    _story_init_agent,
    _story_init_missing,
    _story_init_ranktable,
    _story_none,
)


def story(plan: Plan, p: Proc, clock: Clock) -> list[Line]:
    rng = random.Random(plan.spec.seed * 1_000_003 + p.rank + 7919 * plan.attempt)  # noqa: S311
    w = Writer(plan, p, clock)
    f, c = plan.spec.fault, plan.spec.culprit
    life_start(w, rng)
    anchor_lines(w)
    tls_rank = plan.spec.peer if f == "lose-tls" else c
    tls = 1 if f in TLS_FAULTS and p.rank == tls_rank else 0
    FAULT_STORIES.get(f, _story_none)(w, rng, tls)
    # nothing after the last line the plan allows (a hung or dead process writes no more)
    return [x for x in w.lines if x[0] <= p.t_last + 1e-6 or x[1] == "screen"]


FAULT_STORIES: dict[str, Callable[[Writer, random.Random, int], None]] = {
    "none": _story_none,
    "init-missing": _story_init_missing,
    "init-agent": _story_init_agent,
    "init-ranktable": _story_init_ranktable,
    "ej0001": _story_ej0001,
    "ei0006-silent": _story_ei0006,
    "link-chain": _story_ei0006,
    "link-cycle": _story_ei0006,
    "tls": _story_ei0006,
    "ei0005": _story_ei0005,
    "ei0002-silent": _story_exec,
    "heartbeat": _story_exec,
    "heartbeat-lost": _story_exec,
    "late": _story_exec,
    "cqe": _story_cqe,
    "lose-init-root": _story_lose_init_root,
    "lose-init-agent": _story_lose_init_agent,
    "lose-ei0006": _story_ei0006,
    "lose-chain-end": _story_ei0005,
    "lose-cycle": _story_ei0006,
    "lose-tls": _story_ei0006,
    "lose-ei0002": _story_exec,
    "lose-heartbeat": _story_lose_heartbeat,
    "lose-cqe": _story_lose_cqe,
    "lose-spread": _story_exec,
    "lose-ej0001": _story_lose_ej0001,
    "lose-ei0005": _story_lose_ei0005,
    "lose-init-store": _story_lose_init_store,
}


def plog_files(plan: Plan, p: Proc) -> dict[str, list[float]]:
    """relative path -> [window start, window end) of the debug plog files of this pid, and the rest."""
    sd = plan.server_dirs[p.server]
    clock = _clock(plan, p)
    pts = rotate_points(plan, p)
    out: dict[str, list[float]] = {}
    dbg = "plog" if plan.cann.flat else "debug/plog"
    for i, t in enumerate(pts):
        end = pts[i + 1] if i + 1 < len(pts) else float("inf")
        out[f"{sd}/{dbg}/plog-{p.pid}_{clock.fname(t)}.log"] = [t, end]
    return out


def stream_path(plan: Plan, p: Proc, stream: str) -> str:
    sd = plan.server_dirs[p.server]
    ts = _clock(plan, p).fname(plan.t_init + (0.4 if "dev" in stream else -0.3))
    if plan.cann.flat:
        return {
            "run": f"{sd}/plog/plog-{p.pid}_{ts}.log",
            "ddev": f"{sd}/device-{p.phy}/device-{p.pid}_{ts}.log",
            "rdev": f"{sd}/device-{p.phy}/device-{p.pid}_{ts}.log",
        }[stream]
    return {
        "run": f"{sd}/run/plog/plog-{p.pid}_{ts}.log",
        "ddev": f"{sd}/debug/device-{p.phy}/device-{p.pid}_{ts}.log",
        "rdev": f"{sd}/run/device-{p.phy}/device-{p.pid}_{ts}.log",
    }[stream]


def screen_path(plan: Plan, p: Proc) -> str:
    if plan.spec.launcher == "shell":
        return f"train_{p.rank}.log"
    return f"train-{plan.server_dirs[p.server]}.log"


def _has_stream(plan: Plan, p: Proc, stream: str) -> bool:
    """Whether the plan gives this pid lines in that stream (so plan() knows the files)."""
    f, culprit = plan.spec.fault, p.rank == plan.spec.culprit
    if f == "lose-init-store" and p.rank == plan.spec.peer:
        return False  # its store call failed before HCCL started at all
    if f == "lose-ej0001" and plan.attempt:  # the restart: HCCP cannot start on the stale device
        return not (p.rank == plan.spec.peer and stream == "rdev")
    if stream == "run":  # HCCL_ENV lines: every pid that reached communicator creation
        return not (culprit and f == "init-missing")
    if culprit and f in ("init-missing", "init-ranktable"):
        return False  # never started HCCP on its device
    return not (culprit and f in ("ej0001", "lose-init-agent", "lose-init-store") and stream == "rdev")


def files_of(plan: Plan) -> list[str]:
    files: set[str] = set()
    for pl, p in attempt_procs(plan):
        if plan.spec.layout != "screen":
            files.update(plog_files(pl, p))
            for stream in ("run", "ddev", "rdev"):
                if _has_stream(pl, p, stream):
                    files.add(stream_path(pl, p, stream))
        if plan.spec.layout != "plogs" and _has_screen(pl, p):
            files.add(screen_path(pl, p))
    if plan.spec.rank_table and plan.spec.layout != "screen":
        files.add("rank_table.json")
    return sorted(files)


def _has_screen(plan: Plan, p: Proc) -> bool:
    """torchrun writes one file per server, a shell launcher one per rank (even an empty one)."""
    return True


def rank_table(plan: Plan) -> str:
    servers = []
    for s, ip in enumerate(plan.server_ips):
        devs = [
            {"device_id": str(p.phy), "device_ip": plan.device_ip(p), "rank_id": str(p.rank)}
            for p in plan.procs if p.server == s
        ]
        servers.append({"device": devs, "host_nic_ip": "reserve", "server_id": ip})
    doc = {"server_count": str(plan.spec.servers), "server_list": servers, "status": "completed", "version": "1.0"}
    return json.dumps(doc, indent=4) + "\n"


def render(plan: Plan) -> dict[str, str]:
    """relative path -> file text, for the whole bundle."""
    out: dict[str, list[tuple[float, int, str]]] = {}
    seq = 0
    for pl, p in attempt_procs(plan):
        lines = story(pl, p, _clock(pl, p))
        windows = plog_files(pl, p)
        for t, stream, text in lines:
            seq += 1
            if stream == "screen":
                if plan.spec.layout == "plogs":
                    continue
                path = screen_path(pl, p)
            elif plan.spec.layout == "screen":
                continue
            elif stream == "debug":
                path = next(k for k, (a, b) in windows.items() if a - 1e-9 <= t < b)
            else:
                path = stream_path(pl, p, stream)
            out.setdefault(path, []).append((t, seq, text))
    texts = {k: "".join(x[2] + "\n" for x in sorted(v)) for k, v in out.items()}
    for path in files_of(plan):
        texts.setdefault(path, "")
    if plan.spec.rank_table and plan.spec.layout != "screen":
        texts["rank_table.json"] = rank_table(plan)
    return texts
