"""What fuzzing found, kept as regression tests (issue 18, item 8).

- A file that begins with a compressor's magic bytes but is not valid data of it ended the whole run
  (`internal error: ZstdError`): it is one skipped source, with its reason, beside the rest.
- A user rule whose regex holds a huge counted repeat took gigabytes to compile: it is refused
  before compiling, naming the rule and why.
- A multi-stream xz of one line repeated inflates without end: its reading is bounded, and what is
  read is read as a crash loop (one event, counted).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zipfile
from pathlib import Path

import pytest

from triage.api import analyze
from triage.rules import MAX_REPEAT, RuleError, pattern_too_large

WATCHDOG = ("[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600000 milliseconds before timing out.\n")
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# Not zstd after the magic: a reserved frame-header bit, a dictionary the reader lacks, a block
# of an unknown type, a frame cut short, garbage, and a window far too large.
BAD_ZSTD = {
    "reserved-bit": ZSTD_MAGIC + b"\x08" + b"\x00" * 12,
    "dictionary": ZSTD_MAGIC + b"\x03\x00\x01\x02\x03\x04" + b"\x01\x00\x00" + b"x",
    "block-type": ZSTD_MAGIC + b"\x20\x05" + b"\x07\x00\x00" + b"abcd",
    "truncated": ZSTD_MAGIC + b"\x20",
    "garbage": ZSTD_MAGIC + bytes(range(256)) * 4,
    "window": ZSTD_MAGIC + b"\x00\xff" + b"\x05\x00\x00hello",
}


def _write_job(folder: Path, name: str, data: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rank3.log").write_text(WATCHDOG)
    (folder / name).write_bytes(data)


def _read_beside(folder: Path, name: str) -> None:
    """The valid rank log is read; the damaged file is skipped or noted, never fatal."""
    report = analyze([folder])
    by_name = {Path(s.name).name.split("!")[0]: s for s in report.sources}
    assert by_name["rank3.log"].skipped is None and by_name["rank3.log"].events == 1
    damaged = by_name[name]
    assert damaged.skipped or damaged.notes, damaged
    assert 3 in report.ranks


@pytest.mark.parametrize("case", sorted(BAD_ZSTD))
def test_a_damaged_zstd_file_is_one_skipped_source(tmp_path: Path, case: str) -> None:
    pytest.importorskip("zstandard")
    _write_job(tmp_path, "rank0.log.zst", BAD_ZSTD[case])
    _read_beside(tmp_path, "rank0.log.zst")


def _zip_member(data: bytes, method: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as archive:
        archive.writestr("rank0.log", data)
    raw = bytearray(out.getvalue())
    raw[60:80] = b"\xff" * 20  # into the member's compressed data
    return bytes(raw)


@pytest.mark.parametrize("kind", ["gzip", "bz2", "xz", "zip-deflate", "zip-bzip2", "zip-lzma"])
def test_every_damaged_compressed_input_is_an_input_error(tmp_path: Path, kind: str) -> None:
    text = (WATCHDOG.replace("Rank 3", "Rank 0") * 200).encode()
    whole = {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}
    if kind in whole:
        data = bytearray(whole[kind](text))
        data[len(data) // 2:len(data) // 2 + 16] = b"\x00" * 16
        name = f"rank0.log.{kind}"
    else:
        method = {"zip-deflate": zipfile.ZIP_DEFLATED, "zip-bzip2": zipfile.ZIP_BZIP2,
                  "zip-lzma": zipfile.ZIP_LZMA}[kind]
        data = bytearray(_zip_member(text, method))
        name = "logs.zip"
    _write_job(tmp_path, name, bytes(data))
    _read_beside(tmp_path, name)


@pytest.mark.parametrize("regex", ["(a{1000000})", "a{2,99999999999999999999}", "x{,1000000}",
                                   "(((a{100}){100}){30})", "a" * 20_000])
def test_a_user_rule_too_large_to_compile_is_refused_naming_it(tmp_path: Path, regex: str) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "huge-repeat.yaml").write_text(
        "id: huge-repeat\ntitle: huge\nfamily: python\nkind: error\nphase: execution\n"
        f"severity: error\nprefilter: [aaaa]\nregex: '{regex}'\nmessage: huge\n"
        "explain: {meaning: x, next_steps: x}\nexamples: {match: [aaaa], nomatch: ['bbbb']}\n")
    (tmp_path / "rank3.log").write_text(WATCHDOG)
    with pytest.raises(RuleError, match=r"huge-repeat\.yaml: regex is refused, ") as caught:
        analyze([tmp_path / "rank3.log"], rules_dirs=[rules])
    assert any(word in str(caught.value) for word in ("counted repeat", "expand it", "characters long"))


def test_the_built_in_rules_are_within_the_pattern_bounds() -> None:
    from triage.rules import load_rules

    for rule in load_rules():
        for source in (rule.regex_source, *(rule.block.field_sources if rule.block else ())):
            assert pattern_too_large(source) is None, rule.id
    assert pattern_too_large(f"a{{{MAX_REPEAT}}}") is None
    assert pattern_too_large(r"\{1000000\}") is None  # escaped braces are literal text
    assert pattern_too_large("[{]1000000}") is None


def test_a_multi_stream_xz_crash_loop_is_bounded_and_folded(tmp_path: Path) -> None:
    line = b"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    stream = lzma.compress(line * 200_000)  # ~15 MB each, a few KB compressed
    (tmp_path / "rank0.log.xz").write_bytes(stream * 40)  # 40 streams: 600 MB inflated
    report = analyze([tmp_path])
    (source,) = report.sources
    assert any("stopped reading" in note for note in source.notes)
    assert 0 < source.lines < 40 * 200_000
    assert {e.count for e in report.events} == {source.lines}  # every line read, folded into one
    assert [c.rank for c in report.verdict.culprits] == [0]


def test_a_gzipped_crash_loop_is_read_whole(tmp_path: Path) -> None:
    # One line a few hundred thousand times gzips at about 258:1: above the old ratio bound (200),
    # far below deflate's own limit (about 1,032:1). Read whole, and folded into one event.
    line = b"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    (tmp_path / "rank0.log.gz").write_bytes(gzip.compress(line * 300_000, compresslevel=9))  # 23 MB
    report = analyze([tmp_path])
    (source,) = report.sources
    assert not any("stopped reading" in note for note in source.notes), source.notes
    assert source.lines == 300_000
    assert {e.count for e in report.events} == {300_000}
    assert [c.rank for c in report.verdict.culprits] == [0]
