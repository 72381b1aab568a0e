"""Byte-level mutations of a file's content: flips, truncation, shuffled, duplicated or dropped
lines.
"""

from __future__ import annotations

import random
from collections.abc import Callable


def flip(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    buf = bytearray(data)
    for _ in range(rng.randrange(1, 12)):
        if not buf:  # all deleted by an earlier step
            break
        at = rng.randrange(len(buf))
        op = rng.randrange(4)
        if op == 0:
            buf[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[at] = rng.randrange(256)
        elif op == 2:
            buf[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        else:
            del buf[at:at + rng.randrange(1, 64)]
    return bytes(buf)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[:rng.randrange(len(data) + 1)] if data else data


def shuffle_lines(rng: random.Random, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    op = rng.randrange(3)
    if op == 0:
        rng.shuffle(lines)
    elif op == 1 and lines:  # duplicate a slice
        a = rng.randrange(len(lines))
        lines[a:a] = lines[a:a + rng.randrange(1, 50)] * rng.randrange(1, 20)
    elif lines:  # drop a slice
        a = rng.randrange(len(lines))
        del lines[a:a + rng.randrange(1, 50)]
    return b"".join(lines)


MUTATORS: list[Callable[[random.Random, bytes], bytes]] = [flip, truncate, shuffle_lines]
