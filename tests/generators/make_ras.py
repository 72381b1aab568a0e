"""Regenerate the NCCL RAS scenario bundles with generators/rasgen.py (and generators/jobgen for logs).

Each bundle is ``tests/fixtures/ras-<name>/logs/…`` (RAS snapshots under ``logs/ras/``, named as
``triage ras collect`` names them: ``ras-<UTC time STATUS was sent>Z.txt|.json``; for some, the
per-rank PyTorch/NCCL logs of the same job, written by jobgen with the same hosts, pids and GPUs)
plus ``expected.yaml`` (tests/schemas/expected.schema.json): the story (``description``), the
verdict a report must give (``expect``, derived from the truth), the generator inputs (``spec``)
and the truth (``truth``: status, phase, category, culprit global ranks, the processes RAS names,
whether RAS and the logs disagree, the formats in the bundle, and the facts the truth test checks
against the files).  From ``tests/`` (or with ``PYTHONPATH=tests`` from the repository root):

    python -m generators.make_ras            # rewrite every bundle
    python -m generators.make_ras NAME ...   # only these
    python -m generators.make_ras --check    # regenerate in a temp dir, compare
    python -m generators.make_ras --list     # names, sizes, truths
"""

from __future__ import annotations

import contextlib
import dataclasses
import filecmp
import random
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from generators import bundle_cli, jobgen, rasgen
from generators.rasgen import Comm, Process, Snapshot

REPO = Path(__file__).resolve().parents[2]

FIXTURES = REPO / "tests" / "fixtures"
MADE_BY = "tests/generators/make_ras.py"
T0 = 1_768_187_640  # 2026-01-12 03:14:00 UTC: the RAS-only jobs' clock


# --------------------------------------------------------------------------------------------
# Helpers


@dataclass
class Built:
    files: dict[str, str]  # path under logs/ -> content
    truth: dict[str, Any]


def ips(nodes: int, first: int = 210) -> list[str]:
    """The RAS-only jobs' node addresses (172.16.64.210, .211, …)."""
    return [f"172.16.64.{first + i}" for i in range(nodes)]


def comm_hash(seed: int, what: str) -> int:
    return random.Random(f"{seed}:{what}").getrandbits(64)  # noqa: S311 - reproducible ids


def iso(t: float) -> str:
    """2026-01-12T03:17:01.734112Z (the same rounding as the snapshot file names)."""
    s = rasgen.stamp(t)
    return f"{s[0:4]}-{s[4:6]}-{s[6:8]}T{s[9:11]}:{s[11:13]}:{s[13:]}Z"


def fmt_name(s: Snapshot, fmt: str) -> str:
    """The format label the truth uses for a snapshot."""
    v = rasgen.vtuple(s.version)
    if fmt == "json":
        return "ras-json-2.28.7-invalid" if v < (2, 29) else "ras-json-2.28.7"
    base = "ras-text-2.24" if v < (2, 26) else "ras-text-2.26"
    return base + ("-verbose" if s.verbose else "")


def snapshot_files(snaps: Sequence[Snapshot], fmt: str) -> dict[str, str]:
    return {f"ras/{rasgen.file_name(s, fmt)}": rasgen.render(s, fmt) for s in snaps}


def who(p: Process) -> dict[str, Any]:
    return {"pid": p.pid, "host_ip": p.ip, "gpu": p.gpus[0]}


def truth(
    status: str,
    phase: str,
    category: str,
    culprits: Sequence[int],
    named: Sequence[Process],
    snaps: Sequence[Snapshot],
    fmt: str,
    files: dict[str, str],
    disagreement: bool = False,
    extra_formats: Sequence[str] = (),
    **facts: Any,
) -> dict[str, Any]:
    formats = sorted({fmt_name(s, fmt) for s in snaps} | set(extra_formats))
    return {
        "status": status,
        "phase": phase,
        "category": category,
        "culprit_ranks": list(culprits),
        "culprit_processes": [who(p) for p in named],
        "disagreement": disagreement,
        "formats": formats,
        "nccl_version": snaps[0].version,
        "snapshots": [
            {
                "file": f"ras/{rasgen.file_name(s, fmt)}",
                "sent": iso(s.time),
                "format": fmt_name(s, fmt),
                "verbose": s.verbose,
            }
            for s in snaps
        ],
        "facts": facts,
        "files": sorted(files),
    }


# --------------------------------------------------------------------------------------------
# RAS-only scenarios (one world communicator: a data-parallel job)


