"""What rank 0 concludes from every rank's timings: bandwidth per size and late ranks per phase."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from triage.repro import bandwidth, stragglers
from triage.repro.stragglers import Straggler

# A rank that joins comm_init or operator_load this late is flagged: a quarter of the deadline,
# and never less than what start-up jitter produces (imports of torch on a busy host: ~1 s).
LATE_SHARE_OF_DEADLINE = 0.25
LATE_FLOOR_S = {"comm_init": 1.0, "operator_load": 0.05}


@dataclass
class Timings:
    """Seconds each group rank spent blocked on its peers."""

    comm_init: list[float]  # [rank]
    operator_load: list[float]  # [rank]
    execution: list[list[float]]  # [rank][collective]


def exec_layout(sizes: list[int], iters: int) -> list[tuple[int, list[int]]]:
    """(size, indices of its timed collectives): each size runs a check, `iters` timed, a check."""
    layout = []
    for k, size in enumerate(sizes):
        base = k * (iters + 2)
        layout.append((size, list(range(base + 1, base + 1 + iters))))
    return layout


def exec_ops(sizes: list[int], iters: int) -> int:
    return len(sizes) * (iters + 2)


def bandwidth_rows(timings: Timings, sizes: list[int], iters: int,
                   elements: dict[int, int]) -> list[bandwidth.Row]:
    """Per size, the average over iterations of the slowest rank's time, as the group sees it."""
    world = len(timings.execution)
    rows = []
    for size, ops in exec_layout(sizes, iters):
        if not ops:
            continue
        seconds = statistics.fmean(max(w[op] for w in timings.execution) for op in ops)
        rows.append(bandwidth.row(elements[size] * 4, seconds, world))
    return rows


def late_ranks(timings: Timings, deadlines: dict[str, float], backend: str) -> list[tuple[str, Straggler]]:
    found: list[tuple[str, Straggler]] = []
    for phase, waits in (("comm_init", timings.comm_init), ("operator_load", timings.operator_load)):
        threshold = max(LATE_FLOOR_S[phase], LATE_SHARE_OF_DEADLINE * deadlines[phase])
        if (late := stragglers.late_once(waits, threshold)) is not None:
            found.append((phase, late))
    if (late := stragglers.late_often(timings.execution, stragglers.EXEC_FLOOR_S[backend])) is not None:
        found.append(("execution", late))
    return found
