"""What watch does once it has seen a hang or the job's end: the verdict, and ending the job.

The verdict is `triage analyze`'s, over the watch folder (the job's output, watch.log, the
snapshots) and the job's own log folders, written through analyze's outputs (every format, -o).
Ending the job is SIGTERM to every process of its tree, then SIGKILL to what is left after a grace.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from triage import __version__, exitcodes
from triage.model import Report, Status
from triage.report import outputs as report_outputs
from triage.watch.procs import alive, descendants, start_ticks

if TYPE_CHECKING:
    from triage.decision import Policy


def analyze(paths: Sequence[Path], outputs: Sequence[report_outputs.Output], *, world_size: int | None,
            rules_dirs: Sequence[Path], policy: Policy | None = None) -> Report | None:
    """The verdict over what was kept, written to every output; None when it could not be made
    (said once on stderr)."""
    from triage.api import NoInput
    from triage.api import analyze as run_analysis
    from triage.rules import RuleError

    try:
        report = run_analysis([str(p) for p in paths], world_size=world_size, rules_dirs=rules_dirs, jobs=1,
                              policy=policy)
    except (NoInput, RuleError, OSError) as exc:
        report_outputs.write_error(str(exc), __version__, outputs)
        say(f"no verdict: {exc}")
        return None
    try:
        report_outputs.write_report(report, outputs)
    except (BrokenPipeError, OSError) as exc:
        say(f"the verdict could not be written: {exc}")
    return report


def verdict_code(report: Report | None, fail_on: frozenset[Status]) -> int:
    """The exit code a verdict gives; a hang whose culprit no evidence settles is inconclusive."""
    if report is None:
        return exitcodes.INCONCLUSIVE
    code = exitcodes.exit_code(report, fail_on)
    if report.verdict.status is Status.NO_FAILURE and fail_on:
        return exitcodes.INCONCLUSIVE  # watch saw it hang; the logs alone did not show it
    return code


def end_tree(root: int, extra: Sequence[int] = (), grace_s: float = 10.0) -> list[int]:
    """SIGTERM every process under `root` (and `extra`), SIGKILL those alive after `grace_s`.

    Returns the pids that were still there after SIGKILL (none, normally)."""
    tree = {pid: start_ticks(pid) for pid in [*descendants(root), *extra] if alive(pid)}
    _signal(tree, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        # Processes started since (a launcher restarting workers) are ended too.
        tree.update({pid: start_ticks(pid) for pid in descendants(root) if pid not in tree})
        if not any(alive(pid, ticks) for pid, ticks in tree.items()):
            return []
        time.sleep(0.2)
    tree.update({pid: start_ticks(pid) for pid in descendants(root) if pid not in tree})
    _signal(tree, signal.SIGKILL)
    time.sleep(0.5)
    return [pid for pid, ticks in tree.items() if alive(pid, ticks)]


def _signal(tree: dict[int, int], signum: int) -> None:
    for pid, ticks in tree.items():
        if alive(pid, ticks):
            try:
                os.kill(pid, signum)
            except OSError:
                continue


def say(message: str) -> None:
    """One line from watch itself, on stderr (the job's own output keeps stdout)."""
    with contextlib.suppress(OSError):
        os.write(2, f"triage watch: {message}\n".encode("utf-8", "replace"))
