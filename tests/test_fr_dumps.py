"""Flight-recorder dumps in every form: the real ones (tests/fixtures/fr-*), the JSON form, the
older versions, the pre-2024 list; told by content under any name; their events through an extract.

Older versions are built from the fields their readers read: torch 2.13's own reader
(torch/distributed/flight_recorder/components/ in the wheel) handles every version from 2.3, and each
field below names the line of it that reads the field.
"""

from __future__ import annotations

import gzip
import io
import json
import pickle
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from triage.api import analyze, extract
from triage.parse import fr
from triage.parse.fr import dump as fr_dump
from triage.parse.fr.events import MAX_IN_FLIGHT, parse_timeline
from triage.parse.fr.names import rank_from_name

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
HANG = FIXTURES / "fr-hang-before-rank2-dumps" / "logs"
JSON_HANG = FIXTURES / "fr-json-hang-before-rank2-dumps" / "logs"

# Entry fields and the reader in the wheel that reads them (components/<file>:<line>, torch 2.13.0).
ENTRY_READ_BY = {
    "record_id": "utils.py:781 (align_trace_from_beginning), types.py:257",
    "process_group": "types.py:249-250, builder.py:209-211",
    "collective_seq_id": "types.py:255, utils.py:594",
    "p2p_seq_id": "types.py:465 (Op), utils.py:594",
    "profiling_name": "types.py:254, types.py:419",
    "input_sizes": "types.py:258, types.py:460",
    "output_sizes": "types.py:259, types.py:461",
    "input_dtypes": "types.py:467",
    "output_dtypes": "types.py:468",
    "state": "types.py:260, types.py:438",
    "time_created_ns": "types.py:469",
    "is_p2p": "utils.py:594",
    "frames": "types.py:261 (.get: optional), utils.py:733",
}
TOP_READ_BY = {"version": "loader.py:38", "pg_config": "loader.py:39, builder.py:110-111", "entries": "loader.py:37"}
# What changes with the version, as the wheel's reader says: sizes of alltoall logged from 2.4
# (utils.py:511), coalesced non-P2P ops one entry each from 2.7 (builder.py:226-231); torch 2.13
# writes 2.10 with comm_lib_version, thread_id and thread_name (seen in the real dumps here).
VERSIONS = ["2.3", "2.4", "2.5", "2.6", "2.7", "2.8", "2.9", "2.10"]


def _entry(seq: int, version: str, **over: Any) -> dict[str, Any]:
    minor = int(version.split(".")[1])
    e: dict[str, Any] = {
        "record_id": seq - 1, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
        "p2p_seq_id": 0, "op_id": seq, "profiling_name": "nccl:all_reduce", "time_created_ns": 10**18 + seq,
        "input_sizes": [[1024]], "output_sizes": [[1024]], "input_dtypes": ["Float"], "output_dtypes": ["Float"],
        "state": "completed", "is_p2p": False, "time_discovered_started_ns": None,
        "time_discovered_completed_ns": 10**18 + seq + 5, "retired": True, "timeout_ms": 600000,
        "frames": [{"name": "all_reduce", "filename": "/torch/distributed/distributed_c10d.py", "line": 2806},
                   {"name": "train_step", "filename": "/job/train.py", "line": 41}],
    }
    if minor >= 10:
        e.update(thread_id="140000", thread_name="python3")
    e.update(over)
    return e


def _versioned(version: str, last: int = 5) -> dict[str, Any]:
    entries = [_entry(s, version) for s in range(1, last)] + [_entry(last, version, state="scheduled",
                                                                     time_discovered_completed_ns=None)]
    doc = {"version": version, "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}},
           "pg_status": {"0": {"last_enqueued_collective": last, "last_started_collective": -1,
                               "last_completed_collective": last - 1}}, "entries": entries}
    doc["comm_lib_version" if version == "2.10" else "nccl_version"] = "2.21.5"
    return doc


@pytest.mark.parametrize("version", VERSIONS)
def test_every_version_reads(version: str, tmp_path: Path) -> None:
    (tmp_path / "nccl_trace_rank_1").write_bytes(pickle.dumps(_versioned(version), protocol=2))
    report = analyze([tmp_path])
    (source,) = report.sources
    assert source.skipped is None and source.identity.rank == 1
    group = next(e for e in report.events if e.rule_id == "fr-group")
    assert group.fields["fr_pg_ranks"] == "0,1,2,3"
    assert (group.fields["fr_last_enqueued"], group.fields["fr_last_completed"]) == ("5", "4")
    (flight,) = [e for e in report.events if e.fields.get("fr_kept") == "in-flight"]
    assert flight.fields["fr_seq"] == "5" and flight.evidence.line == 5
    assert json.loads(flight.fields["fr_frames"])[1] == ["train_step", "/job/train.py", 41]
    dump = next(e for e in report.events if e.rule_id == "fr-dump")
    assert dump.fields["fr_version"] == version and dump.fields["fr_lib_version"] == "2.21.5"


