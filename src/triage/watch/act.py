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
from triage.watch.procs import alive, descendants, self_and_ancestors, start_ticks
from triage.watch.progress import Finding

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


def may_end(report: Report | None, finding: Finding, now: Finding | None, floor: float) -> tuple[bool, str]:
    """Whether `--on-hang kill` may end the job, and why (or why not).

    Only a diagnosed verdict at or above `floor`, naming ranks that the progress model saw make no
    progress while a peer waited (`finding`, from evidence, not silence) and still sees so after
    the snapshot (`now`). NO FAILURE and inconclusive verdicts are reported, never acted upon.
    """
    if not finding.can_act:
        return False, (f"a {finding.kind} hang is seen from silence alone (no stacks say who waits on whom); "
                       "it is reported, never acted upon")
    if report is None:
        return False, "there is no verdict"
    verdict = report.verdict
    if verdict.status is not Status.DIAGNOSED:
        return False, f"the verdict is {verdict.status.value}: only a diagnosed hang is acted upon"
    if verdict.confidence < floor:
        return False, f"the verdict's confidence {verdict.confidence:.2f} is below --kill-confidence {floor:.2f}"
    named = sorted({c.rank for c in verdict.culprits if c.kind == "rank" and c.rank is not None})
    if not named:
        return False, "the verdict names no rank"
    if now is None or now.stage != "hang" or now.kind != finding.kind:
        return False, "the job moved again while the snapshot was taken"
    stuck = set(now.culprits) | (set(now.waiting) if now.kind == "all-waiting" else set())
    moving = [r for r in named if r not in stuck]
    if moving:
        return False, f"rank {', '.join(map(str, moving))}, named by the verdict, is not seen making no progress"
    return True, (f"diagnosed {verdict.category.value} at confidence {verdict.confidence:.2f} >= "
                  f"{floor:.2f}; rank {', '.join(map(str, named))} made no progress for {now.quiet_s:.0f} s "
                  f"({now.kind}) while a peer waited")


def end_tree(root: int, extra: Sequence[int] = (), grace_s: float = 10.0) -> list[int]:
    """SIGTERM every process under `root` (and `extra`), SIGKILL those alive after `grace_s`.

    Returns the pids that were still there after SIGKILL (none, normally)."""
    # Attached with --pid 1 in a shared namespace, watch is in the tree, and PID 1 is the
    # namespace's init (a pod's pause process), not the job: neither is signalled.
    mine = self_and_ancestors() | ({1} if root == 1 else set())
    tree = {pid: start_ticks(pid) for pid in [*descendants(root), *extra] if alive(pid) and pid not in mine}
    _signal(tree, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        # Processes started since (a launcher restarting workers) are ended too.
        tree.update({pid: start_ticks(pid) for pid in descendants(root) if pid not in tree and pid not in mine})
        if not any(alive(pid, ticks) for pid, ticks in tree.items()):
            return []
        time.sleep(0.2)
    tree.update({pid: start_ticks(pid) for pid in descendants(root) if pid not in tree and pid not in mine})
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
