"""Check the candidates against every source's per-member evidence before a verdict is stated.

The principles name culprits (evidence *for* a member) and say what their source shows of members
whoever is named (evidence *against*: a rank that waited with work in flight while a peer was behind,
a rank outside the world the others agree on). Read together, per member:

- a member that a credible fact clears is no culprit, whichever candidate names it: a candidate that
  named it with others is narrowed to the rest, one that named only cleared members drops out;
- a fact clears a rank unless the rank's own log shows it failing by itself (a rank that crashed
  inside a collective has that collective in flight too, and its crash is the cause).

What is cleared, and by what, is added to the candidate's reasoning with its citation. Then the
winner is checked once more: a rank said to have stopped that another source shows waiting, while the
other reading's culprit was cleared (`contested`), or a weak reading of absence whose culprits' own
lines report a failure of another kind (`unsupported`), is a conflict no fact settles: a lead, said
with both readings and what would settle them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from triage.diagnose.context import Context
from triage.model import Category, Culprit, Hypothesis, MemberEvidence, Stance
from triage.ranks import fmt_ranks

# How many cleared ranks a candidate's reasoning cites one by one.
CLEARED_SHOWN = 3


@dataclass
class Checked:
    """The candidates left to weigh, and those every culprit of which was cleared."""

    kept: list[Hypothesis] = field(default_factory=list)
    dropped: list[Hypothesis] = field(default_factory=list)


def ledger(candidates: list[Hypothesis], items: list[MemberEvidence]) -> list[MemberEvidence]:
    """Every source's word on each member some candidate names: the candidates' culprits (for), and
    what the principles' sources say of them beside (for or against), in one list, by member. (What
    a source says of members no candidate names decides nothing, and a large job has thousands.)"""
    named = [MemberEvidence(kind=c.kind, rank=c.rank, host=c.host, stance=Stance.FOR, fact=c.reason,
                            source=h.name, weight=round(min(1.0, max(0.0, h.score)), 2),
                            citation=c.evidence[0] if c.evidence else None)
             for h in candidates for c in h.culprits]
    members = {_member(m) for m in named}
    said = [m for m in items if _member(m) in members]
    return sorted(named + said, key=lambda m: (m.rank is None, m.rank or 0, m.host or "", m.stance.value))


def _member(m: MemberEvidence) -> tuple[str, int | str | None]:
    """Who an item is about: a rank by its number (its host is by the way), else a host."""
    return (m.kind, m.rank) if m.rank is not None else (m.kind, m.host)


def contested(winner: Hypothesis, dropped: list[Hypothesis], members: list[MemberEvidence],
              cleared: dict[int, MemberEvidence]) -> str | None:
    """A conflict no fact settles: a source cleared every culprit of a candidate, and the one left
    names a rank that another source shows waiting itself. Both readings, and what would settle them."""
    if not dropped or winner.category is not Category.HUNG_PROCESS:
        return None  # (only a rank said to have stopped is contradicted by its waiting)
    ranks = sorted(c.rank for c in winner.culprits if c.kind == "rank" and c.rank is not None)
    against = [m for m in members if m.rank in ranks and m.stance is Stance.AGAINST and m.source != winner.name]
    if not against:
        return None
    other = dropped[0]
    theirs = sorted(c.rank for c in other.culprits if c.rank in cleared)
    return (f"The sources disagree. {winner.name} names rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}, "
            "but " + "; ".join(f"rank {m.rank} {m.fact} ({_cited(m)})" for m in against[:CLEARED_SHOWN])
            + f". {other.name} named rank{'s' if len(theirs) > 1 else ''} {fmt_ranks(theirs)}, but "
            + "; ".join(f"rank {r} {cleared[r].fact} ({_cited(cleared[r])})" for r in theirs[:CLEARED_SHOWN])
            + ". What would settle it: the flight-recorder dump and the log of each of these ranks from one run (a "
            "dump's rank is the one its file name gives: check that no file was renamed or mixed across runs), "
            "or `py-spy dump --pid <pid>` of the ranks still hung.")


def unsupported(ctx: Context, winner: Hypothesis, members: list[MemberEvidence], sure: float) -> str | None:
    """A weak reading of absence (a hung rank: no dump, no line) whose every culprit reports, in its
    own log, the trouble it met: what ended them is what their lines say, not a silent stop. The
    culprits' own category, where their lines agree on one, is the lead's."""
    ranks = sorted(c.rank for c in winner.culprits if c.kind == "rank" and c.rank is not None)
    if winner.score >= sure or winner.category is not Category.HUNG_PROCESS or not ranks or len(ranks) != len(
            winner.culprits):
        return None
    against = {m.rank: m for m in members if m.rank in ranks and m.stance is Stance.AGAINST and m.source != winner.name}
    if set(against) != set(ranks):
        return None
    # Each culprit's own report names a failure of another kind (a mismatch, a network fault), and they
    # agree on it; a rank that reported a timeout may still be the one that arrived late.
    said = [{e.category for e in ctx.facts[r].timeouts + ctx.facts[r].peer_errors if e.category} for r in ranks]
    kinds = set.union(*said)
    if not all(said) or len(kinds) != 1 or kinds & {Category.HUNG_PROCESS, Category.UNKNOWN}:
        return None
    winner.category = next(iter(kinds))
    many = len(ranks) > 1
    return (f"{winner.name} names rank{'s' if many else ''} {fmt_ranks(ranks)} as stopped, but "
            + "; ".join(f"rank {r} {against[r].fact} ({_cited(against[r])})" for r in ranks[:CLEARED_SHOWN])
            + f": what ended {'them' if many else 'it'} is a {winner.category.value.replace('_', ' ')} "
              f"{'their' if many else 'its'} own lines report, and they do not say which rank was odd. What "
              "would settle it: each rank's flight-recorder dump (the odd rank's shows its own op or size) or "
              "TORCH_DISTRIBUTED_DEBUG=DETAIL on the next run.")


def _cited(item: MemberEvidence) -> str:
    where = item.citation
    return f"{item.source}, {where.source}:{where.line}" if where is not None else item.source


def clearing(ctx: Context, items: list[MemberEvidence]) -> dict[int, MemberEvidence]:
    """The ranks a credible fact clears, each with the first fact that does."""
    cleared: dict[int, MemberEvidence] = {}
    for item in items:
        if item.stance is not Stance.AGAINST or not item.clears or item.rank is None:
            continue
        facts = ctx.facts.get(item.rank)
        if facts is not None and facts.self_failures:
            continue  # its own failure stands, whatever else it was doing
        cleared.setdefault(item.rank, item)
    return cleared


def check(candidates: list[Hypothesis], cleared: dict[int, MemberEvidence]) -> Checked:
    """Narrow each candidate to the culprits no fact clears; drop one with none left."""
    out = Checked()
    for h in candidates:
        gone = [c for c in h.culprits if _cleared(c, cleared)]
        if not gone:
            out.kept.append(h)
            continue
        left = [c for c in h.culprits if c not in gone]
        h.reasoning += " " + _said(sorted({c.rank for c in gone if c.rank is not None}), cleared, narrowed=bool(left))
        if left:
            h.culprits = left
            out.kept.append(h)
        else:  # kept whole, for the record of what it named
            out.dropped.append(h)
    return out


def _cleared(c: Culprit, cleared: dict[int, MemberEvidence]) -> bool:
    return c.kind == "rank" and c.rank is not None and c.rank in cleared


def _said(ranks: list[int], cleared: dict[int, MemberEvidence], *, narrowed: bool) -> str:
    why = "; ".join(f"rank {r} {cleared[r].fact} ({_cited(cleared[r])})" for r in ranks[:CLEARED_SHOWN])
    many = len(ranks) > 1
    return (f"Another source clears rank{'s' if many else ''} {fmt_ranks(ranks)}"
            + (", which narrows this reading to the rest" if narrowed else ", the only one" + ("s" if many else "")
               + " this reading named") + f": {why}.")
