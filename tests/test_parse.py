"""The small pieces the scanner and the job picture rely on, on real line and path shapes."""

from __future__ import annotations

import calendar
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import triage.api
from triage.api import analyze
from triage.ingest.identity import identity_from_path
from triage.model import Identity
from triage.parse.clock import parse_time
from triage.parse.needles import choose_needles
from triage.parse.prefix import peel
from triage.parse.scan import Matcher, ScanStats, scan_text
from triage.ranks import fmt_ranks, parse_ranks
from triage.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]
WATCHDOG = ("[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600000 milliseconds before timing out.")


@pytest.mark.parametrize(("line", "rank", "local_rank", "host", "pid"), [
    ("[rank11]:[E709 17:05:38.1 x.cpp:1] m", 11, None, None, None),
    ("[default3]:[rank11]:[E709 17:05:38.1 x.cpp:1] m", 11, 3, None, None),
    ("[rank3]:[rank11]:[E709 17:05:38.1 x.cpp:1] m", 11, 3, None, None),  # tee role "rank"
    (" 5: [default1]:step 3", None, 1, None, None),  # srun per node: label is the node
    ("12: hello", 12, None, None, None),  # srun --label, one task per rank
    ("[1,6]<stderr>:[rank6]: Traceback", 6, None, None, None),
    ("(RayWorkerWrapper pid=270291, ip=10.1.2.3) [rank3]:[E219 1:1:1.1 x:1] m", 3, None, "10.1.2.3", 270291),
    ("2024-05-01T10:00:00.123456789Z stderr F [rank2]: boom", 2, None, None, None),
    ("[pod/train-worker-3/trainer] [rank9]: boom", 9, None, "train-worker-3", None),
])
def test_launcher_prefixes_are_peeled(line: str, rank: int | None, local_rank: int | None,
                                      host: str | None, pid: int | None) -> None:
    peeled = peel(line)
    ident = peeled.identity
    assert (ident.rank, ident.local_rank, ident.host, ident.pid) == (rank, local_rank, host, pid)


def test_peel_keeps_the_c10_envelope_and_drops_colours() -> None:
    assert peel("\x1b[31m[rank1]:[E709 17:05:38.1 x.cpp:1] m\x1b[0m").text == "[E709 17:05:38.1 x.cpp:1] m"
    assert peel("step 1\rstep 2\rstep 3").text == "step 3"


@pytest.mark.parametrize(("text", "expected", "has_year"), [
    ("[rank0]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632]", (2000, 7, 9, 17, 5, 38), False),
    ("[E1218 01:02:03.1 x.cpp:1]", (2000, 12, 18, 1, 2, 3), False),
    ("E0606 09:10:14.926000 2888264 torch/distributed/elastic/multiprocessing/api.py:988]",
     (2000, 6, 6, 9, 10, 14), False),
    ("[2024-03-12 02:29:19,601] torch.distributed.elastic", (2024, 3, 12, 2, 29, 19), True),
    ("[ERROR] HCCL(3035894,python):2024-11-05-21:06:03.662.708 [x.cc:1]", (2024, 11, 5, 21, 6, 3), True),
    ("  time      : 2026-08-13_08:21:19", (2026, 8, 13, 8, 21, 19), True),
])
def test_clocks_of_every_family(text: str, expected: tuple[int, ...], has_year: bool) -> None:
    parsed = parse_time(text)
    assert parsed is not None
    seconds, year_given = parsed
    assert year_given is has_year
    assert int(seconds) == calendar.timegm((*expected, 0, 0, 0))


def test_a_line_without_a_clock() -> None:
    assert parse_time("step 12 loss 2.31") is None


