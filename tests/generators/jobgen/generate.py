"""Writing a job's files (generate), its plan only (plan), and deterministic archives."""

from __future__ import annotations

import bz2
import gzip
import heapq
import io
import lzma
import math
import tarfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from .common import Line, Truth, hostlist
from .eras import TRAIN, TRUTH
from .job import Job

# --------------------------------------------------------------------------------------------
# Writing


def _join(lines: Iterable[Line]) -> str:
    text = "\n".join(x[1] for x in lines)
    return text + "\n" if text else ""


def _merge(out: list[Line], err: list[Line]) -> list[Line]:
    out.sort(key=lambda x: x[0])
    err.sort(key=lambda x: x[0])
    return list(heapq.merge(out, err, key=lambda x: x[0]))


def generate(
    out_dir: str | Path,
    hosts: int = 2,
    gpus: int = 8,
    era: str = "2.4",
    fault: str = "silent",
    culprit: int | str | None = None,
    noise_lines: int = 200,
    layout: str = "torchrun",
    seed: int = 1,
    timeout_min: int = 10,
    only_hosts: Sequence[int] | None = None,
    tp: int = 2,
) -> Truth:
    """Write one job's log folder into out_dir (created; must be empty or absent).

    only_hosts: keep only these hosts' files (0-based indices), as if the rest were never
    collected (per-rank and torchrun layouts).  tp: tensor-parallel group size (fault subgroup).
    """
    job = Job(hosts, gpus, era, fault, culprit, noise_lines, layout, seed, timeout_min, tp)
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty")
    keep_hosts = set(range(hosts)) if only_hosts is None else set(only_hosts)
    files: list[str] = []
    n_lines = 0
    n_bytes = 0

    def write(rel: str, text: str) -> None:
        nonlocal n_lines, n_bytes
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode()
        path.write_bytes(data)
        files.append(rel)
        n_lines += text.count("\n")
        n_bytes += len(data)

    skip = job.culprit_rank if fault == "missing" else None
    if layout == "torchrun":
        for h in range(hosts):
            if h not in keep_hosts:
                continue
            hn = job.host_names[h]
            write(f"{hn}/agent.log", _join(job.agent_log(h)))
            for lr in range(gpus):
                r = h * gpus + lr
                out, err = job.rank_streams(r)
                if r == skip:
                    continue
                out.sort(key=lambda x: x[0])
                err.sort(key=lambda x: x[0])
                write(f"{hn}/attempt_0/{lr}/stdout.log", _join(out))
                write(f"{hn}/attempt_0/{lr}/stderr.log", _join(err))
    elif layout == "per-rank":
        for r in range(job.W):
            if r // gpus not in keep_hosts or r == skip:
                continue
            out, err = job.rank_streams(r)
            write(f"rank-{r:04d}.log", _join(_merge(out, err)))
    else:
        width = len(str(job.W - 1))
        streams = []
        for r in range(job.W):
            out, err = job.rank_streams(r)
            lab = f"{r:>{width}}: "
            merged = _merge(out, err)
            streams.append([(t, lab + text.replace("\n", "\n" + lab)) for t, text in merged])
        body = list(heapq.merge(*streams, key=lambda x: x[0]))
        t_hdr = -1.0
        head = [
            (
                t_hdr,
                f"Job {job.jobid} ({job.run_id}) started on "
                f"{hostlist(job.host_names)} at {job.clock.parts(0.0)[4]}",
            ),
            (
                t_hdr,
                f"NODES={hosts} GPUS_PER_NODE={gpus} WORLD_SIZE={job.W} "
                f"MASTER_ADDR={job.host_ips[0]} MASTER_PORT={job.master_port}",
            ),
            (
                t_hdr,
                f"+ srun --label --kill-on-bad-exit=0 --ntasks={job.W} "
                f"--ntasks-per-node={gpus} python {TRAIN}",
            ),
        ]
        write(
            f"slurm-{job.jobid}.out",
            _join(head + list(heapq.merge(body, job.slurm_tail(), key=lambda x: x[0]))),
        )
    return _truth(job, str(root), files, n_lines, n_bytes)