def test_versions_compare_as_numbers() -> None:
    ten, nine = fr_dump.read(_versioned("2.10"), "pickle").version_num, fr_dump.read(_versioned("2.9"), "pickle").version_num
    assert ten is not None and nine is not None and ten > nine
    newer = fr_dump.read(_versioned("2.11"), "pickle")
    assert any("newer" in n for n in newer.notes)


def test_pre_2024_bare_list(tmp_path: Path) -> None:
    old = [{"record_id": i, "pg_id": 0, "seq_id": i + 1, "profiling_name": "nccl:all_reduce",
            "time_created_ns": 10**18 + i, "input_sizes": [[8]], "output_sizes": [[8]], "state": "completed",
            "time_discovered_started_ns": None, "time_discovered_completed_ns": None, "retired": True,
            "frames": []} for i in range(3)]
    (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps(old, protocol=2))
    report = analyze([tmp_path])
    assert report.sources[0].skipped is None
    assert any("pre-2024" in n for n in report.sources[0].notes)
    group = next(e for e in report.events if e.rule_id == "fr-group")
    assert group.fields["fr_ops"] == "1-3:0"


def test_any_backend_prefix() -> None:
    doc = _versioned("2.10")
    for i, backend in enumerate(("xccl", "hccl", "mccl", "custom")):
        doc["entries"][i]["profiling_name"] = f"{backend}:all_reduce"
    dump = fr_dump.read(doc, "pickle")
    assert [e.backend for e in dump.entries][:4] == ["xccl", "hccl", "mccl", "custom"]
    assert {e.op for e in dump.entries} == {"all_reduce"}


def test_real_dumps_of_every_bundle_read() -> None:
    dumps = sorted(p for p in FIXTURES.glob("fr-*/logs/**/comm_lib_trace_rank_*") if p.is_file())
    assert len(dumps) > 40
    for path in dumps:
        data = path.read_bytes()
        form = fr.sniff(data)
        assert form == ("json" if path.suffix == ".json" else "pickle"), path
        doc = fr.safe_pickle.load(data) if form == "pickle" else json.loads(data)
        dump = fr_dump.read(doc, form)
        assert dump.version == "2.10" and dump.entries, path
        assert all(e.backend == "gloo" and e.state == "scheduled" for e in dump.entries)


def test_json_form_says_what_the_pickle_says() -> None:
    def core(folder: Path) -> dict[tuple[int | None, str], tuple[str, ...]]:
        report = analyze([folder])
        return {(e.rank, e.rule_id): tuple(e.fields.get(k, "") for k in ("fr_pg", "fr_seq", "fr_op", "fr_in_sizes",
                                                                        "fr_last_completed", "fr_ops"))
                for e in report.events if e.rule_id in ("fr-group", "fr-entry")}
    assert core(HANG) and core(HANG) == core(JSON_HANG)
    report = analyze([JSON_HANG])
    entry = next(e for e in report.events if e.rule_id == "fr-entry")
    assert "fr_frames" not in entry.fields and "fr_completed_ns" not in entry.fields  # no frames; 0 is "not seen"


def test_json_form_without_entries(tmp_path: Path) -> None:
    (tmp_path / "trace_3.json").write_text(json.dumps({"comm_lib_version": "", "nccl_comm_state": {},
                                                       "pg_config": {}, "pg_status": {}, "version": "2.10"}))
    report = analyze([tmp_path])
    assert report.sources[0].skipped is None and report.sources[0].identity.rank == 3


@pytest.mark.parametrize(("name", "rank"), [
    ("comm_lib_trace_rank_12", 12), ("/x/nccl_trace_rank_3", 3), ("dumps.tar!fr/comm_lib_trace_rank_7.gz", 7),
    ("rank-05.pkl", 5), ("fr_dump_9.json", 9), ("trace", None), ("x_12345678901234", None),
])
def test_rank_from_the_file_name(name: str, rank: int | None) -> None:
    assert rank_from_name(name)[0] == rank