@pytest.mark.parametrize(("path", "rank", "local_rank", "host"), [
    ("job/gpu-node-07/none_x1/attempt_0/3/stderr.log", None, 3, "gpu-node-07"),
    ("logs/rank-0013.log", 13, None, None),
    ("logs/rank3.log.gz", 3, None, None),
    ("out/train-123456-5.out", 5, None, None),
    ("logs/node12.log", None, None, "node12"),
    ("nccl.node01.12345", None, None, "node01"),
    ("host_3_10.0.0.4/worker.log", None, None, "10.0.0.4"),
    ("fixtures/hang-rank2/logs/node01/console.log", None, None, "node01"),  # job folder says nothing
    ("bundle.tar.gz!job/rank_7/stdout.log", 7, None, None),
])
def test_identity_from_paths(path: str, rank: int | None, local_rank: int | None,
                             host: str | None) -> None:
    ident = identity_from_path(path)
    assert (ident.rank, ident.local_rank, ident.host) == (rank, local_rank, host)


def test_rank_lists_and_their_display() -> None:
    assert parse_ranks("[1,3,5,7,]") == [1, 3, 5, 7]
    assert parse_ranks("ranks [1, 2] are") == [1, 2]
    assert parse_ranks("0-3, 9") == [0, 1, 2, 3, 9]
    assert fmt_ranks([9, 0, 1, 2, 3, 12]) == "0-3, 9, 12"


def test_needles_cover_every_literal_and_stay_few() -> None:
    literals = sorted({lit for r in load_rules() for lit in r.prefilter})
    upper, found = choose_needles(literals)
    assert all(any(n in lit for n in upper + found) for lit in literals)
    assert len(found) <= 8, found  # each costs a pass over the text


def test_a_line_split_across_reads_and_a_hard_wrapped_line() -> None:
    matcher = Matcher(load_rules())
    # Wrapped after the rule's literal: the rest of the message is on the next line.
    cut = WATCHDOG.index("WorkNCCL(") + 20
    text = "noise\n" * 1000 + WATCHDOG[:cut] + "\n" + WATCHDOG[cut:] + "\nmore noise\n"
    pieces = [text[i:i + 997] for i in range(0, len(text), 997)]  # lines straddle the pieces
    events = list(scan_text(matcher, "x.log", Identity(), pieces, ScanStats()))
    hits = [e for e in events if e.rule_id == "pytorch-watchdog-timeout"]
    assert len(hits) == 1
    assert hits[0].evidence.line == 1001
    assert hits[0].fields["seq"] == "7"


def test_parallel_and_serial_reading_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    logs = ROOT / "tests" / "fixtures" / "nccl24-silent-rank11" / "logs"
    serial = analyze([logs])
    monkeypatch.setattr(triage.api, "PARALLEL_MIN_BYTES", 1)
    parallel = analyze([logs])
    assert [(s.name, s.lines, s.events) for s in parallel.sources] == [
        (s.name, s.lines, s.events) for s in serial.sources]
    assert [c.rank for c in parallel.verdict.culprits] == [c.rank for c in serial.verdict.culprits] == [11]


def test_zip_archives_are_read_in_place(tmp_path: Path) -> None:
    logs = ROOT / "tests" / "fixtures" / "real-gloo-hang-rank2" / "logs"
    archive = tmp_path / "logs.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(logs.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(logs))
    report = analyze([archive])
    assert [c.rank for c in report.verdict.culprits] == [2]
    assert all("!" in s.name for s in report.sources)


