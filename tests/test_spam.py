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

import triage.ingest.open as ingest_open
import triage.parse.repeats as repeats
from triage import extract
from triage.api import analyze
from triage.ingest.open import Stream
from triage.model import Event, Kind, Report
from triage.parse import copies
from triage.parse.clock import stamp_spans
from triage.parse.paste import detect
from triage.parse.repeats import CopyShape
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


# --- a crash loop whose every line carries its own time -------------------------------------------

_WATCHDOG = ("ProcessGroupNCCL.cpp:1414] [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread "
             "terminated with exception: NCCL error: remote process exited or there was a network error")


def _clock(i: int) -> tuple[int, int, int]:
    s = 36_000 + i // 7  # from 10:00:00, seven lines a second
    return s // 3600, s // 60 % 60, s % 60


def _c10(i: int, prefix: str = "[rank0]:") -> str:
    h, m, s = _clock(i)
    return f"{prefix}[E1125 {h:02d}:{m:02d}:{s:02d}.{i % 7}23456789 {_WATCHDOG}\n"


def _nccl_warn(i: int) -> str:
    h, m, s = _clock(i)
    return f"[2025-05-02 {h:02d}:{m:02d}:{s:02d}] {IB_WARN.replace('4243:4250', '4412:4590')}"


def _glog(i: int) -> str:
    h, m, s = _clock(i)
    return (f"E1125 {h:02d}:{m:02d}:{s:02d}.{i % 7}00000 4412 torch/distributed/elastic/multiprocessing/api.py:"
            f"881] failed (exitcode: 1) local_rank: 0 (pid: 4412) of binary: /usr/bin/python\n")


SHAPES = {
    "c10 with [rank0]:": _c10,
    "c10 alone": lambda i: _c10(i, ""),
    "torchrun tee": lambda i: _c10(i, "[default0]:[rank0]:"),
    "NCCL WARN with a date": _nccl_warn,
    "glog": _glog,
}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_timestamped_crash_loop_is_one_event_from_its_first_time_to_its_last(shape: str, tmp_path: Path) -> None:
    line = SHAPES[shape]
    n = 40_000
    (tmp_path / "rank0.log").write_text("".join(line(i) for i in range(n)))
    report = analyze([tmp_path])
    (source,) = report.sources
    assert source.lines == n and not source.notes  # no regex budget spent out, nothing cut
    once, _ = _once(tmp_path, line(0))
    assert report.events and len(report.events) == len(once.events)
    for event in report.events:
        assert (event.count, event.evidence.line, event.last_line) == (n, 1, n)
        assert event.evidence.text == line(0).rstrip("\n")
    _, events = _scan("".join(line(i) for i in range(n)))
    first = _scan(line(0))[1][0].time
    last = _scan(line(n - 1))[1][0].time
    assert first is not None and last is not None and last - first > 5_000
    assert {(e.time, e.last_time) for e in events} == {(first, last)}
    v, w = report.verdict, once.verdict
    assert (v.status, v.phase, v.category, v.confidence, [c.rank for c in v.culprits]) == \
        (w.status, w.phase, w.category, w.confidence, [c.rank for c in w.culprits])


def _once(tmp_path: Path, line: str) -> tuple[Report, Path]:
    folder = tmp_path / "once"
    folder.mkdir(exist_ok=True)
    (folder / "rank0.log").write_text(line)
    return analyze([folder]), folder


