"""What a principle declares of itself: its name, the hypothesis names it emits, what it reads, how to run it,
and what its source says of each member."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from triage.diagnose.context import Context
from triage.model import Hypothesis, MemberEvidence


@dataclass(frozen=True)
class Principle:
    name: str  # how docs/principles.md calls it
    emits: tuple[str, ...]  # the hypothesis names its candidates carry (public: report-v1.schema.json)
    summary: str  # one paragraph: what evidence it reads and whom it names
    run: Callable[[Context], Hypothesis | None]  # its candidate, or None when its evidence is absent
    # Its candidate is a failure on its own, even when no rank logged one (RAS sees a dead or stuck
    # process in logs that show nothing wrong): it counts when the verdict asks whether anything failed.
    fails_without_logged_failure: bool = False
    # What it says of a winner another principle produced (None: no principle had a candidate),
    # given its own candidate (None when it had none): a disagreement the verdict appends to the
    # winner's reasoning, or to an inconclusive verdict's.
    remark: Callable[[Context, Hypothesis | None, Hypothesis | None], str | None] | None = None
    # What its source says about members beyond whom its candidate names: evidence for or against
    # each rank, host or link, with its citation (docs/design.md §4). The verdict reads every
    # principle's items, and its candidates' culprits, as one ledger per member.
    evidence: Callable[[Context], list[MemberEvidence]] | None = None
