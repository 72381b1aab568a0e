"""Run one case as a `triage analyze` subprocess under time and memory limits, judge the outcome,
save a failing input with its repro script.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shlex
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

from .cases import ROOT, SCHEMA, Case, Outcome

TIME_LIMIT = 20.0
MEMORY_LIMIT = 1536 * 1024 * 1024


def _limits() -> None:
    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "triage", "analyze", *args, "-f", "json"]


_VALIDATOR = None
_VALIDATOR_LOCK = threading.Lock()


def _validator():  # type: ignore[no-untyped-def]
    global _VALIDATOR
    with _VALIDATOR_LOCK:
        if _VALIDATOR is None:
            import jsonschema

            schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
            _VALIDATOR = jsonschema.Draft202012Validator(schema)
        return _VALIDATOR


def _peak_rss_kb(pid: int) -> int:
    """VmHWM of a live process, in KiB (0 once it has exited, or without /proc)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def run_case(case: Case, time_limit: float = TIME_LIMIT) -> Outcome:
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "NO_COLOR": "1", "COLUMNS": "100"}
    env.pop("TRIAGE_DEBUG", None)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        p = subprocess.Popen(command(case.args), cwd=case.root, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=err, env=env, preexec_fn=_limits)
        status, usage, timed_out, peak_kb = 0, None, False, 0
        while True:
            peak_kb = max(peak_kb, _peak_rss_kb(p.pid))
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > time_limit:
                timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                _, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.01)
        p.returncode = 0  # reaped above; keep Popen from waiting again
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        stdout = out.read()
        stderr = err.read().decode("utf-8", "replace")
    # The child's own high-water mark, read while it ran (ru_maxrss is no use: Linux carries it
    # across fork+exec, so it would be this driver's RSS whenever that is larger). Growth in the
    # last 10 ms before exit is missed; where /proc is missing, ru_maxrss is the (upper) bound.
    rss = peak_kb or (usage.ru_maxrss if usage else 0)
    rc = os.waitstatus_to_exitcode(status)
    tail = stderr[-2000:]

    def outcome(kind: str, reason: str) -> Outcome:
        return Outcome(case, kind, reason, seconds, rss, None if timed_out else rc, tail)

    if timed_out:
        return outcome("FAILURE", f"timeout after {time_limit:g} s")
    if rc < 0:
        return outcome("FAILURE", f"killed by signal {-rc}")
    if "Traceback" in stderr:
        return outcome("FAILURE", f"traceback on stderr (exit {rc})")
    if "internal error" in stderr:
        return outcome("FAILURE", f"internal error (exit {rc}): {stderr.strip()[:300]}")
    if rc in (0, 1, 3):
        try:
            doc = json.loads(stdout)
        except ValueError as exc:
            return outcome("FAILURE", f"exit {rc} but stdout is not JSON: {exc}")
        errors = sorted(_validator().iter_errors(doc), key=str)
        if errors:
            return outcome("FAILURE", f"exit {rc}, report fails the schema: {errors[0].message[:200]}")
        return outcome("ok", f"exit {rc}")
    if rc == 2:
        lines = [line for line in stderr.splitlines() if line.strip()]
        if not lines or not lines[0].startswith("triage: error:"):
            return outcome("FAILURE", f"exit 2 without a `triage: error:` message: {stderr[:200]!r}")
        if len(lines) > 1:  # clean, but not the one line the CLI promises: counted apart
            return outcome("clean", f"multi-line ({len(lines)}) error message: {stderr[:300]!r}")
        return outcome("clean", lines[0][:200])
    return outcome("FAILURE", f"exit code {rc} outside the table")


def save_failure(o: Outcome, out: Path, n: int) -> Path:
    dest = out / f"fail-{o.case.cls}-{n:03d}"
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest / "input.tar", "w") as t:
        for entry in sorted(o.case.root.iterdir()):
            t.add(entry, arcname=entry.name)
    cmd = " ".join(shlex.quote(a) for a in command(o.case.args)).replace(shlex.quote(sys.executable), "python")
    (dest / "repro.sh").write_text(
        "#!/bin/sh\n# " + o.reason.replace("\n", " ") + "\nset -e\nd=$(mktemp -d)\n"
        'tar -xf "$(dirname "$0")/input.tar" -C "$d"\ncd "$d"\n' + cmd + "\n", encoding="utf-8")
    (dest / "repro.sh").chmod(0o755)
    (dest / "case.txt").write_text(
        f"class: {o.case.cls}\ncase: {o.case.index}\ninput: {o.case.what}\nreason: {o.reason}\n"
        f"exit: {o.rc}\nseconds: {o.seconds:.2f}\npeak RSS: {o.rss_kb // 1024} MB\ncommand: {cmd}\n"
        f"--- stderr (tail)\n{o.stderr_tail}\n", encoding="utf-8")
    return dest