@pytest.mark.parametrize("shape", SHAPES)
def test_remembering_a_timestamped_line_changes_no_event(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "".join(SHAPES[shape](i) + (INFO if i % 5 == 0 else "") for i in range(2_000))
    _, folded = _scan(text)
    with monkeypatch.context() as patch:
        patch.setattr(repeats, "MAX_LINES", 0)
        _, plain = _scan(text)
    assert _summary(folded) == _summary(plain)


def test_a_counter_in_the_message_keeps_lines_apart_but_reads_them_all() -> None:
    lines = [f"[rank0]:[E1105 08:{i // 600 % 60:02d}:{i // 10 % 60:02d}.{i % 10}00000 140 ProcessGroupNCCL.cpp:"
             f"616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={i}, "
             f"OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before "
             f"timing out.\n" for i in range(3_000)]
    info, events = _scan("".join(lines))
    timeouts = [e for e in events if e.kind is Kind.TIMEOUT]
    assert len(timeouts) == 3_000 and all(e.count == 1 for e in timeouts)
    assert [e.fields["seq"] for e in timeouts[:3]] == ["0", "1", "2"]
    assert not info.notes  # type: ignore[attr-defined]


def test_the_same_line_hours_later_is_another_episode() -> None:
    # A restart (or a later run appended): its copies are a new event, so runs hours apart stay apart.
    text = "".join(_c10(i) for i in range(1_000)) + "".join(_c10(i + 7 * 3 * 3600) for i in range(1_000))
    _, events = _scan(text)
    assert [(e.count, e.evidence.line, e.last_line) for e in events] == [(1_000, 1, 1_000), (1_000, 1_001, 2_000)]
    assert events[1].time is not None and events[0].last_time is not None
    assert events[1].time - events[0].last_time > repeats.EPISODE_GAP_S


def test_a_rule_that_reads_another_clock_is_tried_on_every_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    # The slurm line's time is a field of its own: what the line memory recalls must be what the
    # rules would find, copy by copy.
    text = "".join(f"slurmstepd: error: *** STEP 123.0 ON node1 CANCELLED AT 2024-05-01T10:{i // 60 % 60:02d}:"
                   f"{i % 60:02d} ***\n" for i in range(600))
    _, folded = _scan(text)
    with monkeypatch.context() as patch:
        patch.setattr(repeats, "MAX_LINES", 0)
        _, plain = _scan(text)
    assert folded and _summary(folded) == _summary(plain)


def test_fixture_lines_repeated_at_other_times_fold_as_tried_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every fixture log, each line followed by two copies whose time stamps read otherwise.
    logs = sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*.log") if p.stat().st_size < 200_000)[:60]
    for log in logs:
        lines = log.read_text(errors="replace").splitlines(keepends=True)
        text = "".join(line + _later(line, 1) + _later(line, 2) for line in lines)
        _, folded = _scan(text, log.name)
        with monkeypatch.context() as patch:
            patch.setattr(repeats, "MAX_LINES", 0)
            _, plain = _scan(text, log.name)
        assert _summary(folded) == _summary(plain), log


def _later(line: str, step: int) -> str:
    """The line with the last digit of each of its time stamps moved on by `step`."""
    out = list(line)
    for _, end in stamp_spans(line):
        at = end - 1
        while at >= 0 and not out[at].isdigit():
            at -= 1
        out[at] = str((int(out[at]) + step) % 10)
    return "".join(out)


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


def test_copies_counted_in_bulk_are_counted_as_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Runs of byte-identical lines are counted in bulk (copies.count_exact), also where a run
    # straddles a window or ends a buffer: the same events as trying every copy.
    logs = sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*.log") if p.stat().st_size < 20_000)[:12]
    assert logs
    for log in logs:
        lines = log.read_text(errors="replace").splitlines(keepends=True)
        text = "".join(line * (7 + i % 90) for i, line in enumerate(lines))
        _, folded = _scan(text, log.name)
        with monkeypatch.context() as patch:
            patch.setattr(repeats, "MAX_LINES", 0)
            _, plain = _scan(text, log.name)
        assert _summary(folded) == _summary(plain), log
    _, (event,) = _scan("header line\n" + TERMINATED * 25_000 + "footer\n")
    assert (event.count, event.evidence.line, event.last_line) == (25_000, 2, 25_001)


def test_copies_of_other_times_counted_in_bulk_are_counted_as_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Runs of lines that differ only in their stamps' digits are counted in bulk too
    # (copies.count_stamped): runs that straddle windows and buffers, cross an hour, end on a line
    # one digit or one character otherwise: the same events as trying every copy.
    logs = sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*.log") if p.stat().st_size < 20_000)[:12]
    assert logs
    for log in logs:
        lines = log.read_text(errors="replace").splitlines(keepends=True)
        text = "".join(line + "".join(_later(line, step) for step in range(1, 7 + i % 90))
                       for i, line in enumerate(lines))
        _, folded = _scan(text, log.name)
        with monkeypatch.context() as patch:
            patch.setattr(repeats, "MAX_LINES", 0)
            _, plain = _scan(text, log.name)
        assert _summary(folded) == _summary(plain), log
    # Buffers of 64 KiB instead of 1 MiB: 4,000 lines straddle as many as 20,000 would.
    monkeypatch.setattr(ingest_open, "CHUNK", 64 << 10)
    for shape in SHAPES.values():
        loop = [shape(i) for i in range(3 * 3600 - 6_000, 3 * 3600 + 6_000, 3)]  # over an hour's turn
        loop[1_000] = loop[1_000].replace("0", "1", 1) if "[E" in loop[1_000] else loop[1_000] + "x"
        loop[1_800] = loop[1_800].replace("Rank 0", "Rank 1")
        loop[2_400] = loop[2_400].replace("\n", " \n")
        loop[2_800] = shape(7 * 3600)  # hours later: another episode
        text = "".join(loop)
        assert len(text.encode()) > 5 * ingest_open.CHUNK
        _, folded = _scan(text)
        with monkeypatch.context() as patch:
            patch.setattr(repeats, "MAX_LINES", 0)
            _, plain = _scan(text)
        assert _summary(folded) == _summary(plain), shape(0)


def test_a_run_is_all_copies_only_where_every_line_has_the_shape() -> None:
    loop = [_c10(i) for i in range(50)]
    line = loop[0].rstrip("\n")
    ((start, end),) = stamp_spans(line)
    hour = line.index(":", start) + 1  # the date and hour stay as written
    varies = [j for j in range(hour, end) if line[j].isdigit()]
    shape = CopyShape("", varies[0], varies[-1] + 1,
                      tuple((j, None if j in varies else line[j]) for j in range(varies[0], varies[-1] + 1)))

    def all_copies(lines: list[str]) -> bool:
        return copies.all_copies(loop[0] + "".join(lines), line, len(loop[0]), len(lines), shape)

    assert all_copies(loop[1:])
    assert not all_copies([*loop[1:10], loop[10].replace("PG ID 0", "PG ID 1"), *loop[11:]])
    assert not all_copies([*loop[1:10], loop[10].replace(".", ":", 1), *loop[11:]])  # not a digit's place
    assert not all_copies([*loop[1:10], loop[10].replace("E1125", "E1126"), *loop[11:]])  # another day
    assert not all_copies([*loop[1:10], loop[10].replace(" 10:", " 11:"), *loop[11:]])  # another hour
    assert not all_copies([*loop[1:10], loop[10][:40] + "\n" + loop[10][41:], *loop[11:]])  # one line two
    assert not all_copies([*loop[1:10], loop[10].replace("[rank0]", "[rank10]"), loop[11][1:], *loop[12:]])
    assert not all_copies([*loop[1:-1], loop[-1].replace("error\n", "errors")])


def _summary(events: list[Event]) -> Counter[tuple[object, ...]]:
    return Counter((e.rule_id, e.evidence.line, e.evidence.text, e.message, e.count, e.last_line, e.time,
                    e.last_time, tuple(sorted(e.fields.items())), e.identity.rank) for e in events)


def test_an_extract_keeps_the_count_and_the_last_line_and_time() -> None:
    for text, last_time in ((CUDA * 1_000, None), ("".join(_nccl_warn(i) for i in range(1_000)), 1746180142.0)):
        info, events = _scan(text)
        assert events and all((e.count, e.last_line, e.last_time) == (1_000, 1_000, last_time) for e in events)
        line = extract.source_to_json(info, events)  # type: ignore[arg-type]
        assert all(e.get("last_time") == last_time for e in line["events"])
        _, back = extract.source_from_json(json.loads(json.dumps(line)))
        assert back == events and [e.last_time for e in back] == [last_time] * len(events)


@pytest.mark.parametrize("bad", [{"last_time": "10:00"}, {"last_time": 5.0, "time": None}, {"last_time": 5.0, "count": 1},
                                 {"last_time": float("inf")}])
def test_an_extract_refuses_a_last_time_that_cannot_be(bad: dict[str, object]) -> None:
    info, events = _scan(_nccl_warn(0) * 3)
    line = extract.source_to_json(info, events)  # type: ignore[arg-type]
    line["events"][0].update({"time": 1.0, "count": 3}, **{k: v for k, v in bad.items() if v is not None})
    for key in [k for k, v in bad.items() if v is None]:
        del line["events"][0][key]
    with pytest.raises(extract.Malformed, match="last_time"):
        extract.event_from_json(line["events"][0], "rank0.log", "events[0]")


def test_the_reports_show_when_a_crash_loop_began_and_ended(tmp_path: Path) -> None:
    (tmp_path / "rank3.log").write_text("".join(_nccl_warn(i) for i in range(7_000)))
    report = analyze([tmp_path])
    out = {}
    for fmt in ("terminal", "markdown", "html", "json"):
        buffer = io.StringIO()
        render(report, fmt, buffer, color=False)
        out[fmt] = buffer.getvalue()
    assert "\u00d77,000 (lines 1\u20137000) from 10:00:00 to 10:16:39" in out["terminal"]
    assert "repeated 7,000 times, last at line 7000, from 10:00:00 to 10:16:39" in out["markdown"]
    assert "from 10:00:00 to 10:16:39" in out["html"]
    doc = json.loads(out["json"])
    (evidence,) = doc["verdict"]["culprits"][0]["evidence"]
    assert (evidence["count"], evidence["last_line"], evidence["last_time"]) == (7_000, 7_000, "2025-05-02T10:16:39")


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
