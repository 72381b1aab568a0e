"""Find, in a piece of log text, the lines that hold any of a few hundred literals (or shapes).

This is the first pass over every byte triage reads, so it decides how fast triage reads. Two
engines give the same answers:

- `HyperscanFinder`: Intel Hyperscan (the `hyperscan` package, a C library that matches many literals
  and regexes at once in one pass, with SIMD), over the UTF-8 bytes of the text. Measured on a
  1,024-rank NCCL_DEBUG=INFO job: ~2.7 GB/s, against ~0.1 GB/s for the Python engine.
- `PythonFinder`: the standard library only, for a platform where hyperscan does not install. A
  few needles are chosen so that every literal holds one (`choose_needles`) and searched as one
  trie-shaped regex, which skips in C the positions whose character begins no needle.

`literal_finder()` picks hyperscan when it imports, unless TRIAGE_ENGINE=python.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from triage import cache
from triage.lazy_regex import lazy_compile

_NEEDLE_LENGTHS = (4, 5, 6, 8, 10, 12)
_WORD = lazy_compile(r"[A-Za-z_]{5,}")
# A needle may begin with a character no more frequent than this in healthy logs: the regex
# engine stops at every position holding a possible first character. A literal without one is
# covered by one of its words, searched with str.find (one pass over the text each).
_MAX_START_FREQUENCY = 0.02
# Cost of a str.find pass over a MiB, in candidate lines tried in Python (~5 µs each).
_PASS_COST = 120.0


def choose_needles(literals: list[str], sample: str | None = None) -> tuple[list[str], list[str]]:
    """Substrings such that every literal contains at least one: (regex needles, find needles).

    A few hundred literals can be searched neither one by one (a `str.find` pass each) nor as one
    flat alternation (Python's engine tries every branch at every position: a few MB/s). What is
    fast is one regex over needles that begin with characters rare in logs: the engine skips, in
    C, every position whose character cannot begin a needle. So each literal is given a start
    character, its rarest (so the few shared characters stay rare), and needles beginning with
    those characters are chosen by a greedy set cover: many literals per needle, few hits on a
    sample of healthy log lines. Literals made only of common characters get a find word.
    """
    sample = _healthy_sample() if sample is None else sample
    per_mib = (1 << 20) / max(1, len(sample))
    chars = Counter(sample)
    limit = _MAX_START_FREQUENCY * len(sample)
    starts: set[str] = set()
    for literal in literals:
        usable = [c for c in literal if not c.isspace() and chars[c] <= limit]
        if usable:
            starts.add(min(usable, key=lambda c: chars[c]))
    masks: dict[str, int] = {}
    words: dict[str, int] = {}
    for i, literal in enumerate(literals):
        subs = {literal[j:j + size] for j, c in enumerate(literal) if c in starts
                for size in _NEEDLE_LENGTHS if j + size <= len(literal)}
        subs |= {literal[j:] for j, c in enumerate(literal) if c in starts and len(literal) - j >= 3}
        subs = {sub for sub in subs if sub.strip() == sub}  # an edge space is a wasted character
        for sub in subs:
            masks[sub] = masks.get(sub, 0) | (1 << i)
        if not subs:
            for word in _WORD.findall(literal) or [literal]:
                words[word] = words.get(word, 0) | (1 << i)

    def cost(needle: str, own_pass: bool) -> float:
        # Candidate lines per MiB: hits on the sample, and a prior for short needles, which a
        # small sample under-counts; a find needle also costs its pass.
        lines = sample.count(needle) * per_mib + 40000 / len(needle) ** 4
        return lines + (_PASS_COST if own_pass else 1.0)

    # Lazy greedy set cover: a needle's ratio only falls as literals get covered, so a stale
    # heap entry is re-scored when it surfaces instead of re-scoring every option each round.
    heap = [(-m.bit_count() / cost(w, False), -len(w), w, m, False) for w, m in masks.items()]
    heap += [(-m.bit_count() / cost(w, True), -len(w), w, m, True) for w, m in words.items()]
    heapq.heapify(heap)
    uncovered = (1 << len(literals)) - 1
    chosen: list[str] = []
    chosen_find: list[str] = []
    while uncovered and heap:
        ratio, neg_len, word, mask, own = heapq.heappop(heap)
        fresh = -(mask & uncovered).bit_count() / cost(word, own)
        if fresh == 0:
            continue
        if fresh > ratio + 1e-12:  # stale: put it back with its true ratio
            heapq.heappush(heap, (fresh, neg_len, word, mask, own))
            continue
        (chosen_find if own else chosen).append(word)
        uncovered &= ~mask
    # Every literal must be findable, whatever the heuristics above made of it.
    chosen_find += [lit for i, lit in enumerate(literals) if uncovered >> i & 1]
    return chosen, chosen_find


def trie_regex(words: list[str], extra: tuple[str, ...] = ()) -> str:
    """One regex matching any of `words`, shaped as a trie so each branch tests one character.

    `extra` regexes (each beginning with a literal character, escaped if need be) join the branch of
    that character: the engine still skips in C the positions whose character begins nothing, and a
    position only tries the shapes that begin with its character.
    """
    trie: dict[str, dict] = {}  # type: ignore[type-arg]
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}
    shapes: dict[str, list[str]] = {}
    for shape in extra:
        first, rest = (shape[:2], shape[2:]) if shape.startswith("\\") else (shape[:1], shape[1:])
        shapes.setdefault(first[-1], []).append(rest)
        trie.setdefault(first[-1], {})

    def emit(node: dict, top: bool = False) -> str:  # type: ignore[type-arg]
        alternatives = []
        for ch, sub in sorted(node.items()):
            if not ch:
                continue
            body = emit(sub)
            if top and ch in shapes and (sub == {} or "" not in sub):
                body = "(?:" + "|".join(([body] if body else []) + shapes[ch]) + ")"
            alternatives.append(re.escape(ch) + body)
        if not alternatives:
            return ""
        body = alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"
        if "" in node:  # a word ends here, and longer ones go on
            body = body if body.startswith("(?:") else "(?:" + body + ")"
            return body + "?"
        return body

    return emit(trie, top=True)



@functools.cache
def _healthy_sample() -> str:
    return (Path(__file__).resolve().parent / "healthy-sample.log").read_text(encoding="utf-8")


class LiteralFinder(Protocol):
    """What the scanner asks of an engine; offsets are str offsets into the text given."""

    literals: tuple[str, ...]

    def line_starts(self, text: str, cut: int, start: int = 0) -> list[int]:
        """Starts, in order, of the lines of text[start:cut] that hold a literal or a shape
        (`start`: a line's start)."""

    def present(self, line: str) -> list[str]:
        """The literals the line holds, in the order of `literals`."""

    def present_at(self, start: int, line: str) -> list[str]:
        """`present(line)` for the line at `start` of the text last given to `line_starts`."""

    def backwards(self, text: str, end: int) -> Iterator[int]:
        """Starts of the literals' occurrences in text[:end] (each ending by `end`), last first."""


class PythonFinder:
    def __init__(self, literals: Sequence[str], shapes: Sequence[str] = ()) -> None:
        self.literals = tuple(dict.fromkeys(literals))
        self._order = {lit: i for i, lit in enumerate(self.literals)}
        upper, lower = choose_needles(list(self.literals))
        self._needles = {n: [lit for lit in self.literals if n in lit] for n in upper + lower}
        self._pattern = re.compile(trie_regex(upper, tuple(shapes)))
        # The regex reports the longest needle at a position; shorter needles it starts with are
        # there too.
        self._prefixes = {n: [p for p in upper if n.startswith(p)] for n in upper}
        self._find_needles = lower

    def line_starts(self, text: str, cut: int, start: int = 0) -> list[int]:
        hits: set[int] = set()
        find, rfind, search = text.find, text.rfind, self._pattern.search
        pos = start
        while (m := search(text, pos, cut)) is not None:
            hits.add(rfind("\n", 0, m.start()) + 1)
            pos = m.end()
        for needle in self._find_needles:
            at = find(needle, start, cut)
            while at >= 0:
                hits.add(rfind("\n", 0, at) + 1)
                at = find(needle, at + len(needle), cut)
        return sorted(hits)

    def present(self, line: str) -> list[str]:
        needles: list[str] = []
        pos = 0
        while (m := self._pattern.search(line, pos)) is not None:
            needles.extend(self._prefixes.get(m.group(), ()))  # a shape is no needle
            pos = m.start() + 1
        needles.extend(n for n in self._find_needles if n in line)
        found = {lit for n in dict.fromkeys(needles) for lit in self._needles[n] if lit in line}
        return sorted(found, key=self._order.__getitem__)

    def present_at(self, start: int, line: str) -> list[str]:
        return self.present(line)

    def backwards(self, text: str, end: int) -> Iterator[int]:
        return _rfind_all(text, self.literals, end)


def _rfind_all(text: str, literals: Sequence[str], end: int, below: int | None = None) -> Iterator[int]:
    """Starts below `below` (default: `end`) of occurrences ending by `end`, last first."""
    at = end if below is None else below
    while True:
        # The last occurrence of each literal that begins before `at` and ends by `end`.
        at = max((text.rfind(lit, 0, min(end, at - 1 + len(lit))) for lit in literals), default=-1)
        if at < 0:
            return
        yield at


# The backwards search looks at windows from the end, the first this many characters, each next
# one _BACK_GROWTH times larger: the last occurrence is usually near the end (a progress line is
# printed every step), and an absent literal costs about one pass.
_BACK_WINDOW = 4 << 10
_BACK_GROWTH = 8


class HyperscanFinder:
    def __init__(self, literals: Sequence[str], shapes: Sequence[str] = ()) -> None:
        import hyperscan

        self.literals = tuple(dict.fromkeys(lit for lit in literals if lit))
        self._lengths = [len(lit.encode("utf-8")) for lit in self.literals]
        expressions = [re.escape(lit).encode("utf-8") for lit in self.literals]
        # The shapes are ASCII regexes (see MARKER_SHAPES), so bytes and str agree on them.
        expressions += [shape.encode("ascii") for shape in shapes]
        flags = [0] * len(expressions)
        self._database = _hyperscan_database(hyperscan, expressions, flags)
        self.ids: dict[int, set[int]] = {}  # line start -> what it holds, from the last line_starts

    def line_starts(self, text: str, cut: int, start: int = 0) -> list[int]:
        encoded = _ascii_bytes(text)
        found: list[tuple[int, int]] = []
        self.ids = {}
        if encoded is not None:
            # A view, not a slice: no copy of the text (ASCII: offsets in bytes are offsets in text).
            self._database.scan(memoryview(encoded)[start:cut], match_event_handler=_note_id_end, context=found)
            if not found:
                return []
            # What each line holds, from the same pass: `present` need not search it again.
            rfind, ids = encoded.rfind, self.ids
            for id_, end in found:
                at = rfind(b"\n", 0, start + end) + 1
                if (held := ids.get(at)) is None:
                    ids[at] = {id_}
                else:
                    held.add(id_)
            return sorted(ids)
        data = text[start:cut].encode("utf-8", "replace")
        self._database.scan(data, match_event_handler=_note_id_end, context=found)
        if not found:
            return []
        rfind = data.rfind
        starts = sorted({rfind(b"\n", 0, end) + 1 for _, end in found})
        return [start + at for at in _char_offsets(data, starts)]

    def present_at(self, start: int, line: str) -> list[str]:
        """`present(line)` for the line at `start` of the text `line_starts` was last given, from
        what that search found there."""
        ids = self.ids.get(start)
        if ids is None:
            return self.present(line)
        count = len(self.literals)
        return [self.literals[i] for i in sorted(ids) if i < count]

    def present(self, line: str) -> list[str]:
        ids: set[int] = set()
        self._database.scan(line.encode("utf-8", "replace"), match_event_handler=_note_id, context=ids)
        count = len(self.literals)
        return [self.literals[i] for i in sorted(ids) if i < count]

    def backwards(self, text: str, end: int) -> Iterator[int]:
        longest = max(self._lengths, default=1)
        top, size = end, _BACK_WINDOW
        encoded = _ascii_bytes(text)
        while top > 0:
            low = max(0, top - size)
            # Scanned up to `longest` past the window's top, so an occurrence straddling it is
            # found; only occurrences beginning inside the window are given here.
            high = min(end, top + longest - 1)
            if encoded is not None:
                window: bytes | memoryview = memoryview(encoded)[low:high]  # no copy
            elif (piece := text[low:high]).isascii():
                window = piece.encode("ascii")
            else:  # offsets in bytes are not offsets in text: the slow way
                yield from _rfind_all(text, self.literals, end, top)
                return
            found: list[tuple[int, int]] = []
            self._database.scan(window, match_event_handler=_note_id_end, context=found)
            count = len(self.literals)
            starts = {low + e - self._lengths[i] for i, e in found if i < count}
            yield from sorted((s for s in starts if s < top), reverse=True)
            top, size = low, size * _BACK_GROWTH


# The last text searched, and its bytes where it is ASCII (offsets in bytes are then offsets in
# text): the scanner searches each buffer a window at a time, forwards and backwards. (One tuple,
# read and replaced whole: a thread never gets another text's bytes.)
_ENCODED: list[tuple[str, bytes | None]] = [("", b"")]


def _ascii_bytes(text: str) -> bytes | None:
    kept, encoded = _ENCODED[0]
    if kept is text:
        return encoded
    encoded = text.encode("ascii") if text.isascii() else None
    _ENCODED[0] = (text, encoded)
    return encoded


def _note_id(id_: int, _start: int, _end: int, _flags: int, ids: set[int]) -> None:
    ids.add(id_)


def _note_id_end(id_: int, _start: int, end: int, _flags: int, found: list[tuple[int, int]]) -> None:
    found.append((id_, end))


def _char_offsets(data: bytes, starts: list[int]) -> list[int]:
    """Byte offsets of line starts (each after a newline) as offsets in the decoded text."""
    offsets, byte_at, char_at = [], 0, 0
    for start in starts:
        char_at += len(data[byte_at:start].decode("utf-8", "replace"))
        byte_at = start
        offsets.append(char_at)
    return offsets


def _hyperscan_database(hyperscan: Any, expressions: list[bytes], flags: list[int]) -> Any:
    """The compiled database, from the cache when the same expressions were compiled before.

    Compiling takes ~75 ms; loading a serialized database ~20 µs. The entry is keyed by the
    expressions, their flags and hyperscan's version; one that does not load is recompiled.
    """
    name = f"hyperscan-{cache.key(getattr(hyperscan, '__version__', ''), expressions, flags)}.db"
    if (kept := cache.read(name)) is not None:
        with contextlib.suppress(Exception):  # truncated, another build's: compile instead
            loaded = hyperscan.loadb(kept, hyperscan.HS_MODE_BLOCK)
            loaded.scratch = hyperscan.Scratch(loaded)  # a loaded database comes without one
            return loaded
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=list(range(len(expressions))), flags=flags)
    cache.write(name, hyperscan.dumpb(database))
    return database


def literal_finder(literals: Sequence[str], shapes: Sequence[str] = (),
                   engine: str | None = None) -> LiteralFinder:
    """The fastest engine available: hyperscan, else the Python one (or TRIAGE_ENGINE=python)."""
    engine = engine or os.environ.get("TRIAGE_ENGINE") or "hyperscan"
    if engine == "hyperscan":
        try:
            return HyperscanFinder(literals, shapes)
        except ImportError:
            pass
    return PythonFinder(literals, shapes)
