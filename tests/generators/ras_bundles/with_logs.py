"""Builders of the RAS bundles that also hold the job's per-rank logs (written by generators/jobgen
with the same hosts, pids and GPUs)."""

from __future__ import annotations

import contextlib
import dataclasses
import random
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from generators import jobgen, rasgen
from generators.rasgen import Comm, Process, Snapshot

from .truth import Built, iso, snapshot_files, truth


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
