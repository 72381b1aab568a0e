"""Hostile inputs to the scanner, the identity stage and the job model: bounded time and memory."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from triage.api import analyze
from triage.identity import resolve
from triage.job import DENSE_RANKS, build_job
from triage.model import Event, Identity, SourceInfo
from triage.parse import scan
from triage.parse.scan import MAX_LINE, Matcher, RegexBudget, ScanStats, scan_text
from triage.rules import RuleError, load_rules

MATCHER = Matcher(load_rules())


def _scan(pieces: Iterable[str], stats: ScanStats) -> list[Event]:
    return list(scan_text(MATCHER, "s.log", Identity(), pieces, stats))


def test_a_line_without_newline_is_cut_in_linear_time_and_noted() -> None:
    def pieces() -> Iterator[str]:
        yield "[rank0]: hello\n"
        for _ in range(64):  # 64 MiB of one line, a MiB at a time
            yield "x" * (1 << 20)
        yield "\n[rank1]: RuntimeError: boom\n"

    stats = ScanStats()
    tracemalloc.start()
    try:
        events = _scan(pieces(), stats)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Bounded memory: a piece or two at a time, never the line (re-reading a growing line is
    # also what made it quadratic in time).
    assert peak < 8 << 20, f"{peak >> 20} MiB held for a 64 MiB line"
    assert stats.lines == 3 and stats.cut_lines == 1
    assert [e.evidence.line for e in events] == [3]
    assert stats.notes() == [f"1 line longer than {MAX_LINE} characters was cut to that length"]


def test_a_long_unterminated_last_line_is_cut_too() -> None:
    stats = ScanStats()
    _scan(["a" * (MAX_LINE + 10)] + ["b" * 1000] * 5, stats)
    assert stats.lines == 1 and stats.cut_lines == 1


def test_the_regex_budget_of_a_source_drops_the_rules_that_spent_it() -> None:
    stats = ScanStats(budget=RegexBudget(limit=0.0))
    text = "".join(f"[rank{i}]: RuntimeError: boom {i}\n" for i in range(3))
    events = _scan([text], stats)
    assert stats.budget.exceeded_at == 1 and stats.budget.dropped
    assert not any(e.rule_id in stats.budget.dropped and e.evidence.line > 1 for e in events)
    (note,) = stats.notes()
    assert note.startswith("regex time budget (0 s) exceeded at line 1: rule")


def test_a_source_note_says_a_line_was_cut_and_the_report_stays_small(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    path.write_text("node1:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 100000000 cudaDev 0 busId 1 - "
                    "Init COMPLETE\n[rank0]: RuntimeError: boom\n" + "y" * (4 << 20))
    report = analyze([path])
    (source,) = report.sources
    assert any("was cut" in n for n in source.notes)
    assert report.world_size == 100_000_000 and len(report.ranks) == 1


def test_a_huge_stated_world_size_allocates_no_rank_per_rank() -> None:
    tracemalloc.start()
    try:
        job = build_job([], [], world_size=100_000_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{peak >> 20} MiB for a number"  # a rank per rank would be gigabytes
    assert job.world_size == 100_000_000 and job.ranks == {}
    assert job.unlisted == [(0, 99_999_999)]


def test_a_world_size_within_the_dense_bound_lists_every_rank() -> None:
    job = build_job([], [], world_size=DENSE_RANKS)
    assert len(job.ranks) == DENSE_RANKS and job.unlisted == []


def test_an_impossible_rank_base_gives_no_negative_rank_and_says_why() -> None:
    a = SourceInfo(name="node01/attempt_0/1000/stderr.log", identity=Identity(), head_ranks={3: 1})
    b = SourceInfo(name="node01/attempt_0/1/stderr.log", identity=Identity())
    writers = resolve([], [a, b], None)
    assert writers.of_source(a.name).rank == 3
    assert writers.of_source(b.name).rank is None
    assert any("would be rank -996" in c for c in b.conflicts)


def test_a_huge_stated_world_is_reported_as_ranges_not_listed(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    log.write_text("node1:1:1 [0] NCCL INFO comm 0x55 rank 0 nranks 100000000 cudaDev 0 nvmlDev 0 busId 1000 "
                   "commId 0xabc - Init COMPLETE\n"
                   "[rank0]:[E1122 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
                   "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                   "Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n")
    verdict = analyze([log]).verdict
    assert any(note.startswith("logs of ranks 1-99999999 are missing") for note in verdict.missing)


def test_a_catastrophic_user_regex_is_stopped_by_the_budget_and_the_rest_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A valid user rule whose regex backtracks exponentially on the lines its literal finds, in a
    # real analysis: its time is capped per line and per source, it is dropped for the rest of
    # the source (which says so), and the built-in rules still read the same file to its end.
    monkeypatch.setattr(scan, "REGEX_BUDGET_S", 0.3)  # the 5 s default, shortened for the suite
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "slow-aaaa.yaml").write_text(
        "id: slow-aaaa\ntitle: catastrophic\nfamily: python\nkind: error\nphase: execution\n"
        "severity: error\nprefilter: [aaaa]\nregex: '(a+)+$'\nmessage: slow\n"
        "explain: {meaning: x, next_steps: x}\nexamples: {match: [aaaa], nomatch: ['aaaa!']}\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    # Lines that differ (a counter): a copy of one line is not searched again (triage.parse.repeats).
    (logs / "rank-0.log").write_text("a" * 30 + "!\n" * 1 + "".join(f"{'a' * 30}!{i}\n" for i in range(20000))
                                     + "[rank0]: RuntimeError: boom\n")
    report = analyze([logs], rules_dirs=[rules])
    (source,) = report.sources
    (note,) = [n for n in source.notes if n.startswith("regex time budget")]
    assert note.startswith("regex time budget (0.3 s) exceeded at line ")
    assert "slow-aaaa" in note and "not tried on the rest of this source" in note
    assert int(note.split("exceeded at line ")[1].split(":")[0]) < 20000  # long before the end
    assert [e.evidence.line for e in report.events if e.rank == 0 and "boom" in e.message] == [20002]


def test_a_user_rule_with_a_lone_surrogate_escape_is_refused(tmp_path: Path) -> None:
    # "\ud800" in a double-quoted YAML string is a character no report can be written in.
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "odd-text.yaml").write_text(
        "id: odd-text\ntitle: \"odd \\ud800 text\"\nfamily: python\nkind: error\nphase: execution\n"
        "severity: error\nprefilter: [boom]\nregex: 'boom'\nmessage: boom\n"
        "explain: {meaning: x, next_steps: x}\nexamples: {match: [boom], nomatch: ['bo om boom?']}\n")
    with pytest.raises(RuleError, match="lone surrogate"):
        load_rules([rules])
