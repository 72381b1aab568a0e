"""Slurm's host-list notation: `node[01-03,07],gpu-a[9-11]`, both ways.

A name's trailing digits are its number; names that share the rest (the prefix) share one bracket.
A range `lo-hi` stands for lo..hi, each zero-filled to the width of `lo` (`[08-10]` is 08 09 10,
`[9-11]` is 9 10 11), so `1`, `01` and `001` are three different names and never merge. Names
without trailing digits stand alone. This is what `scontrol show hostlist` writes and `scontrol show
hostnames` reads (checked against Slurm 22.05 in tests/test_decision_outputs.py).
"""

from __future__ import annotations

import re

from triage.lazy_regex import lazy_re

# A host name Slurm can take in a list: no separators, no brackets, no spaces.
_NAME = lazy_re(r"[A-Za-z0-9._-]+")
_SPLIT = lazy_re(r"^(.*?)(\d+)$")
MAX_HOSTS = 1_000_000  # expanding more than this is an error, not a list
MAX_NUMBER = 1 << 63  # a trailing number at or past this is not listed (Slurm's counters wrap)


def valid_name(host: str) -> bool:
    """A name Slurm can take in a host list: no separators, brackets or spaces, and a trailing number
    that fits its 64-bit counters (Slurm 22.05 wraps a larger one)."""
    if not _NAME.fullmatch(host):
        return False
    match = _SPLIT.match(host)
    return match is None or int(match[2]) < MAX_NUMBER


def compress(hosts: list[str]) -> str:
    """The hosts (each once, any order) as one host list; ValueError for a name Slurm cannot list."""
    bad = [h for h in hosts if not valid_name(h)]
    if bad:
        raise ValueError(f"not a host name Slurm can list: {bad[0]!r}")
    plain: list[str] = []
    numbered: dict[str, set[str]] = {}
    for host in dict.fromkeys(hosts):
        match = _SPLIT.match(host)
        if match:
            numbered.setdefault(match[1], set()).add(match[2])
        else:
            plain.append(host)
    parts = sorted(plain)
    for prefix, numbers in sorted(numbered.items()):
        runs = _runs(sorted(numbers, key=lambda n: (int(n), len(n))))
        if len(runs) == 1 and runs[0][0] == runs[0][1]:
            parts.append(prefix + runs[0][0])
        else:
            parts.append(f"{prefix}[{','.join(lo if lo == hi else f'{lo}-{hi}' for lo, hi in runs)}]")
    return ",".join(parts)


def _runs(numbers: list[str]) -> list[tuple[str, str]]:
    """Consecutive numbers as (lo, hi), each next one the value after at lo's width; `numbers`
    sorted by value, then width."""
    runs: list[tuple[str, str]] = []
    left = set(numbers)
    for lo in numbers:
        if lo not in left:
            continue  # already in a run
        left.discard(lo)
        hi = lo
        while (nxt := str(int(hi) + 1).zfill(len(lo))) in left:
            left.discard(nxt)
            hi = nxt
        runs.append((lo, hi))
    return runs


def expand(hostlist: str) -> list[str]:
    """Every name a host list stands for, in its order (the inverse of `compress`); ValueError if the
    text is not a host list."""
    names: list[str] = []
    for item in _items(hostlist):
        names.extend(_expand_item(item))
        if len(names) > MAX_HOSTS:
            raise ValueError(f"the host list stands for more than {MAX_HOSTS:,} names")
    return names


def _items(text: str) -> list[str]:
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise ValueError(f"nested brackets in {text!r}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"a ']' without its '[' in {text!r}")
        elif char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"a '[' without its ']' in {text!r}")
    items.append(text[start:])
    if any(not item for item in items):
        raise ValueError(f"an empty name in {text!r}")
    return items


def _expand_item(item: str) -> list[str]:
    """`rack[1-2]n[01-02]` → rack1n01 rack1n02 rack2n01 rack2n02; text after the last bracket is refused
    (Slurm 22.05 refuses it too)."""
    pieces = re.split(r"\[([^\]]*)\]", item)
    literals, brackets = pieces[0::2], pieces[1::2]
    if brackets and literals[-1]:
        raise ValueError(f"text after a bracket in {item!r}")
    if any(lit and not valid_name(lit) for lit in literals):
        raise ValueError(f"not a host name: {item!r}")
    names = [literals[0]]
    for bracket, literal in zip(brackets, literals[1:], strict=True):
        numbers = _numbers(bracket, item)
        if len(names) * len(numbers) > MAX_HOSTS:
            raise ValueError(f"the host list stands for more than {MAX_HOSTS:,} names")
        names = [name + number + literal for name in names for number in numbers]
    if not brackets and not valid_name(item):
        raise ValueError(f"not a host name: {item!r}")
    return names


def _numbers(bracket: str, item: str) -> list[str]:
    numbers: list[str] = []
    for part in bracket.split(","):
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()) or not lo.isascii() or not hi.isascii():
            raise ValueError(f"not a number or range: {part!r} in {item!r}")
        if not sep:
            numbers.append(lo)
            continue
        if int(hi) < int(lo):
            raise ValueError(f"a range that runs backwards: {part!r} in {item!r}")
        if int(hi) - int(lo) >= MAX_HOSTS:
            raise ValueError(f"the host list stands for more than {MAX_HOSTS:,} names")
        numbers.extend(str(n).zfill(len(lo)) for n in range(int(lo), int(hi) + 1))
    return numbers
