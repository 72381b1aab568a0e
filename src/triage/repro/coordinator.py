"""Standalone mode end to end: the whole group, then (with --bisect) smaller groups.

Writes `<log_dir>/coordinator.log` (launch facts, how each rank ended, the bisection's conclusion)
next to the ranks' own logs, so that `triage analyze <log_dir>` sees the whole story.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from triage.repro import bisect
from triage.repro.bandwidth import gbps
from triage.repro.launch import free_port
from triage.repro.logfile import LineLog
from triage.repro.options import ReproOptions, format_size
from triage.repro.protocol import PHASES
from triage.repro.supervise import Run, supervise


@dataclass
class PhaseRow:
    phase: str
    status: str  # pass | FAILED | stuck | crashed | not reached
    seconds: float | None
    detail: str = ""


@dataclass
class Outcome:
    run: Run
    phases: list[PhaseRow]
    failed: bool
    slow: bool
    bisection: list[bisect.GroupResult] = field(default_factory=list)
    judgement: bisect.Judgement | None = None


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, sorted(ranks)))


def phase_rows(run: Run) -> list[PhaseRow]:
    rows = []
    for phase in PHASES:
        done = [p for p in run.procs if phase in p.phase_secs]
        died = [p.job_rank for p in run.procs if p.died == phase]
        stuck = [p.job_rank for p in run.procs if p.phase == phase and p.end is not None
                 and p.end.get("status") == "stuck"]
        ended = [p.job_rank for p in run.procs if p.phase == phase
                 and (p.ended_by_us is not None or p.hung_hard)]
        failed = {p.job_rank: p.failed[phase] for p in run.procs if phase in p.failed}
        reached = [p for p in run.procs if p.phase_secs.get(phase) is not None or p.phase == phase]
        seconds = max((p.phase_secs[phase] for p in done), default=None)
        if died:
            detail = f"rank {_ranks(died)} died"
            if failed:
                detail += f"; failed after it: {_ranks(list(failed))}"
            if ended:
                detail += f"; ended after it: {_ranks(ended)}"
            rows.append(PhaseRow(phase, "crashed", None, detail))
        elif stuck or ended:
            detail = f"stuck: ranks {_ranks(stuck + ended)}"
            if failed:
                detail += f"; failed after them: {_ranks(list(failed))}"
            rows.append(PhaseRow(phase, "stuck", None, detail))
        elif failed:
            whys = sorted({w.split(":")[0] for w in failed.values()})
            rows.append(PhaseRow(phase, "FAILED", None, f"ranks {_ranks(list(failed))}: {'; '.join(whys)}"))
        elif done and len(done) == len(run.procs):
            rows.append(PhaseRow(phase, "pass", seconds))
        elif reached:
            rows.append(PhaseRow(phase, "FAILED", seconds, "not every rank finished it"))
        else:
            rows.append(PhaseRow(phase, "not reached", None))
    return rows


def _failed(run: Run) -> bool:
    return any(p.end is None or p.end.get("code") != 0 for p in run.procs)


def _slow(run: Run) -> bool:
    result = run.result or {}
    return bool(result.get("late")) or result.get("shortfall") is not None


def _new_run(opts: ReproOptions, log: LineLog, devices: list[str] | None) -> Run:
    picked = [devices[r] for r in opts.group] if devices is not None else None
    return Run(opts=opts, port=free_port(), log=log, devices=picked)


def run_standalone(opts: ReproOptions, devices: list[str] | None, do_bisect: bool) -> Outcome:
    log_dir = Path(opts.log_dir)
    log = LineLog(log_dir / "coordinator.log", "coordinator")
    world = len(opts.group)
    log.line(f"launching {world} ranks (world size {world}) on this host, backend {opts.backend}, "
             f"pid {os.getpid()}")
    run = _new_run(opts, log, devices)
    try:
        supervise([run], log.fd)
        outcome = Outcome(run, phase_rows(run), _failed(run), _slow(run))
        if do_bisect:
            if outcome.failed or outcome.slow:
                _bisect(outcome, opts, devices, log)
            else:
                log.line("bisect: the whole group passed; nothing to bisect")
    finally:
        log.close()
    return outcome


def _group_result(run: Run) -> bisect.GroupResult:
    ranks = tuple(run.opts.group)
    rows = phase_rows(run)
    bad = next((r for r in rows if r.status not in ("pass", "not reached")), None)
    busbw = None
    if run.result and run.result.get("rows"):
        busbw = float(max(run.result["rows"], key=lambda r: r["size"])["busbw"])
    late = (run.result or {}).get("late") or []
    short = (run.result or {}).get("shortfall")
    if bad is not None:
        return bisect.GroupResult(ranks, failed=True, phase=bad.phase, busbw=busbw,
                                  note=f"{bad.status} in {bad.phase}" + (f" ({bad.detail})" if bad.detail else ""))
    if late:
        first = late[0]
        return bisect.GroupResult(ranks, failed=False, slow=True, phase=first["phase"], busbw=busbw,
                                  note=f"rank {first['rank']} arrived late in {first['phase']}")
    if short is not None:
        return bisect.GroupResult(ranks, failed=False, slow=True, phase="execution", busbw=busbw,
                                  note=f"busbw {short}% of the expected figure")
    return bisect.GroupResult(ranks, failed=False, busbw=busbw)


def _bisect(outcome: Outcome, opts: ReproOptions, devices: list[str] | None, log: LineLog) -> None:
    base = Path(opts.log_dir)
    # Sub-group logs stay out of the main log folder: `triage analyze <log_dir>` must see one job.
    root = base.with_name(base.name + ".bisect")
    log.line(f"bisect: one host, so testing every pair of ranks; logs in {root}")
    results: list[bisect.GroupResult] = []
    for pairs in bisect.pair_rounds(opts.group):
        runs = []
        for a, b in pairs:
            sub = replace(opts, group=[a, b], log_dir=str(root / f"group-{a}-{b}"))
            runs.append(_new_run(sub, LineLog(root / f"group-{a}-{b}" / "coordinator.log", "coordinator"),
                                 devices))
        try:
            supervise(runs, log.fd)
        finally:
            for finished in runs:
                finished.log.close()
        results.extend(_group_result(r) for r in runs)
    if opts.backend == "nccl":
        # GPU links are steady enough to compare pairs by bandwidth; CPU hosts shared with other
        # work are not (a pair can halve its speed for no fault of its own).
        bisect.mark_slow_by_bandwidth(results)
    for r in results:
        bw = f", busbw {gbps(r.busbw)} GB/s at {format_size(max(opts.sizes))}" if r.busbw is not None else ""
        state = "FAILED" if r.failed else "slow" if r.slow else "passed"
        log.line(f"bisect: group {list(r.ranks)} {state}{bw}" + (f": {r.note}" if r.note else ""))
    judgement = bisect.judge(results)
    if judgement.kind == "rank":
        for rank in judgement.ranks:
            log.line(f"bisect: rank {rank} is at fault in phase {judgement.phase}: {judgement.reasoning}")
    elif judgement.kind == "link":
        for a, b in judgement.links:
            log.line(f"bisect: the link between rank {a} and rank {b} is at fault in phase "
                     f"{judgement.phase}: {judgement.reasoning}")
    else:
        log.line(f"bisect: no single rank or link: {judgement.reasoning}")
    outcome.bisection, outcome.judgement = results, judgement
