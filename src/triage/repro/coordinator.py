"""Standalone mode end to end: the whole group, then (with --bisect) smaller groups.

Writes `<log_dir>/coordinator.log` (launch facts, how each rank ended, the bisection's conclusion)
next to the ranks' own logs, so that `triage analyze <log_dir>` sees the whole story.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from triage.repro import bisect, store
from triage.repro.bandwidth import gbps
from triage.repro.launcher_env import RankEnv, gpu_of
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
        lost = [p.job_rank for p in run.procs if p.lost and p.phase == phase]
        stuck = [p.job_rank for p in run.procs if p.phase == phase and p.end is not None
                 and p.end.get("status") == "stuck"]
        ended = [p.job_rank for p in run.procs if p.phase == phase
                 and (p.ended_by_us is not None or p.hung_hard)]
        failed = {p.job_rank: p.failed[phase] for p in run.procs if phase in p.failed}
        reached = [p for p in run.procs if p.phase_secs.get(phase) is not None or p.phase == phase]
        seconds = max((p.phase_secs[phase] for p in done), default=None)
        if lost:
            rows.append(PhaseRow(phase, "lost", None, f"no word from rank {_ranks(lost)}"))
        elif died:
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


def rank_extra_env(opts: ReproOptions) -> dict[str, str]:
    """What every rank's environment gets besides its identity."""
    if opts.backend != "nccl" or "NCCL_DEBUG" in os.environ:
        return {}
    # NCCL's INFO lines say which transport it chose (read back for the bandwidth verdict) and
    # land in the rank's log, where `analyze` reads them too.
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV,NET"}


def _new_run(opts: ReproOptions, log: LineLog) -> Run:
    """A run of `opts.group` on this host, around a store we host on a free port."""
    hosted = store.host(0, 2 * max(opts.deadlines.values()) + 10, addr="127.0.0.1")
    world = len(opts.group)
    key = "-".join(map(str, opts.group))
    envs = [RankEnv(launcher="triage repro", rank=index, world_size=world, local_rank=index,
                    local_world_size=world, master_addr="127.0.0.1", master_port=hosted.port, run_id=key,
                    device=gpu_of(job_rank, opts.ranks_per_gpu) if opts.backend == "nccl" else None,
                    nccl_hostid=f"triage-repro-rank{job_rank}" if opts.ranks_per_gpu > 1 else None)
            for index, job_rank in enumerate(opts.group)]
    return Run(opts=opts, envs=envs, log=log, extra_env=rank_extra_env(opts), store=hosted)


def run_standalone(opts: ReproOptions, do_bisect: bool) -> Outcome:
    log_dir = Path(opts.log_dir)
    log = LineLog(log_dir / "coordinator.log", "coordinator")
    world = len(opts.group)
    log.line(f"launching {world} ranks (world size {world}) on this host, backend {opts.backend}, "
             f"pid {os.getpid()}")
    if opts.ranks_per_gpu > 1:
        log.line(f"{opts.ranks_per_gpu} ranks per GPU, each its own NCCL host (NCCL_HOSTID): NCCL connects "
                 "them over its network transport, so this measures the network path, not the GPU's links")
    run = _new_run(opts, log)
    try:
        supervise([run], log.fd)
        outcome = Outcome(run, phase_rows(run), _failed(run), _slow(run))
        if do_bisect:
            if outcome.failed or outcome.slow:
                _bisect(outcome, opts, log)
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


def _bisect(outcome: Outcome, opts: ReproOptions, log: LineLog) -> None:
    base = Path(opts.log_dir)
    # Sub-group logs stay out of the main log folder: `triage analyze <log_dir>` must see one job.
    root = base.with_name(base.name + ".bisect")
    log.line(f"bisect: one host, so testing every pair of ranks; logs in {root}")
    results: list[bisect.GroupResult] = []
    for pairs in bisect.pair_rounds(opts.group):
        runs = []
        for a, b in pairs:
            sub = replace(opts, group=[a, b], log_dir=str(root / f"group-{a}-{b}"))
            runs.append(_new_run(sub, LineLog(root / f"group-{a}-{b}" / "coordinator.log", "coordinator")))
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