@pytest.mark.slow
def test_the_wheel_ships_every_rule(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path),
                    str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("triage-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.split("/")[-1] for n in names if n.startswith("triage/rules/")}
    assert shipped == {p.name for p in (ROOT / "rules").rglob("*.yaml")}
    assert "triage/schemas/report-v1.schema.json" in names
    assert "triage/parse/healthy-sample.log" in names


def test_zstd_compressed_logs(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    logs = ROOT / "tests" / "fixtures" / "real-gloo-hang-rank2" / "logs"
    for path in sorted(logs.rglob("*.log")):
        target = tmp_path / path.relative_to(logs)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Two frames per file: a reader that stops at the first frame would lose the second half.
        data = path.read_bytes()
        half = len(data) // 2
        compressor = zstandard.ZstdCompressor()
        target.with_suffix(".zst").write_bytes(
            compressor.compress(data[:half]) + compressor.compress(data[half:]))
    report = analyze([tmp_path])
    assert [c.rank for c in report.verdict.culprits] == [2]
    plain = analyze([logs])
    assert sum(s.lines for s in report.sources) == sum(s.lines for s in plain.sources)


def test_a_symlink_loop_does_not_trap_the_walk(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text(WATCHDOG.replace("Rank 3", "Rank 0") + "\n")
    (tmp_path / "loop").symlink_to(tmp_path, target_is_directory=True)
    report = analyze([tmp_path], world_size=2)
    assert [s.name for s in report.sources] == [str(tmp_path / "rank0.log")]
    assert [c.rank for c in report.verdict.culprits] == [1]


def test_a_subgroup_rank_is_not_taken_for_a_global_rank(tmp_path: Path) -> None:
    # A file with no rank in its name or prefixes: `Rank 1` of PG GUID 3 (tp) is not global rank 1.
    line = ("[E709 17:05:38.1 ProcessGroupNCCL.cpp:1709] [PG ID 2 PG GUID 3(tp) Rank 1] Timeout at "
            "NCCL work: 7, last enqueued NCCL work: 7, last completed NCCL work: 6.\n")
    (tmp_path / "worker.log").write_text(line)
    report = analyze([tmp_path])
    assert [e.identity.rank for e in report.events] == [None]
    default = line.replace("[PG ID 2 PG GUID 3(tp) Rank 1]", "[PG ID 0 PG GUID 0(default_pg) Rank 1]")
    (tmp_path / "worker.log").write_text(default)
    assert [e.identity.rank for e in analyze([tmp_path]).events] == [1]


def test_a_pasted_log_is_put_back_together(tmp_path: Path) -> None:
    # A console quoted into an issue: `> ` on every line, long lines cut at 80 columns.
    original = (ROOT / "tests/fixtures/real-gloo-hang-rank2/logs/node01/console.log").read_text()
    pasted = []
    for line in original.splitlines():
        pieces = [line[i:i + 78] for i in range(0, len(line), 78)] or [""]
        pasted += [f"> {piece}" for piece in pieces]
    (tmp_path / "paste.txt").write_text("\n".join(pasted) + "\n")
    report = analyze([tmp_path / "paste.txt"])
    (source,) = report.sources
    assert "hard-wrapped at 80 columns" in source.notes[0] and "'> '" in source.notes[0]
    assert [c.rank for c in report.verdict.culprits] == [2]
    unpasted = analyze([ROOT / "tests/fixtures/real-gloo-hang-rank2/logs/node01/console.log"])
    assert len(report.events) == len(unpasted.events)


def test_ordinary_logs_are_not_taken_for_pastes() -> None:
    from triage.parse.paste import detect

    lines = [f"[default{i % 4}]:step {i} loss 0.{i:04d}" for i in range(40)]
    assert detect("\n".join(lines) + "\n") is None
    indented = ["Traceback (most recent call last):"] + ["    frame"] * 20 + ["ValueError: x"]
    assert detect("\n".join(indented * 2) + "\n") is None


def test_only_the_last_step_line_of_a_chunk_is_an_event(tmp_path: Path) -> None:
    lines = [f"step {i} loss 0.5" for i in range(5000)] + ["setting up stepwise schedule"]
    (tmp_path / "rank0.log").write_text("\n".join(lines) + "\n")
    report = analyze([tmp_path])
    steps = [e for e in report.events if e.rule_id == "job-step-progress"]
    assert [(e.fields["step"], e.evidence.line) for e in steps] == [("4999", 5000)]
    assert report.ranks[0].step == 4999


def test_an_interleaving_console_keeps_each_workers_last_step(tmp_path: Path) -> None:
    lines = [f"[default{r}]:step {i} loss 0.5" for i in range(300) for r in range(4) if (r, i) != (2, 299)]
    (tmp_path / "console.log").write_text("\n".join(lines) + "\n")
    steps = [e for e in analyze([tmp_path]).events if e.rule_id == "job-step-progress"]
    assert sorted((e.identity.local_rank, e.fields["step"]) for e in steps) == [
        (0, "299"), (1, "299"), (2, "298"), (3, "299")]