def _job(nodes: int, gpus: int, seed: int) -> list[Process]:
    return rasgen.processes(ips(nodes), gpus=gpus, seed=seed)


def dead_process(*, version: str, nodes: int, gpus: int, culprit: int, ops: int, bcast: int,
                 died_s: float, seed: int) -> Built:
    procs = _job(nodes, gpus, seed)
    # the others launched the collective the dead process never joined (it reports nothing)
    world = rasgen.world(procs, comm_hash(seed, "world"), Broadcast=bcast, AllReduce=ops)
    t = T0 + died_s + 181.734112
    snap = Snapshot(time=t, version=version, processes=procs, comms=[world],
                    dead=frozenset({procs[culprit].pid}), seconds=0.02)
    files = snapshot_files([snap], "text")
    return Built(files, truth("diagnosed", "execution", "crashed_process", [culprit], [procs[culprit]],
                              [snap], "text", files, world_hash=f"{world.hash:016x}",
                              dead_pids=[procs[culprit].pid], survivors_launched=ops))


def unresponsive_then_dead(*, version: str, nodes: int, gpus: int, culprit: int, ops: int,
                           bcast: int, after_s: Sequence[float], seed: int, verbose: bool) -> Built:
    procs = _job(nodes, gpus, seed)
    world = rasgen.world(procs, comm_hash(seed, "world"), Broadcast=bcast, AllReduce=ops)
    gone = procs[culprit]
    stop = T0 + 3600.0  # the process stops answering (RAS declares it dead after 60 s)
    snaps = []
    for i, after in enumerate(after_s):
        t = stop + after + 0.218733 * (i + 1)
        dead = after >= 60.0
        snaps.append(Snapshot(
            time=t, version=version, processes=procs, comms=[world], verbose=verbose,
            unresponsive=frozenset() if dead else frozenset({gone.pid}),
            dead=frozenset({gone.pid}) if dead else frozenset(),
            timeouts=0 if dead else 1, seconds=0.03 if dead else 5.012,
        ))
    files = snapshot_files(snaps, "text")
    # ncclras -m all > ras-monitor.log 2>&1, started on the first node before the process vanished
    mon = rasgen.MONITOR_BANNER
    mon += rasgen.monitor_line(stop + 60.4, "PEER_DEAD", gone)
    files[f"ras/ras-monitor-{rasgen.stamp(stop - 300.0)}Z.log"] = mon
    return Built(files, truth("diagnosed", "execution", "crashed_process", [culprit], [gone], snaps,
                              "text", files, extra_formats=["ras-monitor-2.29"],
                              world_hash=f"{world.hash:016x}", unresponsive_first=gone.pid,
                              stopped_answering=iso(stop)))


def stragglers(*, version: str, nodes: int, gpus: int, behind: Sequence[int], ops: int, lag: int,
               bcast: int, every_s: float, n: int, seed: int) -> Built:
    procs = _job(nodes, gpus, seed)
    world = rasgen.world(procs, comm_hash(seed, "world"), Broadcast=bcast, AllReduce=ops)
    rasgen.with_counts(world, behind, AllReduce=ops - lag)
    snaps = [Snapshot(time=T0 + 7200.0 + every_s * i + 0.40071 * (i + 1), version=version,
                      processes=procs, comms=[world]) for i in range(n)]
    files = snapshot_files(snaps, "text")
    return Built(files, truth("diagnosed", "execution", "hung_process", list(behind),
                              [procs[r] for r in behind], snaps, "text", files,
                              majority_count=ops, behind_count=ops - lag))


def transient(*, version: str, nodes: int, gpus: int, plan: Sequence[dict[str, Any]], bcast: int,
              seed: int, verbose: bool) -> Built:
    procs = _job(nodes, gpus, seed)
    h = comm_hash(seed, "world")
    snaps = []
    for i, step in enumerate(plan):
        world = rasgen.world(procs, h, Broadcast=bcast, AllReduce=step["ops"])
        for r, ops in step.get("odd", {}).items():
            rasgen.with_counts(world, [int(r)], AllReduce=ops)
        snaps.append(Snapshot(time=T0 + 600.0 + step["at_s"] + 0.0913 * (i + 1), version=version,
                              processes=procs, comms=[world], verbose=verbose))
    files = snapshot_files(snaps, "text")
    return Built(files, truth("no_failure", "unknown", "unknown", [], [], snaps, "text", files))