def test_told_by_content_under_any_name_in_archives(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in sorted(HANG.iterdir()):
            data = gzip.compress(path.read_bytes()) if path.name.endswith("3") else path.read_bytes()
            info = tarfile.TarInfo(f"collected/{path.name.replace('comm_lib_trace', 'whatever')}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (tmp_path / "dumps.tgz").write_bytes(buf.getvalue())
    report = analyze([tmp_path])
    assert [s.skipped for s in report.sources] == [None] * 4
    assert sorted(s.identity.rank or 0 for s in report.sources) == [0, 1, 2, 3]
    assert all(s.identity.rank is not None for s in report.sources)


def test_a_folder_of_dumps_alone_is_input() -> None:
    report = analyze([HANG])
    assert len(report.sources) == 4 and not any(s.skipped for s in report.sources)
    assert {e.family for e in report.events} == {"fr"}


def test_events_survive_an_extract(tmp_path: Path) -> None:
    out = tmp_path / "node.jsonl.gz"
    extract([HANG], out)
    direct, through = analyze([HANG]), analyze([out])

    def key(report: Any) -> list[tuple[Any, ...]]:
        return sorted((e.rule_id, e.rank, e.evidence.line, e.evidence.text, tuple(sorted(e.fields.items())), e.time)
                      for e in report.events)
    assert key(direct) == key(through)


def test_rank_conflict_with_the_groups_the_dump_lists(tmp_path: Path) -> None:
    doc = _versioned("2.10")
    doc["pg_config"]["5"] = {"name": "5", "desc": "tp", "ranks": "[4, 5]"}
    (tmp_path / "comm_lib_trace_rank_1").write_bytes(pickle.dumps(doc, protocol=2))
    (source,) = analyze([tmp_path]).sources
    assert any("rank conflict" in n and "tp" in n for n in source.notes)


def test_timeline_finds_a_mismatch_anywhere() -> None:
    doc = _versioned("2.10", last=9)
    doc["entries"][2]["input_sizes"] = [[1025]]  # seq 3 differs on this rank only
    group = next(e for e in fr.events.build("r", fr_dump.read(doc, "pickle"), 0, None) if e.rule_id == "fr-group")
    seqs = parse_timeline(group.fields["fr_ops"], group.fields["fr_sigs"])
    assert len(seqs) == 9 and "1025" in seqs[3] and "1024" in seqs[2] and "1024" in seqs[4]


def test_compact_and_fast_for_big_buffers(tmp_path: Path) -> None:
    """2,000 entries per rank: a handful of events per dump, and milliseconds per dump."""
    doc = _versioned("2.10", last=2000)
    for i, e in enumerate(doc["entries"]):
        e["state"] = "scheduled" if i >= 1900 else "completed"  # 100 in flight: more than kept
    data = pickle.dumps(doc, protocol=2)
    for rank in range(16):
        (tmp_path / f"comm_lib_trace_rank_{rank}").write_bytes(data)
    t0 = time.perf_counter()
    report = analyze([tmp_path], jobs=1)
    elapsed = time.perf_counter() - t0
    per_dump = len(report.events) / 16
    assert per_dump <= 3 + MAX_IN_FLIGHT + 1 + 4, per_dump
    assert elapsed < 60, elapsed  # ~0.1 s per dump here; the bound only catches a regression by orders


def test_rank_checked_against_the_logs(tmp_path: Path) -> None:
    from triage.parse.fr.crosscheck import check_dump_ranks

    (tmp_path / "comm_lib_trace_rank_3").write_bytes(pickle.dumps(_versioned("2.10"), protocol=2))
    (tmp_path / "rank1.log").write_text(
        "[rank1]:[E1125 15:53:27.000000000 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
        "Received a dump signal due to a collective timeout from this local rank and we will try our best to dump "
        "the debug info. Last enqueued NCCL work: 9, last completed NCCL work: 8.\n"
        "[rank1]:[I1125 15:53:27.123456789 FlightRecorder.cpp:53] Finished writing Flight Recorder debug info to "
        "/root/.cache/torch/comm_lib_trace_rank_3\n")
    report = analyze([tmp_path])
    check_dump_ranks(report.sources, report.events)
    dump = next(s for s in report.sources if s.name.endswith("comm_lib_trace_rank_3"))
    assert any("the logs of rank 1 say they wrote comm_lib_trace_rank_3" in c for c in dump.conflicts)
    # Renamed back to rank 1's name, its groups are behind what rank 1 logged before dumping.
    (tmp_path / "comm_lib_trace_rank_3").rename(tmp_path / "comm_lib_trace_rank_1")
    (tmp_path / "rank1.log").write_text((tmp_path / "rank1.log").read_text().replace("rank_3", "rank_1"))
    report = analyze([tmp_path])
    check_dump_ranks(report.sources, report.events)
    dump = next(s for s in report.sources if s.name.endswith("comm_lib_trace_rank_1"))
    assert any("enqueued up to 5, but rank 1 logged 9" in c for c in dump.conflicts), dump.conflicts
