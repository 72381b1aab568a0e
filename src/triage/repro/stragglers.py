"""Which rank arrived late at the collectives, from the time each rank spent blocked in them.

A collective completes only when its last rank arrives, so the ranks that were on time wait for the
late one and the late one hardly waits at all: a rank's lag at one collective is the median wait of
the others minus its own. This needs no clock shared between hosts, only each rank's own durations.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

# Below these a lag is scheduling noise: Python launching GPU kernels, or a CPU host running
# other work (gloo ranks share cores with everything else).
EXEC_FLOOR_S = {"nccl": 0.002, "gloo": 0.010}
NOISE_FACTOR = 3.0  # a straggler lags this many times more than the typical rank
LATE_SHARE = 0.5  # and is the last to arrive at least this often


@dataclass
class Straggler:
    index: int  # position in the group (the caller maps it to a job rank)
    lag_s: float  # average lag per collective
    late: int  # collectives at which it was the last to arrive
    total: int


def _lags(waits: list[float]) -> list[float]:
    lags = []
    for i, own in enumerate(waits):
        others = waits[:i] + waits[i + 1 :]
        lags.append(max(0.0, statistics.median(others) - own))
    return lags


def late_once(waits: list[float], threshold_s: float) -> Straggler | None:
    """The rank that arrived more than `threshold_s` after the others at one blocking step."""
    if len(waits) < 2:
        return None
    lags = _lags(waits)
    worst = max(range(len(lags)), key=lags.__getitem__)
    if lags[worst] > threshold_s:
        return Straggler(worst, lags[worst], 1, 1)
    return None


def late_often(waits: list[list[float]], floor_s: float) -> Straggler | None:
    """The rank that arrived late at most collectives of a series; waits[rank][op] in seconds."""
    if len(waits) < 2 or not waits[0]:
        return None
    ops = len(waits[0])
    per_op = [_lags([w[op] for w in waits]) for op in range(ops)]
    means = [statistics.fmean(lags[r] for lags in per_op) for r in range(len(waits))]
    late = [0] * len(waits)
    for lags in per_op:
        worst = max(range(len(lags)), key=lags.__getitem__)
        if lags[worst] > 0:
            late[worst] += 1
    worst = max(range(len(means)), key=means.__getitem__)
    # An op's own duration is the wait of its last arrival (it waited for nobody).
    op_time = statistics.median(min(w[op] for w in waits) for op in range(ops))
    noise = statistics.median(means[:worst] + means[worst + 1 :])
    threshold = max(floor_s, 0.5 * op_time, NOISE_FACTOR * noise)
    if means[worst] > threshold and late[worst] >= LATE_SHARE * ops:
        return Straggler(worst, means[worst], late[worst], ops)
    return None
