"""Hostile flight-recorder dumps: each is a skipped source with its reason, never code run, never a
traceback, and the rest of the job is analysed as if it were not there.

What a dump is and how it is read: docs/formats.md §1.6.1, src/triage/parse/fr/.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest

from triage.api import analyze
from triage.parse import fr
from triage.parse.fr import safe_pickle
from triage.parse.fr.dump import MAX_RANKS_TEXT
from triage.parse.fr.safe_pickle import Refused

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "tests" / "fixtures" / "fr-hang-before-rank2"  # logs and real dumps of one hang
REAL_DUMP = (JOB / "logs" / "node01" / "fr" / "comm_lib_trace_rank_0").read_bytes()


class _Run:
    """`os.system(command)` when unpickled by plain pickle."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (self.command,))


def _dump(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"version": "2.10", "comm_lib_version": "", "pg_config": {}, "pg_status": {},
                           "entries": [{"record_id": 0, "pg_id": 0, "process_group": ("0", "default_pg"),
                                        "collective_seq_id": 1, "p2p_seq_id": 0, "op_id": 1,
                                        "profiling_name": "nccl:all_reduce", "input_sizes": [[4]],
                                        "output_sizes": [[4]], "input_dtypes": ["Float"],
                                        "output_dtypes": ["Float"], "state": "scheduled", "is_p2p": False,
                                        "time_created_ns": 1, "timeout_ms": 600000, "retired": False}]}
    doc.update(over)
    return doc


def _memo_bomb(levels: int = 5, width: int = 1000) -> bytes:
    """L0 = [0]*width; Lk = [L(k-1)]*width by memo reference: width**levels elements, a few KB."""
    out = bytearray(b"\x80\x02]q\x00(" + b"K\x00" * width + b"e0")
    for k in range(1, levels + 1):
        out += b"]q" + bytes([k]) + b"(" + (b"h" + bytes([k - 1])) * width + b"e0"
    out += b"h" + bytes([levels]) + b"."
    return bytes(out)


def _nested(depth: int) -> bytes:
    return b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."


