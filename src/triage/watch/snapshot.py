"""A snapshot of the job at one moment: every rank's stacks and /proc state, RAS status, a
flight-recorder dump, the devices — written as a folder with a manifest (docs/watch.md §4).

Each item is taken with its own time limit and may be refused (ptrace not permitted, py-spy not
installed, RAS not listening, no flight recorder): the manifest says what was taken, when, and
what could not be and why. Nothing here stops, pauses for long or changes a process: py-spy reads
a process's memory (pausing it only with --native, for the moment its threads are unwound).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from triage.watch import sample
from triage.watch.procs import RankProc, render_state, state_of

PYSPY_TIMEOUT_S = 30.0
TOOL_TIMEOUT_S = 15.0
FLIGHT_RECORDER_WAIT_S = 10.0
MAX_PARALLEL = 8
RAS_PORT = 28028


@dataclass
class Manifest:
    reason: str
    host: str
    taken_at: str
    ranks: list[dict[str, Any]] = field(default_factory=list)
    taken: list[dict[str, Any]] = field(default_factory=list)  # what, rank, file, seconds
    missing: list[dict[str, Any]] = field(default_factory=list)  # what, rank, why

    def add(self, what: str, path: Path | None, began: float, rank: int | None = None,
            why: str = "") -> None:
        entry: dict[str, Any] = {"what": what}
        if rank is not None:
            entry["rank"] = rank
        if path is not None and not why:
            entry.update(file=path.name, seconds=round(time.monotonic() - began, 3))
            self.taken.append(entry)
        else:
            entry["why"] = why
            self.missing.append(entry)


def stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def sampler() -> str | None:
    """py-spy: beside this Python (the `watch` extra installs it there), or on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("py-spy")