def minority_ahead(*, version: str, nodes: int, gpus: int, ahead: int, ops: int, bcast: int,
                   every_s: float, n: int, seed: int) -> Built:
    procs = _job(nodes, gpus, seed)
    world = rasgen.world(procs, comm_hash(seed, "world"), Broadcast=bcast, AllReduce=ops)
    rasgen.with_counts(world, [ahead], AllReduce=ops + 1)
    snaps = [Snapshot(time=T0 + 9000.0 + every_s * i + 0.7141 * (i + 1), version=version,
                      processes=procs, comms=[world], seconds=0.012) for i in range(n)]
    files = snapshot_files(snaps, "text")
    return Built(files, truth("inconclusive", "execution", "hung_process", [], [], snaps, "text", files,
                              ahead_rank=ahead, ahead_count=ops + 1, majority_count=ops))


def transition(*, version: str, nodes: int, gpus: int, initializing: Sequence[int],
               finalizing: Sequence[int], destroyed: Sequence[int], ops: int, bcast: int, seed: int,
               verbose: bool) -> Built:
    procs = _job(nodes, gpus, seed)
    h = comm_hash(seed, "world")
    start = T0 + 1800.0
    # 1. start-up: some ranks finished ncclCommInitRank and launched the first barrier all-reduce
    up = rasgen.world(procs, h, AllReduce=1)
    for r in initializing:
        up.ranks[r].init_state = rasgen.IN_PROGRESS
        up.ranks[r].counts = rasgen.counts()
    # 2. training
    busy = rasgen.world(procs, h, Broadcast=bcast, AllReduce=ops)
    # 3. destroy_process_group(): some ranks are done with the communicator (their process still
    # answers: NOCOMM), some are in ncclCommFinalize, the others not there yet
    end = rasgen.world(procs, h, Broadcast=bcast, AllReduce=ops + 3)
    for r in finalizing:
        end.ranks[r].finalize_called = True
    for r in destroyed:
        end.ranks[r].member = False
    snaps = [
        Snapshot(time=start + 4.311204, version=version, processes=procs, comms=[up], verbose=verbose),
        Snapshot(time=start + 64.902117, version=version, processes=procs, comms=[busy], verbose=verbose),
        Snapshot(time=start + 5430.520034, version=version, processes=procs, comms=[end],
                 verbose=verbose),
    ]
    files = snapshot_files(snaps, "text")
    return Built(files, truth("no_failure", "unknown", "unknown", [], [], snaps, "text", files,
                              initializing=list(initializing), finalizing=list(finalizing),
                              destroyed=list(destroyed)))


def json_dead(*, version: str, nodes: int, gpus: int, culprit: int, ops: int, bcast: int,
              after_s: Sequence[float], seed: int) -> Built:
    procs = _job(nodes, gpus, seed)
    world = rasgen.world(procs, comm_hash(seed, "world"), Broadcast=bcast, AllReduce=ops)
    gone = procs[culprit]
    stop = T0 + 4000.0
    snaps = []
    for i, after in enumerate(after_s):
        dead = after >= 60.0
        snaps.append(Snapshot(
            time=stop + after + 0.5517 * (i + 1), version=version, processes=procs, comms=[world],
            cuda="12.9", runtime=12090, driver=12090,
            unresponsive=frozenset() if dead else frozenset({gone.pid}),
            dead=frozenset({gone.pid}) if dead else frozenset(),
            timeouts=0 if dead else 1, seconds=0.004 if dead else 5.003,
        ))
    files = snapshot_files(snaps, "json")
    return Built(files, truth("diagnosed", "execution", "crashed_process", [culprit], [gone], snaps,
                              "json", files, world_hash=f"0x{world.hash:x}"))


# --------------------------------------------------------------------------------------------
# Scenarios with the job's per-rank logs (generators/jobgen)


@contextlib.contextmanager
def nccl_of(era: str, nccl: tuple[int, int, int] | None, cuda: str | None = None) -> Iterator[None]:
    """Render jobgen's era with another NCCL (jobgen has no era shipping NCCL 2.24/2.25).

    torch.cuda.nccl.version() and NCCL's own lines report the library that is loaded, so a torch
    2.5.1 job run with NCCL 2.25.1 preloaded (as in NGC's 25.01 container) logs 2.25.1 throughout.
    """
    old = jobgen.ERAS[era]
    if nccl is not None:
        jobgen.ERAS[era] = dataclasses.replace(old, nccl=nccl, nccl_cuda=cuda or old.nccl_cuda)
    try:
        yield
    finally:
        jobgen.ERAS[era] = old


