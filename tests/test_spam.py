"""Crash-loop spam: one line printed thousands of times is one event with a count, read linearly.

No test here times anything: they check what comes out (folded counts, first and last line, the
verdict, a bounded number of events). bench/spam.py measures the speed.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest

import triage.parse.repeats as repeats
from triage import extract
from triage.api import analyze
from triage.ingest.open import Stream
from triage.model import Event, Kind
from triage.parse.paste import detect
from triage.parse.scan import Matcher
from triage.parse.source import scan_stream
from triage.report import render
from triage.rules import load_rules

ROOT = Path(__file__).resolve().parent.parent
TERMINATED = ("[rank0]:[E ProcessGroupNCCL.cpp:1414] [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group "
              "watchdog thread terminated with exception: NCCL error: remote process exited or there was "
              "a network error\n")
CUDA = "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
INFO = "node1:4243:4243 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
IB_WARN = ("node1:4243:4250 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
           "10.0.0.2<45678> with error 12, opcode 0, len 0, vendor err 129\n")


def _scan(text: str, name: str = "rank0.log") -> tuple[object, list[Event]]:
    return scan_stream(Matcher(load_rules()), Stream(name, io.BytesIO(text.encode())))


def test_a_crash_loop_is_one_event_counting_every_copy(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text(TERMINATED * 40_000)
    report = analyze([tmp_path])
    (event,) = report.events
    assert (event.count, event.evidence.line, event.last_line) == (40_000, 1, 40_000)
    (source,) = report.sources
    assert source.lines == 40_000 and source.events == 1
    assert not any("pasted" in note for note in source.notes)  # equal widths alone are no paste
    (tmp_path / "rank0.log").write_text(TERMINATED)
    once = analyze([tmp_path]).verdict
    v = report.verdict
    assert (v.status, v.phase, v.category, v.confidence) == (once.status, once.phase, once.category,
                                                             once.confidence)


def test_the_reports_show_the_count_and_the_last_line(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text(CUDA * 30_000)
    report = analyze([tmp_path])
    assert [c.rank for c in report.verdict.culprits] == [0]
    out = {}
    for fmt in ("terminal", "markdown", "html", "json"):
        buffer = io.StringIO()
        render(report, fmt, buffer, color=False)
        out[fmt] = buffer.getvalue()
    assert "\u00d730,000 (lines 1\u201330000)" in out["terminal"]
    assert "repeated 30,000 times, last at line 30000" in out["markdown"]
    assert "\u00d730,000" in out["html"]
    doc = json.loads(out["json"])
    (evidence,) = doc["verdict"]["culprits"][0]["evidence"]
    assert (evidence["line"], evidence["count"], evidence["last_line"]) == (1, 30_000, 30_000)
    assert doc["ranks"][0]["first_event"]["count"] == 30_000


def test_repeated_info_lines_are_no_failure(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text(INFO * 50_000)
    report = analyze([tmp_path])
    assert report.verdict.status.value == "no_failure"
    assert not [e for e in report.events if e.kind in (Kind.ERROR, Kind.TIMEOUT, Kind.PEER_ERROR)]
    assert report.sources[0].lines == 50_000


def test_a_repeated_nccl_warning_is_one_event() -> None:
    _, events = _scan(INFO * 3 + IB_WARN * 20_000 + INFO)
    (event,) = events
    assert event.rule_id == "nccl-ib-completion-error"
    assert (event.count, event.evidence.line, event.last_line) == (20_000, 4, 20_003)


def test_lines_with_a_changing_number_are_not_folded_but_all_read() -> None:
    lines = [f"[rank0]:[E1105 08:{i // 600 % 60:02d}:{i // 10 % 60:02d}.{i % 10}00000 140 "
             f"ProcessGroupNCCL.cpp:1414] {TERMINATED.split('] ', 1)[1]}" for i in range(3_000)]
    _, events = _scan("".join(lines))
    assert len(events) == 3_000 and all(e.count == 1 for e in events)
    assert [e.evidence.line for e in events[:3]] == [1, 2, 3]


def test_an_unexplained_line_repeated_is_counted_in_the_summary(tmp_path: Path) -> None:
    odd = "node1:4243:4250 [0] misc/thing.cc:12 NCCL WARN something odd happened to the frobnicator\n"
    (tmp_path / "rank0.log").write_text(odd * 10_000)
    report = analyze([tmp_path])
    assert len(report.events) == 1
    (entry,) = report.unexplained
    assert entry.count == 10_000 and entry.first.line == 1


def test_interleaved_repeats_fold_apart_and_keep_their_first_and_last_lines() -> None:
    text = "".join(CUDA + IB_WARN + f"step {i} loss 0.5\n" for i in range(5_000))
    _, events = _scan(text)
    counts = {e.rule_id: (e.count, e.evidence.line, e.last_line) for e in events if e.count > 1}
    assert counts["python-cuda-error"] == (5_000, 1, 14_998)
    assert counts["nccl-ib-completion-error"] == (5_000, 2, 14_999)
    assert len(events) < 20


def test_remembering_lines_changes_no_event(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every fixture log, each line written three times over: what the scan finds with lines
    # remembered (a copy counted without the rules) is what it finds trying every copy.
    logs = sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*.log") if p.stat().st_size < 200_000)[:60]
    assert logs
    for log in logs:
        lines = log.read_text(errors="replace").splitlines(keepends=True)
        text = "".join(line * 3 for line in lines) + "".join(lines)
        _, folded = _scan(text, log.name)
        with monkeypatch.context() as patch:
            patch.setattr(repeats, "MAX_LINES", 0)
            _, plain = _scan(text, log.name)
        assert _summary(folded) == _summary(plain), log


def _summary(events: list[Event]) -> Counter[tuple[object, ...]]:
    return Counter((e.rule_id, e.evidence.line, e.evidence.text, e.message, e.count, e.last_line,
                    tuple(sorted(e.fields.items())), e.identity.rank) for e in events)


def test_an_extract_keeps_the_count_and_the_last_line() -> None:
    info, events = _scan(CUDA * 1_000)
    assert events and all((e.count, e.last_line) == (1_000, 1_000) for e in events)
    line = extract.source_to_json(info, events)  # type: ignore[arg-type]
    _, back = extract.source_from_json(json.loads(json.dumps(line)))
    assert back == events


def test_a_file_of_identical_lines_is_no_paste_but_a_hard_wrapped_one_is() -> None:
    assert detect(TERMINATED * 300) is None
    # One long line per record, cut at 80 columns, no quote prefix.
    records = [f"2024-05-01 10:00:{i:02d} worker {i} " + " ".join(f"token{j}" for j in range(20 + i % 7))
               for i in range(60)]
    wrapped = "".join(r[k:k + 80] + "\n" for r in records for k in range(0, len(r), 80))
    paste = detect(wrapped)
    assert paste is not None and paste.width == 80 and paste.prefix == ""
    # A fixed-width table (every row as wide, each beginning alike) is no paste either.
    table = "".join(f"rank {i:5d} | step {i * 10:8d} | loss {i / 7:12.6f} | {'ok':>30s}\n" for i in range(100))
    assert detect(table) is None
