"""The job's processes, read from /proc: the tree under a root, which of them are ranks, and what
state each is in (docs/watch.md, "How ranks are found").

A rank is the topmost process of a subtree whose environment names its rank (`RANK`, set by
torchrun and most launchers; `SLURM_PROCID`, `OMPI_COMM_WORLD_RANK`, `PMI_RANK` otherwise): its
children (data-loader workers, compile workers) inherit the variable but are not ranks themselves.
Nothing here writes to a process or signals one; a process that ends while it is read is skipped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")
# The variables that name a process's rank, the first one present winning.
_RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
_LOCAL_VARS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")
_WORLD_VARS = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")
# The variables a snapshot reads from a rank's environment (the flight recorder's settings).
_KEPT_VARS = ("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
              "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE", "NCCL_RAS_ADDR",
              "NCCL_RAS_ENABLE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID")
_MAX_ENVIRON = 1 << 20


@dataclass
class RankProc:
    """One rank process on this host."""

    pid: int
    rank: int
    local_rank: int | None = None
    world_size: int | None = None
    cmdline: str = ""
    start_ticks: int = 0  # its start time (clock ticks after boot): a reused pid is another process
    env: dict[str, str] = field(default_factory=dict)  # the variables of _KEPT_VARS it has


@dataclass
class ProcState:
    """What /proc says of one process at one moment."""

    state: str = "?"  # R, S, D, T, Z … with its word
    wchan: str = ""
    threads: list[tuple[int, str, str, str]] = field(default_factory=list)  # tid, name, state, wchan
    cpu_ticks: int = 0  # user + system time, in clock ticks
    rss_kb: int = 0
    syscall: str = ""  # the system call its main thread is in (`73 (flock)`), "running", or ""


def read_text(path: Path, limit: int = 1 << 16) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name (whose parentheses may hold anything)."""
    text = read_text(PROC / str(pid) / "stat")
    if not text or ")" not in text:
        return None
    return text[text.rindex(")") + 2:].split()


def parent_of(pid: int) -> int | None:
    fields = stat_fields(pid)
    return int(fields[1]) if fields and len(fields) > 1 else None


def start_ticks(pid: int) -> int:
    fields = stat_fields(pid)
    return int(fields[19]) if fields and len(fields) > 19 else 0


def alive(pid: int, ticks: int | None = None) -> bool:
    """The process exists and is not a zombie (and is the one that started at `ticks`)."""
    fields = stat_fields(pid)
    if not fields or fields[0] in ("Z", "X"):
        return False
    return ticks is None or not ticks or (len(fields) > 19 and int(fields[19]) == ticks)


def children_map() -> dict[int, list[int]]:
    """Every live process's children, by parent pid: /proc read once (a scan reuses it)."""
    children: dict[int, list[int]] = {}
    try:
        entries = [p.name for p in PROC.iterdir()]
    except OSError:
        return children
    for entry in entries:
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if fields and len(fields) > 1 and fields[0] not in ("Z", "X"):
                children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(root: int, children: dict[int, list[int]] | None = None) -> list[int]:
    """Every live process under `root` (itself included), parents before children; never watch
    itself or its ancestors (attached with --pid 1 in a shared namespace, watch is in the tree).

    Under `--pid 1`, processes whose parent is outside the PID namespace (parent 0: the other
    containers' processes in a pod that shares its namespace) count as PID 1's children."""
    if children is None:
        children = children_map()
    mine = self_and_ancestors()
    found, seen, todo = [], set(), [root]
    while todo:
        pid = todo.pop(0)
        if pid in seen:
            continue
        seen.add(pid)
        found.append(pid)
        below = children.get(pid, []) + ([c for c in children.get(0, []) if c != 1] if pid == 1 == root else [])
        todo.extend(sorted(c for c in below if c not in mine))
    return [p for p in found if p != root or alive(p)]


def self_and_ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid and pid not in pids:
        pids.add(pid)
        pid = parent_of(pid) or 0
    return pids


