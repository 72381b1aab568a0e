"""Bisection: when the whole group fails or is slow, test smaller groups to name the rank or link.

Bisection runs standalone, on one host, so its smaller groups are pairs (a per-host split has
nothing to split). Every pair of ranks is tested, in rounds of disjoint pairs that run side by
side (the circle method of round-robin tournaments: n-1 rounds of n/2 pairs). Then: a rank is at fault when every group with it failed and every group
without it passed; a link is at fault when only the pair of its two ends failed.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

from triage.repro.bandwidth import gbps

SLOW_SHARE = 0.5  # a group is slow below this share of the median bus bandwidth of the others


def pair_rounds(ranks: list[int]) -> list[list[tuple[int, int]]]:
    """Every pair of `ranks` exactly once, in rounds where no rank appears twice."""
    players: list[int | None] = list(ranks)
    if len(players) % 2:
        players.append(None)  # a bye
    n = len(players)
    rounds: list[list[tuple[int, int]]] = []
    for _ in range(n - 1):
        pairs = []
        for i in range(n // 2):
            a, b = players[i], players[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((min(a, b), max(a, b)))
        rounds.append(pairs)
        players = [players[0], players[-1], *players[1:-1]]  # rotate all but the first
    return [r for r in rounds if r]


@dataclass
class GroupResult:
    ranks: tuple[int, ...]
    failed: bool
    slow: bool = False
    phase: str | None = None  # where it failed (or was slow)
    busbw: float | None = None  # GB/s at the largest size, when it finished
    note: str = ""  # what happened, in a few words

    @property
    def bad(self) -> bool:
        return self.failed or self.slow


@dataclass
class Judgement:
    kind: str  # rank | link | none | all
    ranks: list[int] = field(default_factory=list)
    links: list[tuple[int, int]] = field(default_factory=list)
    phase: str = "execution"
    reasoning: str = ""


def mark_slow_by_bandwidth(results: list[GroupResult]) -> None:
    """Groups that finished well below the median bandwidth of the groups that finished."""
    finished = [r.busbw for r in results if not r.failed and r.busbw]
    if len(finished) < 3:
        return
    median = statistics.median(finished)
    for r in results:
        if not r.failed and r.busbw is not None and r.busbw < SLOW_SHARE * median:
            r.slow = True
            r.phase = r.phase or "execution"
            r.note = r.note or f"busbw {gbps(r.busbw)} GB/s, under half of the median {gbps(median)} GB/s"


def _names(groups: list[GroupResult]) -> str:
    return ", ".join(str(list(g.ranks)) for g in groups)


def judge(results: list[GroupResult]) -> Judgement:
    bad = [r for r in results if r.bad]
    phases = Counter(r.phase for r in bad if r.phase)
    phase = phases.most_common(1)[0][0] if phases else "execution"
    if not bad:
        return Judgement("none", phase=phase, reasoning="every smaller group passed: the fault needs the "
                         "whole group to show (or it was transient)")
    if len(bad) == len(results):
        return Judgement("all", phase=phase, reasoning=f"every group failed or was slow ({_names(bad)}): "
                         "not one rank or link; suspect the host, the driver or the software stack")
    members = sorted({rank for r in results for rank in r.ranks})
    culprits = [m for m in members if all(r.bad for r in results if m in r.ranks)]
    if culprits and all(any(c in r.ranks for c in culprits) for r in bad):
        with_them = [r for r in results if any(c in r.ranks for c in culprits)]
        word = "rank" if len(culprits) == 1 else "ranks"
        return Judgement("rank", ranks=culprits, phase=phase, reasoning=(
            f"every group with {word} {', '.join(map(str, culprits))} failed or was slow "
            f"({_names(with_them)}) and every group without it passed"))
    links = [(r.ranks[0], r.ranks[1]) for r in bad if len(r.ranks) == 2]
    if links and len(links) == len(bad):
        return Judgement("link", links=links, phase=phase, reasoning=(
            f"only the pairs {_names(bad)} failed or were slow, while both ends of each passed with "
            "other partners"))
    return Judgement("all", phase=phase, reasoning=f"the failing groups ({_names(bad)}) share no single "
                     "rank or link")
