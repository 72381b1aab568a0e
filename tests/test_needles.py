"""The two engines of the first pass (hyperscan, and the Python fallback) give the same answers.

Every line triage looks at is found by one of them, so a line one finds and the other misses is a
verdict that depends on where triage was installed. Checked on real fixture logs and on generated
text made of rule literals, error shapes, non-ASCII characters and newlines.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.api import analyze
from triage.parse.marks import MARKER_SHAPES
from triage.parse.needles import HyperscanFinder, PythonFinder, literal_finder
from triage.parse.scan import Matcher
from triage.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]
SHAPES = [re.compile(shape) for shape in MARKER_SHAPES]
LAST_LINE_LITERALS = ["step", "Step", "iteration", "iter "]


@cache
def _finders() -> tuple[PythonFinder, HyperscanFinder]:
    literals = list(Matcher(load_rules(), engine="python").by_literal)
    return PythonFinder(literals, MARKER_SHAPES), HyperscanFinder(literals, MARKER_SHAPES)


@cache
def _fragments() -> list[str]:
    literals = list(_finders()[0].literals)
    return [*literals[::7], "[E709 17:05:38.1 ProcessGroupNCCL.cpp:1]", "E0709 10:11:12",
            "[E ProcessGroupNCCL.cpp:414]", "EI0002", "\n", "\n", "é", "日本", "\ufffd", " ", "x"]


text_strategy = st.lists(st.one_of(st.sampled_from(range(400)), st.text(max_size=6)), max_size=60)


def _text(parts: list[int | str]) -> str:
    fragments = _fragments()
    return "".join(fragments[p % len(fragments)] if isinstance(p, int) else p for p in parts)


@settings(max_examples=200, deadline=None)
@given(parts=text_strategy, cut_at=st.floats(0, 1))
def test_engines_find_the_same_lines_and_literals(parts: list[int | str], cut_at: float) -> None:
    python, fast = _finders()
    text = _text(parts)
    cut = int(len(text) * cut_at)
    # Hyperscan finds exactly the lines holding a literal or a shape within text[:cut]; the Python
    # engine's needles are pieces of literals, so it may find more (the scanner then finds no rule).
    exact = []
    start = 0
    for line in text[:cut].split("\n"):
        if any(lit in line for lit in python.literals) or any(s.search(line) for s in SHAPES):
            exact.append(start)
        start += len(line) + 1
    assert fast.line_starts(text, cut) == exact
    assert set(python.line_starts(text, cut)) >= set(exact)
    for line in text.split("\n"):
        assert fast.present(line) == python.present(line)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.one_of(st.sampled_from([*LAST_LINE_LITERALS, "\n", "é", "ste", "p"]),
                                st.text(max_size=5)), max_size=80),
       end_at=st.floats(0, 1))
def test_engines_walk_back_over_the_same_occurrences(parts: list[str], end_at: float) -> None:
    text = "".join(parts) * 3
    end = int(len(text) * end_at)
    python = PythonFinder(LAST_LINE_LITERALS)
    fast = HyperscanFinder(LAST_LINE_LITERALS)
    expected = sorted({i for lit in LAST_LINE_LITERALS for i in range(len(text))
                       if text.startswith(lit, i) and i + len(lit) <= end}, reverse=True)
    assert list(python.backwards(text, end)) == expected
    assert list(fast.backwards(text, end)) == expected


def test_backwards_crosses_windows_of_a_long_text() -> None:
    # Occurrences straddling the window boundaries (4 KiB, then 32 KiB, 256 KiB ... from the end),
    # and none in the last windows.
    tail = "z" * (4096 + 32768 - 2)
    text = "x" * 500 + "iteration" + "y" * 300000 + "step" + tail
    fast = HyperscanFinder(LAST_LINE_LITERALS)
    assert list(fast.backwards(text, len(text))) == [500 + 9 + 300000, 500]
    text = "x" * 500 + "iteration" + "y" * 3000 + "step" + "z" * 4094
    assert list(fast.backwards(text, len(text))) == [500 + 9 + 3000, 500]


@pytest.mark.parametrize("fixture", ["nccl24-silent-rank11", "real-gloo-hang-rank2", "ascendfd-transport-init"])
def test_engines_give_the_same_report_on_fixtures(fixture: str, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = ROOT / "tests" / "fixtures" / fixture
    reports = []
    for engine in ("python", "hyperscan"):
        monkeypatch.setenv("TRIAGE_ENGINE", engine)
        reports.append(analyze([logs]))
    python, fast = reports
    assert [(e.rule_id, e.evidence.source, e.evidence.line) for e in fast.events] == [
        (e.rule_id, e.evidence.source, e.evidence.line) for e in python.events]
    assert fast.verdict.status == python.verdict.status
    assert [c.rank for c in fast.verdict.culprits] == [c.rank for c in python.verdict.culprits]


def test_engine_is_chosen_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_ENGINE", "python")
    assert isinstance(literal_finder(["abc"]), PythonFinder)
    monkeypatch.delenv("TRIAGE_ENGINE")
    assert isinstance(literal_finder(["abc"]), HyperscanFinder)


def test_a_corrupt_cached_database_is_recompiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path))
    HyperscanFinder(["Watchdog caught"])
    (cached,) = tmp_path.glob("hyperscan-*.db")
    cached.write_bytes(cached.read_bytes()[:100])  # truncated, as a full disk leaves it
    finder = HyperscanFinder(["Watchdog caught"])
    assert finder.line_starts("a\nWatchdog caught x\n", 20) == [2]
    assert len(cached.read_bytes()) > 100, "rewritten whole"
