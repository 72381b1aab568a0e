"""Results that name the rank that contributed wrongly: every rank owns one slot of the vector.

Rank r fills slot r with a value only it uses and zeros elsewhere; after a sum all-reduce, slot r
must hold exactly that value on every rank (small integers are exact in float32). A wrong slot
names its owner. Values change from one check to the next, so a stale buffer cannot pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import torch

CORRUPTION = 1000.0  # what an injected wrong value adds to one element of the rank's own slot


def slot(numel: int, world_size: int, index: int) -> tuple[int, int]:
    per = numel // world_size
    return index * per, (index + 1) * per


def value(index: int, world_size: int, check: int) -> float:
    """What group rank `index` writes at its `check`-th verification (distinct per rank and check)."""
    return float(index + 1 + world_size * (check % 1000))


def fill(buf: torch.Tensor, index: int, world_size: int, check: int, corrupt: bool) -> None:
    buf.zero_()
    start, stop = slot(buf.numel(), world_size, index)
    buf[start:stop] = value(index, world_size, check)
    if corrupt:
        buf[(start + stop) // 2] += CORRUPTION


@dataclass
class WrongSlot:
    index: int  # group rank that owns the slot
    wrong: int  # elements that differ
    total: int
    first: int  # first wrong element, relative to the start of the slot
    expected: float
    got: float


def check(buf: torch.Tensor, world_size: int, check_no: int) -> tuple[list[WrongSlot], int]:
    """The slots that hold something else than their owner wrote, and wrong elements outside
    every slot (the tail that no rank owns must stay zero)."""
    wrong: list[WrongSlot] = []
    numel = buf.numel()
    for index in range(world_size):
        start, stop = slot(numel, world_size, index)
        expected = value(index, world_size, check_no)
        bad = buf[start:stop] != expected
        count = int(bad.sum().item())
        if count:
            first = int(bad.nonzero()[0].item())
            got = float(buf[start + first].item())
            wrong.append(WrongSlot(index, count, stop - start, first, expected, got))
    tail = buf[slot(numel, world_size, world_size - 1)[1]:]
    return wrong, int((tail != 0).sum().item())


def majority_outliers(values: Mapping[int, Hashable]) -> list[int] | None:
    """Keys whose value differs from the strict majority's; None when no strict majority exists."""
    if not values:
        return []
    common, count = Counter(values.values()).most_common(1)[0]
    if count * 2 <= len(values):
        return None
    return sorted(k for k, v in values.items() if v != common)