def run_jobgen(gen: dict[str, Any], nccl: tuple[int, int, int] | None) -> tuple[jobgen.Job, dict[str, str]]:
    """The jobgen job (its plan: hosts, pids, timeline) and the files it writes, in memory."""
    with nccl_of(gen["era"], nccl):
        job = jobgen.Job(gen["hosts"], gen["gpus"], gen["era"], gen["fault"], gen["culprit"],
                         gen["noise_lines"], gen["layout"], gen["seed"], 10, gen.get("tp", 2))
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "logs"
            jobgen.generate(root, **gen)
            files = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
                     for p in sorted(root.rglob("*")) if p.is_file()}
    return job, files


def job_processes(job: jobgen.Job) -> list[Process]:
    """The job's processes as RAS sees them: the address NCCL bootstraps on, the pid, the GPU."""
    rng = random.Random(job.seed * 31 + 7)  # noqa: S311
    host_hash = [rng.getrandbits(64) for _ in range(job.hosts)]
    return [Process(job.host_ips[p.host], p.pid, (p.local,), host_hash=host_hash[p.host],
                    pid_hash=rng.getrandbits(64)) for p in job.plans]


def cuda_int(v: str) -> int:
    major, minor = v.split(".")[:2]
    return int(major) * 1000 + int(minor) * 10


def ras_versions(job: jobgen.Job) -> dict[str, Any]:
    """Header values consistent with the logs (NCCL banner, torch's CUDA, cudaDriverVersion)."""
    e = job.e
    return {
        "version": e.nccl_str,
        "cuda": e.nccl_cuda,
        "runtime": cuda_int(e.cuda),
        "driver": 12040 if e.nccl < (2, 26, 0) else 12080,  # jobgen's cudaDriverVersion line
    }


def ras_hash(job: jobgen.Job, init_comm_id: str) -> int:
    """RAS's commHash of a communicator whose init lines say `commId 0x<init_comm_id>`.

    From 2.26 NCCL prints commHash itself in the init lines (init.cc: comm->commHash = commIdHash
    = getHash(commId)); 2.24/2.25 print hashUniqueId(commId), another hash of the same id, so the
    two do not match and nothing in the logs gives RAS's hash.
    """
    if job.e.nccl >= (2, 26, 0):
        return int(init_comm_id, 16)
    return random.Random(f"getHash:{init_comm_id}").getrandbits(64)  # noqa: S311


def world_comm(job: jobgen.Job, procs: list[Process]) -> Comm:
    bc = job.n_bcast
    comm = rasgen.world(procs, ras_hash(job, job.comm_id), Broadcast=bc)
    for p in job.plans:  # launched up to the last SeqNum it enqueued on the default PG
        launched = p.enq if p.fate == "timeout" and p.seq == 0 else job.seq - 1
        rasgen.with_counts(comm, [p.rank], AllReduce=launched - bc)
    return comm