def environ(pid: int) -> dict[str, str] | None:
    """A process's environment; None when it cannot be read (gone, or not ours to read)."""
    try:
        with open(PROC / str(pid) / "environ", "rb") as handle:
            raw = handle.read(_MAX_ENVIRON)
    except OSError:
        return None
    env = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def _int(env: dict[str, str], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = env.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


def find_ranks(root: int, children: dict[int, list[int]] | None = None) -> tuple[list[RankProc], list[str]]:
    """The rank processes under `root` (the root itself may be one), and what could not be read."""
    ranks: list[RankProc] = []
    problems: list[str] = []
    rank_pids: set[int] = set()
    for pid in descendants(root, children):
        env = environ(pid)
        if env is None:
            problems.append(f"pid {pid}: its environment cannot be read")
            continue
        rank = _int(env, _RANK_VARS)
        if rank is None:
            continue
        parent = parent_of(pid)
        if parent in rank_pids:  # a rank's own child (a data-loader worker) inherits RANK
            rank_pids.add(pid)
            continue
        rank_pids.add(pid)
        cmd = (read_text(PROC / str(pid) / "cmdline") or "").replace("\0", " ").strip()
        ranks.append(RankProc(pid=pid, rank=rank, local_rank=_int(env, _LOCAL_VARS),
                              world_size=_int(env, _WORLD_VARS), cmdline=cmd[:400],
                              start_ticks=start_ticks(pid),
                              env={k: env[k] for k in _KEPT_VARS if k in env}))
    return sorted(ranks, key=lambda r: (r.rank, r.pid)), problems


_STATES = {"R": "running", "S": "sleeping", "D": "disk sleep", "T": "stopped", "t": "tracing stop",
           "Z": "zombie", "X": "dead", "I": "idle"}


def state_of(pid: int) -> ProcState | None:
    """State, wait channel, threads, CPU time and memory of a process; None when it is gone."""
    fields = stat_fields(pid)
    if not fields:
        return None
    state = ProcState(state=f"{fields[0]} ({_STATES.get(fields[0], '?')})")
    state.wchan = (read_text(PROC / str(pid) / "wchan") or "").strip()
    state.syscall = syscall_of(pid)
    if len(fields) > 22:
        state.cpu_ticks = int(fields[11]) + int(fields[12])
        state.rss_kb = int(fields[21]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    try:
        tids = sorted(int(t.name) for t in (PROC / str(pid) / "task").iterdir() if t.name.isdigit())
    except OSError:
        tids = []
    for tid in tids[:512]:
        task = PROC / str(pid) / "task" / str(tid)
        name = (read_text(task / "comm") or "").strip()
        tfields = (read_text(task / "stat") or "").rpartition(")")[2].split()
        wchan = (read_text(task / "wchan") or "").strip()
        state.threads.append((tid, name, tfields[0] if tfields else "?", wchan))
    return state


# The system calls a blocked rank is most often found in, by number (x86_64, then aarch64): the
# kernel gives only the number; the name makes it evidence a reader can use.
_SYSCALLS = {
    "x86_64": {0: "read", 1: "write", 7: "poll", 23: "select", 35: "nanosleep", 34: "pause", 45: "recvfrom",
               47: "recvmsg", 61: "wait4", 72: "fcntl", 73: "flock", 74: "fsync", 75: "fdatasync",
               202: "futex", 230: "clock_nanosleep", 232: "epoll_wait", 271: "ppoll", 281: "epoll_pwait"},
    "aarch64": {63: "read", 64: "write", 73: "ppoll", 32: "flock", 25: "fcntl", 82: "fsync", 83: "fdatasync",
                98: "futex", 101: "nanosleep", 115: "clock_nanosleep", 207: "recvfrom", 212: "recvmsg",
                22: "epoll_pwait", 260: "wait4"},
}


def syscall_of(pid: int) -> str:
    """The system call the process's main thread is blocked in, named where known."""
    text = (read_text(PROC / str(pid) / "syscall") or "").split()
    if not text:
        return ""
    if not text[0].lstrip("-").isdigit():
        return text[0]  # "running"
    number = int(text[0])
    if number < 0:
        return ""
    name = _SYSCALLS.get(os.uname().machine, {}).get(number)
    return f"{number} ({name})" if name else str(number)


def cpu_ticks(pid: int) -> int:
    fields = stat_fields(pid)
    return int(fields[11]) + int(fields[12]) if fields and len(fields) > 12 else 0


def render_state(rank: RankProc, state: ProcState | None, host: str) -> str:
    """The /proc picture of a rank as the snapshot keeps it (rules/stack reads its lines)."""
    head = (f"triage watch: rank {rank.rank} local_rank {rank.local_rank if rank.local_rank is not None else '?'} "
            f"world_size {rank.world_size if rank.world_size is not None else '?'} pid {rank.pid} host {host}")
    if state is None:
        return head + "\nprocess gone before it could be read\n"
    lines = [head, f"cmdline: {rank.cmdline}", f"State: {state.state}",
             f"wchan: {state.wchan or '-'}", f"syscall: {state.syscall or '-'}", f"cpu_ticks: {state.cpu_ticks}", f"rss_kb: {state.rss_kb}",
             f"Threads: {len(state.threads)}"]
    lines += [f"  thread {tid} {name!r} state {st} wchan {wc or '-'}" for tid, name, st, wc in state.threads]
    return "\n".join(lines) + "\n"
