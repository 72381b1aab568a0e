"""`triage ras collect` against a real TCP listener that speaks NCCL's RAS client protocol.

The listener answers as rasClientEventLoop does (NCCL src/ras/client_support.cc:343-456): one reply
per command line ('\\r' dropped, commands matched without case), "ERROR: Unknown command <cmd>" for
what it does not know, and after STATUS the report, then it closes the connection. The reports are
replayed from tests/fixtures/ras-recorded/.
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from triage import exitcodes
from triage.ras.collect import CollectResult, Event, collect

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "fixtures" / "ras-recorded"
HEALTHY = (RECORDED / "healthy-2node-nccl2.27.7.txt").read_bytes()
DEAD = (RECORDED / "dead-incomplete-2node-nccl2.28.9.txt").read_bytes()
VERBOSE = (RECORDED / "hang-mismatch-verbose-nccl2.28.9.txt").read_bytes()
JSON = (RECORDED / "json-missing-rank-nccl2.28.9.json").read_bytes()
# RAS sends the header and job summary at once, the rest after gathering the communicators' state
GATHERING = b"\nCommunicators..."
HEAD = DEAD.partition(GATHERING)[0] + GATHERING  # what a report cut while gathering holds
NAME = re.compile(r"ras-\d{8}T\d{6}\.\d{6}Z\.(txt|json|partial\.txt)")
SHORT = 0.2  # seconds of silence after which a test's RAS counts as silent


@dataclass
class Answer:
    """How the fake RAS treats one connection."""

    handshake: str = "ok"  # "ok", "silent" (reads, never answers) or "junk" (not RAS)
    upto: bytes = b""  # send the report only up to and including these bytes
    then: str = "close"  # after the report: "close", or "stall" (keep the connection open, silent)


@dataclass
class FakeRas:
    reports: dict[str, bytes]  # "text", "verbose", "json": what STATUS / VERBOSE STATUS answer
    answers: list[Answer] = field(default_factory=lambda: [Answer()])  # per connection; the last repeats
    knows_set_format: bool = True  # NCCL >= 2.28.7
    protocol: int = 2
    sessions: list[list[str]] = field(default_factory=list)  # the commands of each connection
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def close(self) -> None:
        self.stop.set()
        self.listener.close()
        for thread in self.threads:
            thread.join(timeout=5)

    def _accept(self) -> None:
        self.listener.settimeout(0.02)  # a closed listener does not wake a blocked accept()
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            index = len(self.sessions)
            self.sessions.append([])
            answer = self.answers[min(index, len(self.answers) - 1)]
            thread = threading.Thread(target=self._serve, args=(conn, self.sessions[index], answer), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket, commands: list[str], answer: Answer) -> None:
        with conn:
            fmt, buffer = "text", b""
            while True:
                while b"\n" not in buffer:
                    chunk = self._recv(conn)
                    if not chunk:
                        return
                    buffer += chunk
                raw, _, buffer = buffer.partition(b"\n")
                cmd = raw.rstrip(b"\r").decode()
                commands.append(cmd)
                if answer.handshake == "silent":
                    continue
                if answer.handshake == "junk":
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n")
                    continue
                low = cmd.lower()
                if low.startswith("client protocol "):
                    conn.sendall(f"SERVER PROTOCOL {self.protocol}\n".encode())
                elif low.startswith("timeout "):
                    conn.sendall(b"OK\n" if cmd[8:].isdigit() else f"ERROR: Invalid timeout value {cmd[8:]}\n".encode())
                elif low.startswith("set format ") and self.knows_set_format:
                    fmt = low[len("set format "):]
                    conn.sendall(b"OK\n")
                elif low in ("status", "verbose status"):
                    break
                else:
                    conn.sendall(f"ERROR: Unknown command {cmd}\n".encode())
            report = self.reports["json" if fmt == "json" else "verbose" if low == "verbose status" else "text"]
            if answer.upto:
                report = report[: report.index(answer.upto) + len(answer.upto)]
            head, mark, rest = report.partition(GATHERING)
            conn.sendall(head + mark)
            conn.sendall(rest)
            if answer.then == "stall":
                self.stop.wait()

    def _recv(self, conn: socket.socket) -> bytes:
        """The next bytes from the client; b"" once it closed, or when the test ends."""
        while not self.stop.is_set():
            if select.select([conn], [], [], 0.02)[0]:
                try:
                    return conn.recv(4096)
                except OSError:
                    return b""
        return b""


@pytest.fixture
def make_ras() -> Iterator[Callable[..., FakeRas]]:
    made: list[FakeRas] = []

    def make(*args: Any, **kwargs: Any) -> FakeRas:
        made.append(FakeRas(*args, **kwargs))
        return made[-1]

    yield make
    for ras in made:
        ras.close()


def clock(start: datetime = datetime(2026, 11, 5, 14, 22, 31, 48213, tzinfo=timezone.utc)) -> Callable[[], datetime]:
    """A `now` that moves on one second per call, for file names known in advance."""
    ticks = iter(range(10**6))
    return lambda: start + timedelta(seconds=next(ticks))


def wait_for_partial(folder: Path, size: int, saved: int = 0) -> bool:
    """Until `saved` snapshots are in `folder` and the report being received has `size` bytes."""
    give_up = time.monotonic() + 30  # a guard against a hung test, not a measure
    while time.monotonic() < give_up:
        names = [p for p in folder.iterdir() if NAME.fullmatch(p.name)]
        if len(names) >= saved and any(p.suffix == ".tmp" and size_of(p) == size for p in folder.iterdir()):
            return True
        time.sleep(0.005)
    return False


def size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:  # a temporary file just renamed
        return -1


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def run(ras: FakeRas, out: Path, **options: Any) -> tuple[CollectResult, list[Event]]:
    events: list[Event] = []
    result = collect("127.0.0.1", ras.port, out_dir=out, on_event=events.append, **options)
    return result, events


# --- whole snapshots ----------------------------------------------------------------------------

def test_several_snapshots_every_interval_each_a_fresh_connection(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({"text": HEALTHY})
    out = tmp_path / "new" / "snapshots"  # created, parents too
    began = time.monotonic()
    result, events = run(ras, out, count=3, every_s=0.05, now=clock())
    took = time.monotonic() - began
    assert result.exit_code == exitcodes.NO_FAILURE and not result.error
    assert files(out) == ["ras-20261105T142231.048213Z.txt", "ras-20261105T142232.048213Z.txt",
                          "ras-20261105T142233.048213Z.txt"]
    assert all((out / name).read_bytes() == HEALTHY for name in files(out))
    # no TIMEOUT unless asked (RAS keeps its own default), no SET FORMAT for text: as ncclras
    assert ras.sessions == [["CLIENT PROTOCOL 2", "STATUS"]] * 3
    assert took >= 2 * 0.05  # three starts, 0.05 s apart
    assert [e.kind for e in events] == ["saved"] * 3
    assert result.summary() == f"3 snapshots saved in {out}"


def test_timeout_is_sent_in_whole_seconds(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({"text": DEAD})
    result, _ = run(ras, tmp_path, timeout_s=2.5, grace_s=0.0)
    assert ras.sessions == [["CLIENT PROTOCOL 2", "TIMEOUT 3", "STATUS"]]
    assert [s.path.read_bytes() for s in result.snapshots] == [DEAD]


def test_verbose_status(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({"text": HEALTHY, "verbose": VERBOSE})
    result, _ = run(ras, tmp_path, verbose=True)
    assert ras.sessions[0][-1] == "VERBOSE STATUS"
    (snap,) = result.snapshots
    assert snap.path.read_bytes() == VERBOSE and snap.path.suffix == ".txt" and not snap.partial


def test_json_when_ras_accepts_set_format(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({"text": HEALTHY, "json": JSON})
    result, events = run(ras, tmp_path, fmt="json", count=2, now=clock())
    assert ras.sessions == [["CLIENT PROTOCOL 2", "SET FORMAT json", "STATUS"]] * 2
    assert files(tmp_path) == ["ras-20261105T142231.048213Z.json", "ras-20261105T142232.048213Z.json"]
    # saved as sent: NCCL 2.28.9's JSON lacks a comma; whole all the same (it ends with its footer)
    assert all(s.path.read_bytes() == JSON and s.fmt == "json" and not s.partial for s in result.snapshots)
    assert not [e for e in events if e.kind != "saved"]


def test_old_ras_without_set_format_falls_back_to_text_and_says_so_once(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({"text": HEALTHY}, knows_set_format=False)
    result, events = run(ras, tmp_path, fmt="json", count=2)
    assert ras.sessions[0] == ["CLIENT PROTOCOL 2", "SET FORMAT json", "STATUS"]
    assert ras.sessions[1] == ["CLIENT PROTOCOL 2", "STATUS"]  # not asked twice
    assert [s.fmt for s in result.snapshots] == ["text", "text"]
    assert all(s.path.suffix == ".txt" and s.path.read_bytes() == HEALTHY for s in result.snapshots)
    (note,) = [e for e in events if e.kind == "note"]
    assert "ERROR: Unknown command SET FORMAT json" in note.message and "text" in note.message
    assert result.exit_code == exitcodes.NO_FAILURE


def test_another_protocol_version_is_a_note_not_an_error(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({"text": HEALTHY}, protocol=3)
    result, events = run(ras, tmp_path)
    assert [s.path.read_bytes() for s in result.snapshots] == [HEALTHY]
    assert [e.kind for e in events] == ["note", "saved"] and "protocol 3" in events[0].message


def test_never_overwrites_a_file(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    taken = tmp_path / "ras-20261105T142231.048213Z.txt"
    taken.write_bytes(b"an earlier snapshot")
    result, _ = run(make_ras({"text": HEALTHY}), tmp_path, now=clock())
    assert taken.read_bytes() == b"an earlier snapshot"
    assert result.snapshots[0].path.name == "ras-20261105T142231.048214Z.txt"  # the next microsecond
    assert result.snapshots[0].path.read_bytes() == HEALTHY


# --- answers cut short --------------------------------------------------------------------------

def test_silent_mid_report_is_kept_partial_and_the_next_snapshot_is_taken(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({"text": DEAD}, answers=[Answer(upto=GATHERING, then="stall"), Answer()])
    result, events = run(ras, tmp_path, count=2, timeout_s=SHORT, grace_s=0.0, now=clock())
    assert files(tmp_path) == ["ras-20261105T142231.048213Z.partial.txt", "ras-20261105T142232.048213Z.txt"]
    first, second = result.snapshots
    assert first.path.read_bytes() == HEAD
    assert first.partial and "sent nothing" in first.reason
    assert second.path.read_bytes() == DEAD and not second.partial
    assert [e.kind for e in events] == ["partial", "saved"]
    assert result.exit_code == exitcodes.NO_FAILURE
    assert result.summary() == f"2 snapshots saved in {tmp_path} (1 partial)"


def test_connection_closed_mid_report_is_kept_partial(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({"text": VERBOSE}, answers=[Answer(upto=GATHERING)])
    result, _ = run(ras, tmp_path)
    (snap,) = result.snapshots
    assert snap.path.name.endswith("Z.partial.txt")
    assert snap.path.read_bytes() == VERBOSE.partition(GATHERING)[0] + GATHERING
    assert "closed the connection before the end of the report" in snap.reason


def test_json_cut_short_is_partial(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    upto = b'      "missing_ranks": [\n'  # closed before the footer
    ras = make_ras({"text": HEALTHY, "json": JSON}, answers=[Answer(upto=upto)])
    result, _ = run(ras, tmp_path, fmt="json")
    (snap,) = result.snapshots
    assert snap.partial and snap.fmt == "json" and snap.path.name.endswith(".partial.txt")
    assert snap.path.read_bytes() == JSON.partition(upto)[0] + upto


# --- RAS unreachable, or not RAS ----------------------------------------------------------------

def test_connection_refused_names_the_address_and_the_nccl_settings(tmp_path: Path) -> None:
    with socket.socket() as bound:  # bound, not listening: connecting is refused
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        result = collect("127.0.0.1", port, out_dir=tmp_path / "out", timeout_s=SHORT)
    assert result.exit_code == exitcodes.USAGE_OR_INPUT_ERROR
    assert f"127.0.0.1:{port}" in result.error and "refused" in result.error
    assert "NCCL_RAS_ADDR" in result.error and "NCCL_RAS_ENABLE" in result.error
    assert files(tmp_path / "out") == []


def test_listener_that_never_answers_the_handshake(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({}, answers=[Answer(handshake="silent")])
    result, events = run(ras, tmp_path, count=3, timeout_s=SHORT)
    assert result.exit_code == exitcodes.USAGE_OR_INPUT_ERROR
    assert f"127.0.0.1:{ras.port}" in result.error and "did not answer the RAS handshake" in result.error
    assert ras.sessions == [["CLIENT PROTOCOL 2"]]  # the run stopped there
    assert files(tmp_path) == [] and events == []


def test_listener_that_is_not_ras(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({}, answers=[Answer(handshake="junk")])
    result, _ = run(ras, tmp_path)
    assert "HTTP/1.1 400 Bad Request" in result.error and "SERVER PROTOCOL" in result.error
    assert files(tmp_path) == []


def test_ras_gone_after_the_first_snapshot_keeps_it(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({"text": HEALTHY})

    def end_the_job(event: Event) -> None:
        ras.close()

    result = collect("127.0.0.1", ras.port, out_dir=tmp_path, count=3, timeout_s=SHORT, on_event=end_the_job)
    assert len(result.snapshots) == 1 and "refused" in result.error
    assert result.summary() == f"1 of 3 snapshots saved in {tmp_path}"
    assert result.exit_code == exitcodes.USAGE_OR_INPUT_ERROR


def test_out_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    result = collect("127.0.0.1", 1, out_dir=tmp_path / "f")
    assert "not a folder" in result.error and result.exit_code == exitcodes.USAGE_OR_INPUT_ERROR


# --- Ctrl-C ---------------------------------------------------------------------------------------

def test_ctrl_c_between_snapshots_keeps_what_was_saved(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({"text": HEALTHY})

    def press_ctrl_c(event: Event) -> None:
        raise KeyboardInterrupt

    result = collect("127.0.0.1", ras.port, out_dir=tmp_path, count=3, every_s=0.05, on_event=press_ctrl_c)
    assert result.exit_code == 130 and not result.error
    assert [s.path.read_bytes() for s in result.snapshots] == [HEALTHY]
    assert result.summary() == f"interrupted; 1 of 3 snapshots saved in {tmp_path}"


def test_ctrl_c_mid_report_keeps_it_partial(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    ras = make_ras({"text": DEAD}, answers=[Answer(upto=GATHERING, then="stall")])
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        def press_ctrl_c() -> None:
            wait_for_partial(tmp_path, len(HEAD))  # the first part is in (if not, fail, not hang)
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=press_ctrl_c, daemon=True).start()
        result = collect("127.0.0.1", ras.port, out_dir=tmp_path, timeout_s=0)  # 0: no limit, wait
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.stopped_by == signal.SIGINT and result.exit_code == 130
    (snap,) = result.snapshots
    assert snap.path.read_bytes() == HEAD
    assert snap.reason.startswith("interrupted") and files(tmp_path) == [snap.path.name]  # no temp file


# --- the command line ---------------------------------------------------------------------------

def triage(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "triage", *map(str, args)], capture_output=True, text=True,
                          timeout=60, check=False)


def assert_no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stdout + result.stderr


def test_cli_saves_and_prints_each_path(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({"text": HEALTHY, "json": JSON})
    out = tmp_path / "ras"
    result = triage("ras", "collect", "--host", "127.0.0.1", "--port", ras.port, "--count", 2,
                    "--every", 0.05, "--format", "json", "--out", out)
    assert result.returncode == exitcodes.NO_FAILURE, result.stderr
    assert_no_traceback(result)
    printed = result.stdout.split()
    assert len(printed) == 2 and all(NAME.fullmatch(Path(p).name) for p in printed)
    assert sorted(Path(p).name for p in printed) == files(out)
    assert all(Path(p).read_bytes() == JSON for p in printed)
    assert f"2 snapshots saved in {out}" in result.stderr


def test_cli_connection_refused_exits_2(tmp_path: Path) -> None:
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        result = triage("ras", "collect", "--host", "127.0.0.1", "--port", port, "--out", tmp_path)
    assert result.returncode == exitcodes.USAGE_OR_INPUT_ERROR
    assert_no_traceback(result)
    assert result.stderr.startswith("triage: error: ") and f"127.0.0.1:{port}" in result.stderr
    assert "NCCL_RAS_ADDR" in result.stderr


def test_cli_silent_listener_exits_2_after_the_timeout(make_ras: Callable[..., FakeRas], tmp_path: Path) -> None:
    ras = make_ras({}, answers=[Answer(handshake="silent")])
    result = triage("ras", "collect", "--host", "127.0.0.1", "--port", ras.port, "--timeout", SHORT,
                    "--out", tmp_path)
    assert result.returncode == exitcodes.USAGE_OR_INPUT_ERROR
    assert_no_traceback(result)
    assert "did not answer the RAS handshake within 0.2 s" in result.stderr


@pytest.mark.parametrize("option", [["--format", "xml"], ["--count", "0"]])
def test_cli_bad_options_exit_2(option: list[str], tmp_path: Path) -> None:
    result = triage("ras", "collect", "--out", tmp_path, *option)
    assert result.returncode == exitcodes.USAGE_OR_INPUT_ERROR
    assert_no_traceback(result)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_cli_interrupted_mid_report_keeps_the_partial(make_ras: Callable[..., FakeRas], tmp_path: Path,
                                                      signum: int, code: int) -> None:
    ras = make_ras({"text": DEAD}, answers=[Answer(), Answer(upto=GATHERING, then="stall")])
    # SIGINT as a terminal sends it, even where this test runs with SIGINT ignored (a background job)
    child = subprocess.Popen(
        [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "sys.argv[0] = 'triage'; from triage.cli import main; main()",
         "ras", "collect", "--host", "127.0.0.1", "--port", str(ras.port), "--count", "3", "--every", "0",
         "--timeout", "0", "--out", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the first snapshot saved, the second's first part in
        assert wait_for_partial(tmp_path, len(HEAD), saved=1), child.poll()
        child.send_signal(signum)
        stdout, stderr = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == code, stderr
    assert "Traceback" not in stdout + stderr
    assert f"interrupted; 2 of 3 snapshots saved in {tmp_path} (1 partial)" in stderr
    whole, partial = sorted(Path(p) for p in stdout.split())
    assert whole.read_bytes() == DEAD and whole.suffix == ".txt"
    assert partial.name.endswith(".partial.txt")
    assert partial.read_bytes() == HEAD
    assert files(tmp_path) == sorted([whole.name, partial.name])