def tp_comms(job: jobgen.Job, procs: list[Process]) -> list[Comm]:
    """The tensor-parallel communicators of jobgen's subgroup fault: one all-reduce per step."""
    out = []
    for k in range(job.W // job.tp):
        members = job.tp_ranks(k)
        comm = rasgen.sub(procs, members, ras_hash(job, job.tp_comm_id(k)), AllReduce=job.steps + 1)
        if job.culprit_rank in members:
            rasgen.with_counts(comm, [members.index(job.culprit_rank)], AllReduce=job.steps)
        out.append(comm)
    return out


def log_formats(job: jobgen.Job) -> list[str]:
    return [f"torch-{job.e.torch.split('+')[0]}-logs", f"nccl-{job.e.nccl_str}-debug-info"]


def subcomm_dead(*, gen: dict[str, Any], nccl: Sequence[int], after_death_s: float) -> Built:
    job, logs = run_jobgen(gen, (nccl[0], nccl[1], nccl[2]))
    procs = job_processes(job)
    c = job.culprit_rank
    assert c is not None
    comms = [world_comm(job, procs), *tp_comms(job, procs)]
    t = job.clock.base + job.t_fault + after_death_s
    snap = Snapshot(time=t, processes=procs, comms=comms, dead=frozenset({procs[c].pid}),
                    seconds=0.04, **ras_versions(job))
    files = {**logs, **snapshot_files([snap], "text")}
    k = job.tp_index(c)
    return Built(files, truth(
        "diagnosed", "execution", "crashed_process", [c], [procs[c]], [snap], "text", files,
        extra_formats=log_formats(job), group_ranks=job.tp_ranks(k), group_rank=c % job.tp,
        group_init_comm_id=f"0x{job.tp_comm_id(k)}", group_ras_hash=f"{comms[1 + k].hash:016x}",
        world_init_comm_id=f"0x{job.comm_id}", world_ras_hash=f"{comms[0].hash:016x}",
        died_at=iso(job.clock.base + job.t_fault)))


def subcomm_straggler(*, gen: dict[str, Any], after_s: Sequence[float]) -> Built:
    job, logs = run_jobgen(gen, None)
    procs = job_processes(job)
    c = job.culprit_rank
    assert c is not None
    comms = [world_comm(job, procs), *tp_comms(job, procs)]
    stuck = job.clock.base + max(p.t_enq for p in job.plans if p.fate == "timeout")
    snaps = [Snapshot(time=stuck + a + 0.3301 * (i + 1), processes=procs, comms=comms,
                      **ras_versions(job)) for i, a in enumerate(after_s)]
    files = {**logs, **snapshot_files(snaps, "text")}
    k = job.tp_index(c)
    return Built(files, truth(
        "diagnosed", "execution", "hung_process", [c], [procs[c]], snaps, "text", files,
        extra_formats=log_formats(job), group_ranks=job.tp_ranks(k), group_rank=c % job.tp,
        group_init_comm_id=f"0x{job.tp_comm_id(k)}", group_ras_hash=f"{comms[1 + k].hash:016x}",
        first_timeout=iso(job.clock.base + min(p.t_timeout for p in job.plans if p.fate == "timeout"))))


def with_logs(*, gen: dict[str, Any], after_s: Sequence[float], ras_sees_culprit: bool) -> Built:
    job, logs = run_jobgen(gen, None)
    procs = job_processes(job)
    c = job.culprit_rank
    assert c is not None
    world = world_comm(job, procs)
    if not ras_sees_culprit:  # RAS: every rank launched the same collectives and runs (OK)
        rasgen.with_counts(world, [c], AllReduce=job.plans[0].enq - job.n_bcast)
    stuck = job.clock.base + max(p.t_enq for p in job.plans if p.fate == "timeout")
    snaps = [Snapshot(time=stuck + a + 0.1203 * (i + 1), processes=procs, comms=[world],
                      **ras_versions(job)) for i, a in enumerate(after_s)]
    files = {**logs, **snapshot_files(snaps, "text")}
    first_timeout = job.clock.base + min(p.t_timeout for p in job.plans if p.fate == "timeout")
    return Built(files, truth(
        "diagnosed", "execution", "hung_process", [c], [procs[c]] if ras_sees_culprit else [], snaps,
        "text", files, disagreement=not ras_sees_culprit, extra_formats=log_formats(job),
        world_init_comm_id=f"0x{job.comm_id}", stuck_since=iso(stuck), first_timeout=iso(first_timeout)))


# --------------------------------------------------------------------------------------------
# The bundles


@dataclass
class Scenario:
    name: str
    description: str
    build: Callable[..., Built]
    spec: dict[str, Any]


SCENARIOS: list[Scenario] = [
    Scenario(
        "ras-dead-process",
        "4 nodes x 8 GPUs, one process per GPU, NCCL 2.26.2, one data-parallel communicator (the "
        "world). The process of rank 21 (172.16.64.212, GPU 5) vanished mid-training; three "
        "minutes later one STATUS (not verbose) shows it under DEAD (unreachable via the RAS "
        "network for more than 60 s) and the world communicator INCOMPLETE, its missing rank 21 "
        "named with the same process. The 31 others are RUNNING, stuck at the same operation count "
        "waiting for it. A process RAS cannot reach is gone (a process stuck in Python or in a "
        "kernel keeps its RAS thread answering): rank 21 crashed, during execution.",
        dead_process,
        {"version": "2.26.2", "nodes": 4, "gpus": 8, "culprit": 21, "ops": 18744, "bcast": 3,
         "died_s": 0.0, "seed": 201},
    ),
    Scenario(
        "ras-unresponsive-then-dead",
        "2 nodes x 8, NCCL 2.29.7, VERBOSE STATUS twice, 30 s apart. 40 s after the process of "
        "rank 9 (172.16.64.211, GPU 1) stopped answering, RAS is missing its data: job-level "
        "INCOMPLETE (Missing communicator data from 1 job process), the world communicator "
        "INCOMPLETE with rank 9, and a TIMEOUT while gathering (the 5 s collective leg timeout). "
        "30 s later (past RAS's 60 s) the same process is DEAD. An `ncclras -m all` running on the "
        "first node logged the PEER_DEAD event in between. Rank 9 crashed during execution; the "
        "15 others wait at the same count.",
        unresponsive_then_dead,
        {"version": "2.29.7", "nodes": 2, "gpus": 8, "culprit": 9, "ops": 5021, "bcast": 2,
         "after_s": [40.0, 70.0], "seed": 202, "verbose": True},
    ),
    Scenario(
        "ras-stragglers-persistent",
        "4 nodes x 8, NCCL 2.27.7, three STATUS 30 s apart. Every snapshot shows the same "
        "AllReduce count MISMATCH: 30 ranks launched up to operation 61230, ranks 18 and 19 "
        "(172.16.64.212, GPUs 2 and 3: both read their shards from the same stalled NFS mount) "
        "stay at 61206, one training step (24 bucket all-reduces) behind. Nobody moves in 60 s: "
        "the job hangs, the 30 wait in the collective the two never launched. The minority behind "
        "is the culprit: ranks 18 and 19 hung during execution.",
        stragglers,
        {"version": "2.27.7", "nodes": 4, "gpus": 8, "behind": [18, 19], "ops": 61230, "lag": 24,
         "bcast": 5, "every_s": 30.0, "n": 3, "seed": 203},
    ),
    Scenario(
        "ras-transient-mismatch",
        "2 nodes x 8, NCCL 2.26.6, VERBOSE STATUS three times, 20 s apart, of a busy healthy job. "
        "The first shows 3 ranks one AllReduce ahead (they launched the next bucket first), the "
        "second one rank one behind (rank 9 mid-backward), the third none: RAS reads launches on "
        "the host, and ranks launch asynchronously. The counts move by ~290 every 20 s on every "
        "rank: nothing is stuck, no failure.",
        transient,
        {"version": "2.26.6", "nodes": 2, "gpus": 8, "bcast": 2, "seed": 204, "verbose": True,
         "plan": [{"at_s": 0.0, "ops": 8120, "odd": {2: 8121, 5: 8121, 14: 8121}},
                  {"at_s": 20.0, "ops": 8410, "odd": {9: 8409}},
                  {"at_s": 40.0, "ops": 8700}]},
    ),
    Scenario(
        "ras-minority-ahead",
        "4 nodes x 8, NCCL 2.28.9, three STATUS 30 s apart, all identical: 31 ranks have launched "
        "up to AllReduce 20640 and rank 12 up to 20641; RAS lists rank 12 (the outlier group) by "
        "process, as in NCCL issue 1911. Counts frozen for 60 s: the job hangs. Rank 12 is not a "
        "culprit: it merely launched the next collective and waits in it for the others. The 31 "
        "never launched operation 20641: they are blocked before it, on something RAS cannot see "
        "(host code, a CPU sync on a collective that did not complete, another process group). "
        "Nothing in the snapshots names which process holds them: the hang in execution is "
        "certain, the culprit is not (inconclusive, no culprit; naming rank 12 is the misreading).",
        minority_ahead,
        {"version": "2.28.9", "nodes": 4, "gpus": 8, "ahead": 12, "ops": 20640, "bcast": 3,
         "every_s": 30.0, "n": 3, "seed": 205},
    ),
    Scenario(
        "ras-init-finalize-transition",
        "2 nodes x 8, NCCL 2.27.7, VERBOSE STATUS at start-up, during training and at shutdown. "
        "At start-up ranks 8-11 are still in ncclCommInitRank (INIT) while the others finished it "
        "and launched the first barrier all-reduce: a status and count MISMATCH. During training "
        "all RUNNING, counts equal. At the end, in destroy_process_group(), ranks 0-7 are in "
        "ncclCommFinalize (FINALIZE), ranks 12 and 13 already destroyed the communicator (their "
        "processes answer without it: NOCOMM) and six still run: a status MISMATCH (2.26+ end "
        "such a block without a blank line). Both are transitions that the next snapshot "
        "resolves: no failure.",
        transition,
        {"version": "2.27.7", "nodes": 2, "gpus": 8, "initializing": [8, 9, 10, 11],
         "finalizing": [0, 1, 2, 3, 4, 5, 6, 7], "destroyed": [12, 13], "ops": 2711, "bcast": 4,
         "seed": 206, "verbose": True},
    ),
    Scenario(
        "ras-json-dead",
        "2 nodes x 8, NCCL 2.28.9, `ncclras -f json` twice. 30 s after the process of rank 4 "
        "(172.16.64.210, GPU 4) stopped answering its world rank is in missing_ranks with "
        "unresponsive true, considered_dead false (timeouts_count 1); 45 s later considered_dead "
        "true. NCCL 2.28.7-2.28.9 write no comma after a missing rank's nvml_dev, so both documents "
        "are invalid JSON (fixed in 2.29.2); a reader has to tolerate it. Rank 4 crashed during "
        "execution.",
        json_dead,
        {"version": "2.28.9", "nodes": 2, "gpus": 8, "culprit": 4, "ops": 3301, "bcast": 2,
         "after_s": [30.0, 75.0], "seed": 207},
    ),
    Scenario(
        "ras-224-missing-rank-subcomm",
        "2 nodes x 8, torch 2.5.1 with NCCL 2.25.1, one log per rank (NCCL_DEBUG=INFO), "
        "tensor-parallel groups of 8 (one per node) plus the data-parallel world group. The process "
        "of global rank 13 (gpu-node-02 10.42.0.2, GPU 5) dies silently before its TP all-reduce "
        "(its log just stops); 150 s later STATUS shows it DEAD, the world communicator INCOMPLETE "
        "with `The missing rank: 13` and one 8-rank communicator INCOMPLETE with `The missing "
        "rank: 5`: 2.24/2.25 print communicator ranks and no process. That 5 is the TP rank of "
        "the dead process: its own log's init lines say rank 5 nranks 8 (TP) and rank 13 nranks 16 "
        "(world). In 2.24/2.25 RAS's communicator hash is not the `commId` of the init lines "
        "(different hash functions of the same id); the tie is the dead process (pid, node, GPU) "
        "and the communicator size. Ten minutes after the death the TP peers time out in the TP "
        "group and the rest in the world group. Truth: global rank 13, crashed, execution.",
        subcomm_dead,
        {"gen": {"hosts": 2, "gpus": 8, "era": "2.5", "fault": "subgroup", "culprit": 13,
                 "noise_lines": 50, "layout": "per-rank", "seed": 208, "tp": 8},
         "nccl": [2, 25, 1], "after_death_s": 150.0},
    ),
    Scenario(
        "ras-subcomm-straggler",
        "4 nodes x 8, torch 2.7.1 / NCCL 2.26.2, one log per rank, TP groups of 8 plus the world "
        "group. Rank 21 (gpu-node-03, GPU 5) hangs in Python before its TP all-reduce (alive: RAS "
        "answers). Two STATUS 60 s apart: in the world communicator the whole TP group of ranks "
        "16-23 is one step behind (listed one by one: 8 of 32 ranks), in the TP communicator "
        "`Rank 5 has launched up to operation N` while its 7 peers are at N+1. From 2.26 the "
        "communicator hash RAS prints is the commId of the init lines, so the TP communicator is "
        "the one whose init lines say rank 5 nranks 8 in rank 21's log. Not rank 5 (a TP rank), "
        "not ranks 16-23 (the group waiting for it): global rank 21 hung, during execution.",
        subcomm_straggler,
        {"gen": {"hosts": 4, "gpus": 8, "era": "2.6", "fault": "subgroup", "culprit": 21,
                 "noise_lines": 40, "layout": "per-rank", "seed": 209, "tp": 8},
         "after_s": [60.0, 120.0]},
    ),
    Scenario(
        "ras-with-logs-agree",
        "2 nodes x 8, torch 2.7.1 / NCCL 2.26.2, torchrun logs. Rank 11 (gpu-node-02, GPU 3) "
        "stops in Python before a step's first gradient all-reduce. Two STATUS 60 s apart, during "
        "the hang: 15 ranks launched up to AllReduce N, rank 11 (listed by process, RUNNING, "
        "answering) a step behind, both times. Ten minutes after the hang began the 15 others' "
        "watchdogs time out at the same SeqNum and rank 11 logs nothing: the logs and RAS agree. "
        "Rank 11 hung during execution.",
        with_logs,
        {"gen": {"hosts": 2, "gpus": 8, "era": "2.6", "fault": "silent", "culprit": 11,
                 "noise_lines": 60, "layout": "torchrun", "seed": 210},
         "after_s": [60.0, 120.0], "ras_sees_culprit": True},
    ),
    Scenario(
        "ras-with-logs-disagree",
        "2 nodes x 8, torch 2.7.1 / NCCL 2.26.2, one log per rank. The logs: the 15 other ranks "
        "time out at the same SeqNum and rank 6 (gpu-node-01, GPU 6) logs nothing after its last "
        "step: rank 6 is the culprit by the logs. The STATUS taken four minutes into the hang "
        "says RUNNING and OK everywhere: every rank launched the same collectives (RAS counts "
        "launches, not completions, NCCL issues 1642/1730: a rank stuck inside an operation, its "
        "watchdog wedged in a CUDA call, looks healthy to RAS). Truth: rank 6 hung during "
        "execution; the report must say that RAS and the logs disagree.",
        with_logs,
        {"gen": {"hosts": 2, "gpus": 8, "era": "2.6", "fault": "silent", "culprit": 6,
                 "noise_lines": 60, "layout": "per-rank", "seed": 211},
         "after_s": [240.0], "ras_sees_culprit": False},
    ),
]
BY_NAME: dict[str, Scenario] = {s.name: s for s in SCENARIOS}


# --------------------------------------------------------------------------------------------
# Writing, checking


def expect_of(truth: dict[str, Any]) -> dict[str, Any]:
    """The verdict a report must give: the truth's status, phase (when known), category and culprits;
    where RAS and the logs disagree, the verdict must say so."""
    out: dict[str, Any] = {"status": truth["status"]}
    if truth["phase"] != "unknown":
        out["phase"] = truth["phase"]
    out["category"] = truth["category"]
    out["culprits"] = [{"kind": "rank", "rank": r} for r in truth["culprit_ranks"]]
    out["culprits_exact"] = True
    if truth["disagreement"]:
        out["says"] = {"reasoning_or_missing": ["RAS", "disagree"]}
    return out


def expected_yaml(s: Scenario, built: Built) -> str:
    data = {"description": s.description, "made_by": MADE_BY, "expect": expect_of(built.truth), "spec": s.spec,
            "truth": built.truth}
    return yaml.safe_dump(data, sort_keys=False, width=110, allow_unicode=True)


def bundle_texts(s: Scenario) -> dict[str, str]:
    """Relative path (under the bundle folder) -> content, built in memory."""
    built = s.build(**s.spec)
    out = {f"logs/{k}": v for k, v in built.files.items()}
    out["expected.yaml"] = expected_yaml(s, built)
    return out


def write(s: Scenario, root: Path = FIXTURES) -> int:
    return bundle_cli.write_texts(root / s.name, bundle_texts(s))


def differences(s: Scenario) -> list[str]:
    """What differs between the committed bundle and a fresh build written to a temp dir."""
    have = FIXTURES / s.name
    if not have.is_dir():
        return ["not generated yet"]
    with tempfile.TemporaryDirectory() as tmp:
        write(s, Path(tmp))
        fresh = Path(tmp) / s.name
        a = {p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()}
        b = {p.relative_to(have).as_posix() for p in have.rglob("*") if p.is_file()}
        diffs = [f"missing {x}" for x in sorted(a - b)] + [f"extra {x}" for x in sorted(b - a)]
        diffs += [f"differs {x}" for x in sorted(a & b)
                  if not filecmp.cmp(fresh / x, have / x, shallow=False)]
    return diffs


def _describe(s: Scenario) -> str:
    d = FIXTURES / s.name
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) if d.exists() else 0
    t = yaml.safe_load((d / "expected.yaml").read_text(encoding="utf-8"))["truth"] if d.exists() else {}
    return (f"{size / 1e3:8.1f} kB  {t.get('status', '-'):12} {t.get('phase', '-'):9} "
            f"{t.get('category', '-'):15} culprits={t.get('culprit_ranks')} "
            f"disagree={t.get('disagreement')} {','.join(t.get('formats', []))}")


def main(argv: list[str] | None = None) -> int:
    return bundle_cli.run(__doc__ or "", argv, BY_NAME, write=write,
                          differences=differences, describe=_describe, width=32)


if __name__ == "__main__":
    raise SystemExit(main())
