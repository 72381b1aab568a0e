"""The decision for a scheduler (`-f`/`-o` slurm-exclude, slurm-drain, k8s, ranks): only what to do,
in the form each consumer reads (triage.decision.emit writes it). The shell-script outputs start
with a comment saying the decision; the data outputs (`--exclude=` line, ranks) hold nothing but
data, and are empty when nothing is to be excluded or the analysis could not run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from triage.decision import emit
from triage.model import Decision
from triage.report.views import ReportView


class _Scheduler:
    def __init__(self, name: str, summary: str, text: Callable[[Decision], str], script: bool) -> None:
        self.name, self.summary, self._text, self._script = name, summary, text, script

    def write(self, view: ReportView, out: TextIO, *, color: bool | None = None) -> None:
        if view.report.decision is not None:
            out.write(self._text(view.report.decision))

    def write_error(self, message: str, version: str, out: TextIO) -> None:
        if self._script:  # a script says why it does nothing; a data file stays empty
            out.write(f"# triage {emit.inert(version, 40)} could not analyse the logs: {emit.inert(message, 400)}\n")


SLURM_EXCLUDE = _Scheduler("slurm-exclude", "the nodes to leave out, as one `--exclude=HOSTLIST` line for sbatch",
                           emit.slurm_exclude, script=False)
SLURM_DRAIN = _Scheduler("slurm-drain", "a shell script of `scontrol update nodename=… state=drain` lines",
                         emit.slurm_drain, script=True)
K8S = _Scheduler("k8s", "a shell script of `kubectl cordon`, `taint` and node-condition patch lines",
                 emit.kubectl, script=True)
RANKS = _Scheduler("ranks", "the global ranks to drop, one per line (shrink_group, ncclCommShrink)",
                   emit.ranks, script=False)
FORMATTERS = (SLURM_EXCLUDE, SLURM_DRAIN, K8S, RANKS)
