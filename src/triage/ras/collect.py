"""`triage ras collect`: time-stamped snapshots of a running (or hanging) job from NCCL's RAS service.

With NCCL ≥ 2.24 every process of a job runs a RAS thread, and one of them per node listens for
clients on NCCL_RAS_ADDR (default localhost:28028). The client protocol is text over TCP, one
command per line, spoken here as NCCL's own client `ncclras` speaks it (src/ras/client.cc; the
server side is rasClientEventLoop in src/ras/client_support.cc):

    CLIENT PROTOCOL 2        ->  SERVER PROTOCOL <n>
    TIMEOUT <secs>           ->  OK                  (sent only when a timeout is given, as ncclras -t)
    SET FORMAT json          ->  OK; NCCL before 2.28.7: "ERROR: Unknown command SET FORMAT json"
    STATUS | VERBOSE STATUS  ->  the report, until RAS closes the connection

Each snapshot is a fresh connection. The report is written as it arrives to a hidden temporary file
in the output folder, then renamed to ras-<UTC time STATUS was sent>Z.txt (.json): what RAS sent
after its handshake replies, byte for byte. A report cut short (RAS closes the connection before the
report's last section, or says nothing for longer than it may take) is kept as
ras-<stamp>Z.partial.txt, and the run goes on. A listener that cannot be reached or does not speak
the protocol stops the run; so do Ctrl-C and SIGTERM. What was saved stays.
"""

from __future__ import annotations

import math
import os
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import FrameType
from typing import Literal

from triage import exitcodes
from triage.ras import DEFAULT_HOST, DEFAULT_PORT

PROTOCOL = 2  # NCCL_RAS_CLIENT_PROTOCOL, ras_internal.h:12
RAS_TIMEOUT_S = 5  # RAS_COLLECTIVE_LEG_TIMEOUT_SEC, ras_internal.h:14: how long RAS waits by default
# What ncclras allows on top of the timeout before it gives up on a report: 1 s (TIMEOUT_INCREMENT,
# client.cc:24) + RAS_COLLECTIVE_EXTRA_TIMEOUT_SEC (5 s, ras_internal.h:15), client.cc:280-282.
GRACE_S = 1.0 + 5.0
FORMATS = ("text", "json")
PREFIX = "ras-"
PARTIAL_SUFFIX = ".partial.txt"
SUFFIXES = {"text": ".txt", "json": ".json"}

# RAS ends a report by closing the connection, so only its content tells a whole report from one cut
# short. A text report always ends with the Warnings section (client_support.cc:1423, the last
# message RAS sends), a JSON one with the "ras" footer (jsonWriteFooter, client_support.cc:2009-2015).
_LAST_SECTION = {"text": b"\nWarnings\n========\n", "json": b'\n  "ras": {\n'}
_LAST_BYTES = {"text": b"\n", "json": b"}\n"}


class CollectError(Exception):
    """The run cannot go on: RAS unreachable, not speaking its protocol, or the folder unusable."""