def _truth(job: Job, out_dir: str, files: list[str], n_lines: int, n_bytes: int) -> Truth:
    fault = job.fault
    phase, category = TRUTH[fault]
    c = job.culprit_rank
    sub = fault == "subgroup" and c is not None
    k = job.tp_index(c) if sub and c is not None else 0
    return Truth(
        out_dir=out_dir,
        hosts=job.hosts,
        gpus=job.gpus,
        world_size=job.W,
        era=job.e.name,
        fault=fault,
        layout=job.layout,
        phase=phase,
        category=category,
        culprit_rank=c,
        culprit_host=(
            job.host_names[job.culprit_host]
            if fault == "ib" and job.culprit_host is not None
            else None
        ),
        seq=job.seq or None,
        files=sorted(files),
        lines=n_lines,
        bytes=n_bytes,
        end_epoch=job.clock.base + math.ceil(job.t_end()) + 60,
        group_desc="tp" if sub else None,
        group_guid=job.tp_guid(k) if sub else None,
        group_ranks=job.tp_ranks(k) if sub else None,
        group_seq=job.tp_seq if sub else None,
        group_op="ALLREDUCE" if sub else None,
    )


def plan(
    hosts: int = 2,
    gpus: int = 8,
    era: str = "2.4",
    fault: str = "silent",
    culprit: int | str | None = None,
    noise_lines: int = 200,
    layout: str = "torchrun",
    seed: int = 1,
    timeout_min: int = 10,
    only_hosts: Sequence[int] | None = None,
    tp: int = 2,
) -> Truth:
    """The Truth generate() would return for these arguments, without rendering or writing.

    ``files`` lists the relative paths generate() would write; ``lines``/``bytes`` are 0 and
    ``out_dir`` is "".  Cheap even for thousands of ranks (only the job's plan is computed).
    """
    job = Job(hosts, gpus, era, fault, culprit, noise_lines, layout, seed, timeout_min, tp)
    keep = set(range(hosts)) if only_hosts is None else set(only_hosts)
    skip = job.culprit_rank if fault == "missing" else None
    files: list[str] = []
    if layout == "torchrun":
        for h in sorted(keep & set(range(hosts))):
            hn = job.host_names[h]
            files.append(f"{hn}/agent.log")
            for lr in range(gpus):
                if h * gpus + lr != skip:
                    files.append(f"{hn}/attempt_0/{lr}/stdout.log")
                    files.append(f"{hn}/attempt_0/{lr}/stderr.log")
    elif layout == "per-rank":
        files = [f"rank-{r:04d}.log" for r in range(job.W) if r // gpus in keep and r != skip]
    else:
        files = [f"slurm-{job.jobid}.out"]
    return _truth(job, "", files, 0, 0)


# --------------------------------------------------------------------------------------------
# Packaging helpers (deterministic archives and compressed files)


def make_tar_gz(src_dir: str | Path, dest: str | Path, mtime: int = 1_700_000_000) -> None:
    """Pack src_dir's contents into dest (.tar.gz) byte-for-byte reproducibly."""
    src = Path(src_dir)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(src.rglob("*"), key=lambda q: q.relative_to(src).as_posix()):
            rel = path.relative_to(src).as_posix()
            info = tarfile.TarInfo(rel)
            info.mtime = mtime
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if path.is_dir():
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                data = path.read_bytes()
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    Path(dest).write_bytes(out.getvalue())


def compress_file(path: str | Path, kind: str, rename_to: str | None = None) -> Path:
    """Replace path by a compressed copy (kind: gz|bz2|xz); returns the new path."""
    src = Path(path)
    data = src.read_bytes()
    if kind == "gz":
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
            gz.write(data)
        blob = buf.getvalue()
    elif kind == "bz2":
        blob = bz2.compress(data, 9)
    elif kind == "xz":
        blob = lzma.compress(data, format=lzma.FORMAT_XZ, preset=6)
    else:
        raise ValueError(f"unknown compression {kind!r}")
    dest = src.with_name(rename_to) if rename_to else src.with_name(f"{src.name}.{kind}")
    src.unlink()
    dest.write_bytes(blob)
    return dest
