"""Sampling a rank for the progress model (src/triage/watch/progress.py): /proc every poll, the
Python stack (py-spy) at a low rate, and what watch can see of the job at all.

/proc gives, for a rank and its own children (data-loader workers): CPU time (`stat`), bytes and
calls of reads and writes (`io`), the main thread's voluntary context switches (`status`: each
one is the thread waking up), its state and kernel wait channel. None of it touches the process.
A stack sample is `py-spy dump` (reads memory, never stops the process), read by the stack rules
into a StackView: its state, its call and the functions of its deciding thread.
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from triage.lazy_regex import lazy_compile
from triage.parse import pyspy
from triage.rules import Rule
from triage.watch.procs import PROC, RankProc, read_text, stat_fields
from triage.watch.progress import Sample, StackView

SAMPLE_TIMEOUT_S = 10.0  # one stack sample; a rank that cannot be read in this long is skipped
_LINE_NUMBER = lazy_compile(r":\d+\)$")


def proc_counters(pid: int) -> tuple[int, int]:
    """(CPU ticks, I/O) of one process; -1 for what cannot be read."""
    fields = stat_fields(pid)
    cpu = int(fields[11]) + int(fields[12]) if fields and len(fields) > 12 else -1
    text = read_text(PROC / str(pid) / "io")
    io = -1
    if text:
        values = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        try:
            io = sum(int(values[k]) for k in ("rchar", "wchar", "syscr", "syscw"))
        except (KeyError, ValueError):
            io = -1
    return cpu, io


def wakeups(pid: int) -> int:
    text = read_text(PROC / str(pid) / "status") or ""
    for line in text.splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            value = line.split(":", 1)[1].strip()
            return int(value) if value.isdigit() else -1
    return -1


def proc_sample(rank: RankProc, children: list[int], at: float) -> Sample | None:
    """One /proc look at a rank and its children; None when the rank is gone."""
    fields = stat_fields(rank.pid)
    if not fields:
        return None
    cpu, io = proc_counters(rank.pid)
    for child in children:
        c_cpu, c_io = proc_counters(child)
        cpu += max(c_cpu, 0) if cpu >= 0 else 0
        io += max(c_io, 0) if io >= 0 else 0
    wchan = (read_text(PROC / str(rank.pid) / "wchan") or "").strip()
    return Sample(at=at, cpu_ticks=cpu, io=io, wakeups=wakeups(rank.pid), state=fields[0], wchan=wchan)


def stack_view(text: str, rules: list[Rule]) -> StackView | None:
    """A py-spy dump of one process, as the progress model needs it."""
    found = pyspy.events("dump", text, rules)
    if not found:
        return None
    event = found[0]
    frames = [line.partition("\t")[2] for line in event.fields.get("stack", "").splitlines()]
    signature = tuple(_LINE_NUMBER.sub(")", f) for f in frames)
    return StackView(state=event.fields.get("stack_state", "unknown"), call=event.fields.get("stack_call", ""),
                     signature=signature, where=frames[0] if frames else "")


def dump(spy: str, pid: int, native: bool = False, timeout: float = SAMPLE_TIMEOUT_S,
         nonblocking: bool = True) -> tuple[str, str]:
    """(py-spy's dump, why there is none). A sample never pauses the rank (a pause is activity);
    the snapshot's dump, taken once the hang is seen, may (it reads a consistent stack)."""
    command = [spy, "dump", *(["--nonblocking"] if nonblocking else []), "--pid", str(pid)] + (
        ["--native"] if native else [])
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return "", f"py-spy took longer than {timeout:.0f} s"
    except OSError as exc:
        return "", f"py-spy could not run: {exc.strerror or exc}"
    out = done.stdout.decode("utf-8", "replace")
    if done.returncode != 0 or "\nThread " not in out:
        said = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()
        first = next((line for line in said if line.strip()), f"exit code {done.returncode}")
        why = f"py-spy could not read pid {pid}: {first[:200]}"
        if "ermission" in first or "ptrace" in first.lower():
            why += " (ptrace not permitted: run as the job's user with CAP_SYS_PTRACE, or kernel.yama.ptrace_scope=0)"
        return "", why
    return out, ""


def refused(why: str) -> bool:
    """A py-spy failure that will not go away by itself (no ptrace, no permission, no py-spy), as
    opposed to one of a process that is starting, ending or slow to read, which the next sample retries."""
    return "ptrace" in why or "ermission" in why or "could not run" in why


def stack_samples(spy: str, ranks: list[RankProc], rules: list[Rule]) -> tuple[dict[int, StackView], list[str]]:
    """Every rank's stack at once (by pid), and why some could not be taken."""
    views: dict[int, StackView] = {}
    problems: list[str] = []
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(ranks)))) as pool:
        results = list(pool.map(lambda r: (r, dump(spy, r.pid)), ranks))
    for rank, (text, why) in results:
        view = stack_view(text, rules) if text else None
        if view is not None:
            views[rank.pid] = view
        else:
            problems.append(why or f"rank {rank.rank}: no Python stack in py-spy's dump")
    return views, problems


def output_visibility(root: int) -> list[str]:
    """Where an attached job's stdout and stderr go, when watch cannot follow them (a pipe, a tty)."""
    blind = []
    for fd, name in ((1, "stdout"), (2, "stderr")):
        try:
            target = Path(f"/proc/{root}/fd/{fd}").readlink()
        except OSError as exc:
            blind.append(f"its {name} cannot be read: {exc.strerror or exc}")
            continue
        if not target.is_file():
            what = "a pipe" if str(target).startswith("pipe:") else \
                "a socket" if str(target).startswith("socket:") else f"{target}, not a file"
            blind.append(f"its {name} is {what}")
    return blind