def take(folder: Path, ranks: list[RankProc], *, reason: str, host: str, native: bool = False,
         notes: list[str] | None = None) -> Manifest:
    """Take everything at once into `folder` (created), and write its manifest.json."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(reason=reason, host=host, taken_at=stamp())
    manifest.ranks = [{"rank": r.rank, "pid": r.pid, "local_rank": r.local_rank,
                       "world_size": r.world_size, "cmdline": r.cmdline} for r in ranks]
    spy = sampler()
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, max(1, len(ranks)))) as pool:
        for future in [pool.submit(_rank_items, folder, r, manifest, spy, native, host) for r in ranks]:
            future.result()
        extra = [pool.submit(_ras, folder, ranks, manifest), pool.submit(_devices, folder, manifest),
                 pool.submit(_flight_recorder, folder, ranks, manifest)]
        for future in extra:
            future.result()
    for note in notes or []:
        manifest.missing.append({"what": "note", "why": note})
    data = {"triage_watch_snapshot": 1, "reason": manifest.reason, "host": manifest.host,
            "taken_at": manifest.taken_at, "ranks": manifest.ranks, "taken": manifest.taken,
            "not_taken": manifest.missing}
    (folder / "manifest.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return manifest


def _name(rank: RankProc) -> str:
    return f"rank{rank.rank}"


def _rank_items(folder: Path, rank: RankProc, manifest: Manifest, spy: str | None, native: bool,
                host: str) -> None:
    began = time.monotonic()
    state = state_of(rank.pid)
    proc_file = folder / f"{_name(rank)}.proc.txt"
    proc_file.write_text(render_state(rank, state, host), encoding="utf-8")
    manifest.add("proc", proc_file, began, rank.rank, "" if state else "the process had ended")
    began = time.monotonic()
    if spy is None:
        manifest.add("stacks", None, began, rank.rank,
                     "py-spy is not installed (pip install 'triage[watch]'): stacks not taken")
        return
    out, why = sample.dump(spy, rank.pid, native, timeout=PYSPY_TIMEOUT_S, nonblocking=False)
    if why:
        manifest.add("stacks", None, began, rank.rank, why)
        return
    header = (f"triage watch: py-spy dump of rank {rank.rank} (pid {rank.pid}"
              + (f", local_rank {rank.local_rank}" if rank.local_rank is not None else "")
              + (f", world_size {rank.world_size}" if rank.world_size is not None else "")
              + f") on host {host} at {stamp()}\n")
    stack_file = folder / f"{_name(rank)}.stack.txt"
    stack_file.write_text(header + out, encoding="utf-8")
    manifest.add("stacks", stack_file, began, rank.rank)


def _ras(folder: Path, ranks: list[RankProc], manifest: Manifest) -> None:
    began = time.monotonic()
    addr = next((r.env["NCCL_RAS_ADDR"] for r in ranks if r.env.get("NCCL_RAS_ADDR")), "")
    host, _, port_text = addr.rpartition(":") if addr else ("localhost", "", str(RAS_PORT))
    host = host or "localhost"
    port = int(port_text) if port_text.isdigit() else RAS_PORT
    if any(r.env.get("NCCL_RAS_ENABLE") == "0" for r in ranks):
        manifest.add("ras", None, began, why="RAS is turned off in the job (NCCL_RAS_ENABLE=0)")
        return
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=0.5):
            pass
    except OSError as exc:
        manifest.add("ras", None, began, why=f"NCCL RAS not reachable at {host}:{port} "
                     f"({exc.strerror or exc}; a job without NCCL >= 2.24 has none)")
        return
    from triage.ras import collect as ras

    for fmt in ras.FORMATS:
        began = time.monotonic()
        result = ras.collect(host.strip("[]"), port, out_dir=folder, fmt=fmt, timeout_s=5)
        if result.snapshots:
            manifest.add(f"ras-{fmt}", result.snapshots[0].path, began)
        else:
            manifest.add(f"ras-{fmt}", None, began, why=result.error or "RAS sent nothing")


def _devices(folder: Path, manifest: Manifest) -> None:
    for tool, args in (("nvidia-smi", []), ("npu-smi", ["info"])):
        began = time.monotonic()
        path = shutil.which(tool)
        if path is None:
            continue
        try:
            done = subprocess.run([path, *args], capture_output=True, timeout=TOOL_TIMEOUT_S, check=False)
        except (subprocess.TimeoutExpired, OSError) as exc:
            manifest.add(tool, None, began, why=f"{tool} did not answer: {exc}")
            continue
        out = folder / f"{tool}.txt"
        out.write_bytes(done.stdout + done.stderr)
        manifest.add(tool, out, began)


def _flight_recorder(folder: Path, ranks: list[RankProc], manifest: Manifest) -> None:
    """PyTorch's flight recorder: asked for a dump through its pipe where the job set one up
    (TORCH_NCCL_DEBUG_INFO_PIPE_FILE: `<prefix><rank>.pipe`), and the dump copied from where the
    job writes it (TORCH_NCCL_DEBUG_INFO_TEMP_FILE, default /tmp/nccl_trace_rank_<rank>)."""
    enabled = [r for r in ranks if r.env.get("TORCH_NCCL_TRACE_BUFFER_SIZE", "0") not in ("", "0")
               or r.env.get("TORCH_FR_BUFFER_SIZE", "0") not in ("", "0")]
    if not enabled:
        if ranks:
            manifest.add("flight-recorder", None, time.monotonic(),
                         why="the job did not enable the flight recorder (TORCH_NCCL_TRACE_BUFFER_SIZE)")
        return
    began = time.monotonic()
    before = {}
    for rank in enabled:
        dump = Path(rank.env.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/tmp/nccl_trace_rank_") + str(rank.rank))  # noqa: S108 - PyTorch's default
        before[rank.rank] = _mtime(dump)
        pipe = rank.env.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")
        if pipe:
            _poke(Path(f"{pipe}{rank.rank}.pipe"))
    deadline = time.monotonic() + FLIGHT_RECORDER_WAIT_S
    waiting = {r.rank for r in enabled if r.env.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")}
    while waiting and time.monotonic() < deadline:
        for rank in enabled:
            dump = Path(rank.env.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/tmp/nccl_trace_rank_") + str(rank.rank))  # noqa: S108
            if rank.rank in waiting and _mtime(dump) != before[rank.rank]:
                waiting.discard(rank.rank)
        time.sleep(0.2)
    target = folder / "flight-recorder"
    for rank in enabled:
        dump = Path(rank.env.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/tmp/nccl_trace_rank_") + str(rank.rank))  # noqa: S108
        if _mtime(dump) is None:
            manifest.add("flight-recorder", None, began, rank.rank,
                         why=f"no dump at {dump}" + (" (the pipe was written; no dump within "
                                                      f"{FLIGHT_RECORDER_WAIT_S:.0f} s)" if rank.rank in waiting else ""))
            continue
        target.mkdir(exist_ok=True)
        copy = target / dump.name
        try:
            shutil.copyfile(dump, copy)
        except OSError as exc:
            manifest.add("flight-recorder", None, began, rank.rank, why=f"{dump}: {exc.strerror or exc}")
            continue
        manifest.add("flight-recorder", copy, began, rank.rank)


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _poke(pipe: Path) -> None:
    """Write to a rank's flight-recorder pipe without ever blocking (nobody reading: skipped)."""
    try:
        if not stat.S_ISFIFO(pipe.stat().st_mode):
            return
        fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        os.write(fd, b"1\n")
    except OSError:
        pass
    finally:
        os.close(fd)
