"""Running `triage repro` for real in tests, and finding any process it left behind."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triage.repro.supervise import STARTUP_S


def full_matrix(config: Any) -> bool:
    """Whether the whole multi-process matrices run (`--full-matrix`, or TRIAGE_FULL_MATRIX=1), not
    their representative slice."""
    return bool(config.getoption("full_matrix") or os.environ.get("TRIAGE_FULL_MATRIX", "") not in ("", "0"))


MARK = "TRIAGE_REPRO_TEST_MARK"  # set on the command; every rank inherits it
ROOT = Path(__file__).resolve().parents[1]
# Small and quick: two sizes, two timed iterations; deadlines of a few seconds.
FAST = ["--backend", "gloo", "--world-size", "4", "--sizes", "1K,64K", "--iters", "2"]


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    elapsed: float
    log_dir: Path
    leftovers: list[int]

    @property
    def report(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.stdout)
        return data

    @property
    def verdict(self) -> dict[str, Any]:
        verdict: dict[str, Any] = self.report["verdict"]
        return verdict

    def culprit_ranks(self) -> list[int]:
        return sorted({c["rank"] for c in self.verdict["culprits"] if c.get("rank") is not None})

    def log(self, name: str) -> str:
        return (self.log_dir / name).read_text(errors="replace")


def marked_processes(mark: str) -> list[int]:
    """Processes whose environment carries our mark (a /proc scan: no psutil needed)."""
    found = []
    needle = f"{MARK}={mark}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def run(command: list[str], log_dir: Path | None, *, timeout: float = 120,
        env: dict[str, str] | None = None) -> Run:
    mark = uuid.uuid4().hex
    env = dict(os.environ, **{MARK: mark, "CI": "1", "PYTHONUNBUFFERED": "1"}, **(env or {}))
    started = time.monotonic()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False, cwd=ROOT)
    elapsed = time.monotonic() - started
    return Run(proc.returncode, proc.stdout, proc.stderr, elapsed, log_dir or Path(),
               marked_processes(mark))


def start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], str, Path]:
    """A repro run in the background, once all its ranks have entered comm_init.

    The run takes Ctrl-C as a terminal sends it (SIGINT, handled by Python's default handler) even
    where the tests themselves run with SIGINT ignored: a background job of a non-interactive shell
    inherits SIG_IGN, and a Python started with SIGINT ignored keeps ignoring it.
    """
    mark = uuid.uuid4().hex
    log_dir = tmp_path / "logs"
    env = dict(os.environ, **{MARK: mark, "CI": "1"})
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "sys.argv[0] = 'triage'; from triage.cli import main; main()")
    proc = subprocess.Popen([sys.executable, "-c", code, "repro", *FAST, "--log-dir", str(log_dir), *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    # Ready is a condition, not a time: wait as long as the coordinator itself gives a rank to
    # start (STARTUP_S), or until the run ends without getting there.
    until = time.monotonic() + STARTUP_S + 10
    while time.monotonic() < until and proc.poll() is None:
        logs = list(log_dir.glob("rank*.log"))
        if len(logs) == 4 and all("phase comm_init start" in p.read_text(errors="replace") for p in logs):
            return proc, mark, log_dir
        time.sleep(0.1)
    proc.kill()
    out, err = proc.communicate()
    raise AssertionError(f"the ranks did not all enter comm_init (exit code {proc.returncode}):\n{out}{err}")


def wait_gone(mark: str, within: float) -> list[int]:
    """The marked processes still alive after `within` seconds (polling)."""
    until = time.monotonic() + within
    while (left := marked_processes(mark)) and time.monotonic() < until:
        time.sleep(0.05)
    return left


def repro(tmp_path: Path, *args: str, fmt: str = "json", env: dict[str, str] | None = None) -> Run:
    log_dir = tmp_path / "logs"
    command = [sys.executable, "-m", "triage", "repro", *FAST, "--log-dir", str(log_dir),
               "--format", fmt, *args]
    return run(command, log_dir, env=env)


@dataclass
class Job:
    """A `triage repro` job under real torchrun: one or more agents, as on one or more nodes."""

    code: int  # the worst exit code of the agents (torchrun exits 1 when any rank did)
    console: str  # what agent 0 (rank 0's node) printed, stdout and stderr
    consoles: list[str]
    elapsed: float
    cwd: list[Path]  # each agent's current directory (its node's default log folder goes there)
    leftovers: list[int]

    @property
    def report_path(self) -> Path:
        match = re.search(r"^report: (\S+)$", self.console, re.M)
        assert match, f"no report path printed:\n{self.console}"
        return self.cwd[0] / match[1]

    @property
    def verdict(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.report_path.with_name("triage-report.json").read_text())
        verdict: dict[str, Any] = data["verdict"]
        return verdict

    def culprit_ranks(self) -> list[int]:
        return sorted({c["rank"] for c in self.verdict["culprits"] if c.get("rank") is not None})


def torchrun_job(tmp_path: Path, agents: int, nproc: int, *args: str, timeout: float = 180,
                 port: int | None = None) -> Job:
    """Run `triage repro` under `agents` torchrun agents of `nproc` ranks each; no --log-dir.

    Several agents meet at a port we choose (`port`, else `free_port()`), and a port free when we
    looked can be taken before agent 0 binds it (seconds later, on a loaded host). Agent 0 then
    fails at once (EADDRINUSE) and the others wait out torchrun's static rendezvous (900 s,
    retrying the dead address): no job ran at all. That is the test's port, not what is under
    test, so such a start is retried on another port.
    """
    for _ in range(3):
        job = _torchrun_once(tmp_path, agents, nproc, args, timeout, port or free_port())
        if job is not None:
            return job
        port = None
    raise AssertionError("torchrun's agent 0 could not listen on a free port, three times over")


def _torchrun_once(tmp_path: Path, agents: int, nproc: int, args: tuple[str, ...], timeout: float,
                   port: int) -> Job | None:
    """One start of the job; None when agent 0 could not host the rendezvous on `port`."""
    mark = uuid.uuid4().hex
    env = dict(os.environ, **{MARK: mark, "CI": "1", "PYTHONUNBUFFERED": "1"})
    cwds = []
    procs = []
    started = time.monotonic()
    for node in range(agents):
        cwd = tmp_path / f"node{node}"
        cwd.mkdir()
        cwds.append(cwd)
        rendezvous = (["--standalone"] if agents == 1 else
                      ["--nnodes", str(agents), "--node-rank", str(node), "--master-addr", "127.0.0.1",
                       "--master-port", str(port)])
        command = [sys.executable, "-m", "torch.distributed.run", *rendezvous, "--nproc-per-node", str(nproc),
                   "-m", "triage", "repro", "--backend", "gloo", "--sizes", "1K,64K", "--iters", "2", *args]
        procs.append(subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outputs = []
    for proc in procs:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise
        outputs.append(out)
        if agents > 1 and proc is procs[0] and _could_not_host(out, port):
            for p in procs[1:]:  # still in the rendezvous: no rank was started
                p.kill()
                p.communicate()
            for pid in marked_processes(mark):  # (none expected; a stray would spoil the next start)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            for cwd in cwds:
                shutil.rmtree(cwd)
            return None
    elapsed = time.monotonic() - started
    codes = [p.returncode for p in procs]
    return Job(max(codes, key=abs), outputs[0], outputs, elapsed, cwds, wait_gone(mark, within=30.0))


def _could_not_host(console: str, port: int) -> bool:
    """Whether torchrun's agent 0 failed to host its rendezvous store on `port` (c10d's words)."""
    return bool(re.search(rf"failed to listen on any local network address\. port: {port}\b.*EADDRINUSE",
                          console))


def free_port() -> int:
    """A TCP port free now, for a rendezvous that a process started later will host.

    Taken below the kernel's ephemeral range where there is room: a port from bind(0) lies in that
    range, which every process on the host draws from for its own bind(0) (gloo's listeners, other
    jobs' stores, other test runs) and connect(), so it may be taken again before the host binds
    it; below the range only a process that names the port itself can take it.
    """
    low = _ephemeral_low()
    if low - 10_000 >= 1024:
        pick = random.SystemRandom()
        for _ in range(50):
            port = pick.randrange(low - 10_000, low)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind(("0.0.0.0", port))  # noqa: S104 - as the store binds it
                except OSError:
                    continue
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        found: int = sock.getsockname()[1]
        return found


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default