class Stopped(KeyboardInterrupt):
    """A signal other than SIGINT that stops a collection as Ctrl-C does (see `stop_on_sigterm`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@dataclass(frozen=True)
class Snapshot:
    """One answer of RAS, saved."""

    path: Path
    sent_at: datetime  # when STATUS was sent (UTC); the file name's stamp
    fmt: str  # what RAS answered in: "text", or "json" when it accepted SET FORMAT json
    size: int  # bytes saved
    reason: str = ""  # why the answer is partial; "" when it is whole

    @property
    def partial(self) -> bool:
        return bool(self.reason)


@dataclass(frozen=True)
class Event:
    """What happened, as it happens: a snapshot saved (whole or partial), or a note for the user."""

    kind: Literal["saved", "partial", "note"]
    message: str
    snapshot: Snapshot | None = None


@dataclass
class CollectResult:
    out_dir: Path
    requested: int
    snapshots: list[Snapshot] = field(default_factory=list)
    error: str = ""  # why the run stopped early; "" when it did not
    stopped_by: int = 0  # the signal that stopped the run (SIGINT for Ctrl-C); 0 when none did

    @property
    def exit_code(self) -> int:
        if self.stopped_by:
            return 128 + self.stopped_by  # 130 for Ctrl-C, as `triage repro` and cli.main exit
        return exitcodes.USAGE_OR_INPUT_ERROR if self.error else exitcodes.NO_FAILURE

    def summary(self) -> str:
        saved = len(self.snapshots)
        text = f"{saved} snapshot{'' if saved == 1 else 's'} saved in {self.out_dir}"
        if saved < self.requested:
            text = f"{saved} of {self.requested} snapshots saved in {self.out_dir}"
        if partial := sum(s.partial for s in self.snapshots):
            text += f" ({partial} partial)"
        return f"interrupted; {text}" if self.stopped_by else text


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def collect(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    out_dir: Path,
    count: int = 1,
    every_s: float = 0.0,
    verbose: bool = False,
    fmt: str = "text",
    timeout_s: float | None = None,
    grace_s: float = GRACE_S,
    now: Callable[[], datetime] = utc_now,
    on_event: Callable[[Event], None] | None = None,
) -> CollectResult:
    """Take `count` snapshots, `every_s` seconds apart (start to start), each saved as soon as it ends.

    `timeout_s` is sent to RAS as `TIMEOUT <s>` (rounded up): how long RAS waits for the other
    processes (None: not sent, RAS's default of 5 s holds; 0: no limit). triage waits that long for
    the connection and the handshake, and `timeout_s + grace_s` of silence within a report, before
    it keeps what it got as partial (with 0: no limit on the report). `now` stamps the files.
    Never raises for what RAS does; Ctrl-C (KeyboardInterrupt) ends the run with `stopped_by` set.
    """
    if count < 1 or every_s < 0 or grace_s < 0 or (timeout_s is not None and timeout_s < 0):
        raise ValueError("count must be at least 1; every_s, grace_s and timeout_s at least 0")
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, not {fmt!r}")
    out_dir = Path(out_dir)
    if host.startswith("[") and host.endswith("]"):  # [::1], as NCCL_RAS_ADDR writes IPv6 addresses
        host = host[1:-1]
    result = CollectResult(out_dir, count)
    run = _Run(host, port, out_dir=out_dir, verbose=verbose, fmt=fmt, timeout_s=timeout_s,
               grace_s=grace_s, now=now, emit=on_event or (lambda event: None), result=result)
    try:
        _make_folder(out_dir)
        due = time.monotonic()
        for _ in range(count):
            _sleep_until(due)
            due = time.monotonic() + every_s
            run.snapshot()
    except CollectError as exc:
        result.error = str(exc)
    except KeyboardInterrupt as exc:
        result.stopped_by = exc.signum if isinstance(exc, Stopped) else int(signal.SIGINT)
    except OSError as exc:  # the output folder: a full disk, a permission taken away mid-run
        result.error = f"{exc.filename or out_dir}: {exc.strerror or exc}"
    return result


@contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """While in this block, SIGTERM (`kill`, a scheduler's time limit) stops a collection as Ctrl-C
    does: the report being received is kept as partial, and the exit code is 143. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise Stopped(signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- one connection ---------------------------------------------------------------------------------

class _Lines:
    """The handshake: a command per line, a reply per line (client.cc's rasRead reads to the '\\n')."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pending = b""  # bytes received past the last reply line

    def send(self, command: str) -> None:
        self.sock.sendall(command.encode("ascii") + b"\n")

    def reply(self, deadline: float) -> str | None:
        """The next reply, without its line ending; None when RAS closed the connection."""
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.sock.settimeout(left)
            chunk = self.sock.recv(4096)
            if not chunk:
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line.rstrip(b"\r").decode("utf-8", "replace")


@dataclass
class _Run:
    host: str
    port: int
    out_dir: Path
    verbose: bool
    fmt: str
    timeout_s: float | None
    grace_s: float
    now: Callable[[], datetime]
    emit: Callable[[Event], None]
    result: CollectResult
    json_refused: bool = False  # an older RAS said no to SET FORMAT json: text from now on
    version_noted: bool = False

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def handshake_s(self) -> float:
        return self.timeout_s or RAS_TIMEOUT_S

    @property
    def silence_s(self) -> float | None:
        if self.timeout_s == 0:
            return None
        return (RAS_TIMEOUT_S if self.timeout_s is None else self.timeout_s) + self.grace_s

    def note(self, message: str) -> None:
        self.emit(Event("note", message))

    def snapshot(self) -> None:
        sock = self._connect()
        try:
            lines = _Lines(sock)
            fmt = self._handshake(lines)
            self._receive(lines, fmt)
        finally:
            sock.close()

    def _connect(self) -> socket.socket:
        try:
            return socket.create_connection((self.host, self.port), timeout=self.handshake_s)
        except ConnectionRefusedError:
            raise CollectError(
                f"cannot connect to NCCL's RAS service at {self.address}: connection refused. It "
                "listens only while a job with NCCL ≥ 2.24 runs there with RAS enabled "
                "(NCCL_RAS_ENABLE unset or 1), on localhost:28028 unless the job sets NCCL_RAS_ADDR: "
                "then pass that host and port with --host and --port") from None
        except socket.gaierror as exc:
            raise CollectError(f"cannot resolve the RAS host {self.host!r}: {exc.strerror}") from None
        except TimeoutError:
            raise CollectError(f"connecting to {self.address} timed out after {self.handshake_s:g} s "
                               "(is the host reachable, and the port the job's NCCL_RAS_ADDR?)") from None
        except OSError as exc:
            raise CollectError(f"connecting to {self.address}: {exc.strerror or exc}") from None

    def _handshake(self, lines: _Lines) -> str:
        """CLIENT PROTOCOL, then TIMEOUT and SET FORMAT if asked; returns the format RAS will answer in."""
        deadline = time.monotonic() + self.handshake_s
        try:
            lines.send(f"CLIENT PROTOCOL {PROTOCOL}")
            answer = self._reply(lines, deadline)
            # client.cc:243-252: the prefix is matched without case; another version is only a warning
            if not answer.upper().startswith("SERVER PROTOCOL "):
                raise CollectError(f"{self.address} answered {answer[:80]!r} to 'CLIENT PROTOCOL {PROTOCOL}' "
                                   "instead of 'SERVER PROTOCOL <n>': is NCCL's RAS listening there?")
            version = answer[len("SERVER PROTOCOL "):].strip()
            if version != str(PROTOCOL) and not self.version_noted:
                self.version_noted = True
                self.note(f"RAS at {self.address} speaks client protocol {version}, triage {PROTOCOL}; "
                          "going on, as ncclras does")
            if self.timeout_s is not None:
                secs = math.ceil(self.timeout_s)  # RAS takes whole seconds only (client_support.cc:363-365)
                lines.send(f"TIMEOUT {secs}")
                answer = self._reply(lines, deadline)
                if answer.upper() != "OK":
                    raise CollectError(f"RAS at {self.address} refused 'TIMEOUT {secs}': {answer[:80]}")
            if self.fmt == "json" and not self.json_refused:
                lines.send("SET FORMAT json")
                answer = self._reply(lines, deadline)
                if answer.upper() == "OK":
                    return "json"
                self.json_refused = True  # NCCL < 2.28.7: "ERROR: Unknown command SET FORMAT json"
                self.note(f"RAS at {self.address} answered {answer[:80]!r} to 'SET FORMAT json' (NCCL "
                          "before 2.28.7 reports in text only): saving text snapshots")
            return "text"
        except TimeoutError:
            raise CollectError(f"{self.address} accepted the connection but did not answer the RAS "
                               f"handshake within {self.handshake_s:g} s: is that NCCL's RAS port "
                               "(NCCL_RAS_ADDR)? A --timeout gives it longer") from None
        except OSError as exc:
            raise CollectError(f"RAS handshake with {self.address}: {exc.strerror or exc}") from None

    def _reply(self, lines: _Lines, deadline: float) -> str:
        answer = lines.reply(deadline)
        if answer is None:  # client.cc:239-242
            raise CollectError(f"NCCL unexpectedly closed the connection ({self.address}) during the "
                               "RAS handshake")
        return answer

    def _receive(self, lines: _Lines, fmt: str) -> None:
        """STATUS, then the report to the end: into a temporary file, renamed once it ends."""
        fd, tmp = _new_temp(self.out_dir)
        sent_at: datetime | None = None
        size, reason, snap = 0, "", None
        try:
            with os.fdopen(fd, "wb") as out:
                marker, ending = _LAST_SECTION[fmt], _LAST_BYTES[fmt]
                tail, seen_last_section = b"", False
                sent_at = self.now()
                try:
                    lines.send("VERBOSE STATUS" if self.verbose else "STATUS")
                except OSError as exc:
                    raise CollectError(f"sending STATUS to {self.address}: {exc.strerror or exc}") from None
                data, lines.pending = lines.pending, b""
                lines.sock.settimeout(self.silence_s)
                while True:
                    if data:
                        out.write(data)
                        out.flush()  # on disk as it comes: a crash of triage leaves it in the temp file
                        size += len(data)
                        seen_last_section = seen_last_section or marker in tail + data
                        tail = (tail + data)[-len(marker):]
                    try:
                        data = lines.sock.recv(65536)
                    except TimeoutError:
                        reason = f"RAS sent nothing for {self.silence_s:g} s"
                        break
                    except OSError as exc:
                        reason = f"{exc.strerror or exc}"
                        break
                    if not data:
                        if not (seen_last_section and tail.endswith(ending)):
                            reason = ("NCCL closed the connection before the end of the report" if size
                                      else "NCCL closed the connection without answering STATUS")
                        break
            if reason:
                reason += f" ({size} bytes received)"
            snap = self._publish(tmp, sent_at, fmt, size, reason)
        except KeyboardInterrupt:
            if snap is None and size and sent_at is not None:
                snap = self._publish(tmp, sent_at, fmt, size, f"interrupted ({size} bytes received)")
                self._announce(snap)
            raise
        finally:
            if snap is None:
                tmp.unlink(missing_ok=True)
        self._announce(snap)

    def _publish(self, tmp: Path, sent_at: datetime, fmt: str, size: int, reason: str) -> Snapshot:
        stamp = _utc(sent_at)
        path = _link_new(tmp, self.out_dir, stamp, PARTIAL_SUFFIX if reason else SUFFIXES[fmt])
        snap = Snapshot(path, stamp, fmt, size, reason)
        self.result.snapshots.append(snap)
        return snap

    def _announce(self, snap: Snapshot) -> None:
        if snap.partial:
            self.emit(Event("partial", f"{snap.path}: partial, {snap.reason}", snap))
        else:
            self.emit(Event("saved", f"{snap.path}: {snap.size} bytes", snap))


# -- files ------------------------------------------------------------------------------------------

def snapshot_name(stamp: datetime, suffix: str) -> str:
    """ras-20261105T142231.048213Z.txt: the UTC time STATUS was sent, to the microsecond."""
    return f"{PREFIX}{_utc(stamp):%Y%m%dT%H%M%S.%f}Z{suffix}"


def _link_new(tmp: Path, folder: Path, stamp: datetime, suffix: str) -> Path:
    """Give the finished file its name without ever replacing a file: when the name is taken, the
    stamp moves on by a microsecond (the name keeps its form and its order)."""
    for _ in range(10_000):
        path = folder / snapshot_name(stamp, suffix)
        try:
            os.link(tmp, path)  # fails if `path` exists, atomically
        except FileExistsError:
            stamp += timedelta(microseconds=1)
            continue
        except OSError:  # a file system without hard links: rename, the name checked free just before
            if path.exists():
                stamp += timedelta(microseconds=1)
                continue
            tmp.rename(path)
            return path
        tmp.unlink()
        return path
    raise FileExistsError(17, "no free snapshot name", str(folder / snapshot_name(stamp, suffix)))


def _new_temp(folder: Path) -> tuple[int, Path]:
    """A hidden file that no reader takes for a snapshot, with the permissions the umask gives."""
    while True:
        path = folder / f".{PREFIX}{os.getpid()}-{secrets.token_hex(4)}.tmp"
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), path
        except FileExistsError:
            continue


def _make_folder(out_dir: Path) -> None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CollectError(f"{out_dir} exists and is not a folder") from None
    except OSError as exc:
        raise CollectError(f"cannot create {out_dir}: {exc.strerror or exc}") from None


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def _sleep_until(due: float) -> None:
    while (left := due - time.monotonic()) > 0:
        time.sleep(left)