# name -> (bytes of the file, a fragment the skip reason must hold)
def _cases(marker: Path) -> dict[str, tuple[bytes, str]]:
    command = f"touch {marker}"
    huge = "[" + ", ".join(map(str, range(MAX_RANKS_TEXT // 6))) + "]"
    return {
        "reduce-os-system": (pickle.dumps(_dump(version=_Run(command)), protocol=2), "not allowed"),
        "stack-global-protocol-4": (pickle.dumps(_Run(command), protocol=4), "not allowed"),
        "persistent-id": (b"\x80\x02P1\n.", "not allowed"),
        "ext-code": (b"\x80\x02\x82\x01.", "not allowed"),
        "nested-bomb": (_nested(100_000), "nested deeper"),
        "memo-bomb": (_memo_bomb(), "pickle bomb"),
        "self-cycle": (b"\x80\x02]q\x00h\x00a.", "contains itself"),
        "changed-after-nesting": (b"\x80\x02]q\x00]q\x01h\x00a0h\x00K\x01a0h\x01.", "changed after it was nested"),
        "memo-index-far-ahead": (b"\x80\x02]r\xff\xff\xff\xff.", "skips ahead"),
        "huge-ranks-string": (pickle.dumps(_dump(pg_config={"0": {"name": "0", "desc": "default_pg",
                                                                   "ranks": huge}}), protocol=2), "characters"),
        "ranks-as-code": (pickle.dumps(_dump(pg_config={"0": {"name": "0", "desc": "d", "ranks":
                                                              f"__import__('os').system('{command}')"}}),
                                       protocol=2), "not a list of ranks"),
        "truncated": (REAL_DUMP[: len(REAL_DUMP) // 2], "truncated"),
        "version-as-number": (pickle.dumps(_dump(version=2.1), protocol=2), "cannot tell 2.1 from 2.10"),
        "version-unknown-major": (pickle.dumps(_dump(version="7.2"), protocol=2), "major"),
        "version-not-a-version": (pickle.dumps(_dump(version="2.10; rm -rf /"), protocol=2), "not a flight-recorder version"),
        "not-a-dump-pickle": (pickle.dumps({"weights": [1.0, 2.0]}, protocol=2), "not a flight-recorder dump"),
        "json-entries-wrong-type": (json.dumps(_dump(entries={"0": 1})).encode(), "not a list"),
        "json-seq-as-text": (json.dumps(_dump(entries=[{**_dump()["entries"][0], "collective_seq_id": "x"}])).encode(),
                             "not a whole number"),
        "json-state-unknown": (json.dumps(_dump(entries=[{**_dump()["entries"][0], "state": 7}])).encode(), "state"),
        "json-nan": (json.dumps(_dump()).replace('"time_created_ns": 1', '"time_created_ns": NaN').encode(),
                     "not valid JSON"),
        "json-deep": (b'{"pg_config": {}, "entries": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", "nested too deeply"),
    }


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[bytes, str]]]:
    folder = tmp_path_factory.mktemp("hostile")
    return folder / "marker", _cases(folder / "marker")


def test_the_cases_are_what_they_say(cases: tuple[Path, dict[str, tuple[bytes, str]]]) -> None:
    """Plain pickle would run the command: a probe file proves the payload is live."""
    marker, table = cases
    data = table["reduce-os-system"][0]
    probe = marker.with_name("probe_")  # as long as the marker's name: the pickle stays valid
    pickle.loads(data.replace(str(marker).encode(), str(probe).encode()))  # noqa: S301 (the proof: it runs)
    assert probe.exists()
    probe.unlink()


@pytest.mark.parametrize("name", list(_cases(Path("/nonexistent/marker"))))
def test_each_hostile_dump_is_a_clean_skip(name: str, cases: tuple[Path, dict[str, tuple[bytes, str]]],
                                           tmp_path: Path) -> None:
    marker, table = cases
    data, why = table[name]
    assert fr.sniff(data[:1 << 20]) is not None, "told as a dump by its content"
    job = tmp_path / "job"
    shutil.copytree(JOB / "logs", job)
    (job / "comm_lib_trace_rank_7").write_bytes(data)
    report = analyze([job])
    skipped = {s.name: s.skipped for s in report.sources if s.skipped}
    hostile = str(job / "comm_lib_trace_rank_7")
    assert hostile in skipped, f"{name} was read: {skipped}"
    assert why in (skipped[hostile] or ""), skipped[hostile]
    assert not marker.exists(), "the payload ran"
    assert len(skipped) == 1, f"only the hostile dump is skipped: {skipped}"
    assert report.verdict.status.value == "diagnosed", "the rest of the job is analysed"
    assert [c.rank for c in report.verdict.culprits if c.kind == "rank"] == [2]


def test_the_unpickler_refuses_code_even_unchecked(cases: tuple[Path, dict[str, tuple[bytes, str]]]) -> None:
    """Defence in depth: the Unpickler itself resolves no global and no persistent id."""
    marker, table = cases
    for name in ("reduce-os-system", "stack-global-protocol-4", "persistent-id"):
        with pytest.raises(pickle.UnpicklingError):
            safe_pickle._NoCode(io.BytesIO(table[name][0])).load()
    assert not marker.exists()


def test_every_refused_opcode_is_named() -> None:
    import pickletools

    allowed = {op.name for op in pickletools.opcodes} & safe_pickle.ALLOWED
    assert not allowed & {"GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE", "BUILD", "NEWOBJ", "NEWOBJ_EX",
                          "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID", "NEXT_BUFFER", "READONLY_BUFFER",
                          "BYTEARRAY8", "LONG4"}
    for op in pickletools.opcodes:
        if op.name not in safe_pickle.ALLOWED:
            with pytest.raises(Refused, match=op.name):
                safe_pickle.check(b"\x80\x02" + op.code.encode("latin-1"))


def test_bounds_hold_for_legitimate_dumps() -> None:
    """A real dump and a 20,000-entry one pass the walk; the bounds are far from what dumps need."""
    assert safe_pickle.load(REAL_DUMP)["version"] == "2.10"
    frames = [{"filename": f"/x/f{i}.py", "line": i, "name": f"f{i}"} for i in range(20)]
    entry = {**_dump()["entries"][0], "frames": frames}
    big = pickle.dumps(_dump(entries=[dict(entry, record_id=i, collective_seq_id=i + 1) for i in range(20_000)]),
                       protocol=2)
    safe_pickle.check(big)
