"""Hostile inputs at the ingest stage: special files, deep folders, nested archives, bombs, odd names.

Each test is small and fast: the bounds are module-level constants, monkeypatched down here.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import triage.ingest.discover as discover
import triage.ingest.open as ingest_open
from triage.api import analyze
from triage.ingest.discover import iter_files
from triage.ingest.open import Unreadable, display_name
from triage.model import Report, SourceInfo
from triage.report import render

WATCHDOG = ("[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600000 milliseconds before timing out.\n")
LOG = ("[rank3]: step 1\n" + WATCHDOG).encode()


@pytest.fixture(autouse=True)
def _no_hang() -> Iterator[None]:
    """A regression that blocks on a FIFO fails here after a few seconds instead of hanging."""
    def _timeout(*_: object) -> None:
        raise TimeoutError("ingest blocked")
    previous = signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def by_name(report: Report) -> dict[str, SourceInfo]:
    return {s.name: s for s in report.sources}


def job(tmp_path: Path) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "rank3.log").write_bytes(LOG)
    return folder


# --- special files ------------------------------------------------------------------------------

def test_fifos_and_links_to_special_files_are_skipped_not_opened(tmp_path: Path) -> None:
    folder = job(tmp_path)
    os.mkfifo(folder / "pipe.log")
    (folder / "link-to-pipe.log").symlink_to(folder / "pipe.log")
    (folder / "link-to-null.log").symlink_to("/dev/null")
    if Path("/proc/kmsg").exists():
        (folder / "kmsg.log").symlink_to("/proc/kmsg")
    (folder / "proc-status.log").symlink_to("/proc/self/status")
    report = analyze([folder])
    sources = by_name(report)
    assert sources[f"{folder}/rank3.log"].skipped is None
    for name in ("pipe.log", "link-to-pipe.log"):
        assert "FIFO" in (sources[f"{folder}/{name}"].skipped or "")
    assert "device" in (sources[f"{folder}/link-to-null.log"].skipped or "")
    assert "kernel file" in (sources[f"{folder}/proc-status.log"].skipped or "")
    if Path("/proc/kmsg").exists():
        assert "kernel file" in (sources[f"{folder}/kmsg.log"].skipped or "")


def test_a_fifo_named_on_the_command_line_is_skipped(tmp_path: Path) -> None:
    folder = job(tmp_path)
    os.mkfifo(tmp_path / "pipe")
    report = analyze([folder, tmp_path / "pipe"])
    assert "FIFO" in (by_name(report)[str(tmp_path / "pipe")].skipped or "")


def test_a_file_turned_fifo_after_discovery_is_not_opened(tmp_path: Path) -> None:
    # open_file checks again, and opens without blocking, should the walk and the open race.
    os.mkfifo(tmp_path / "pipe.log")
    items = list(discover.open_file(tmp_path / "pipe.log"))
    assert len(items) == 1 and isinstance(items[0], Unreadable) and "FIFO" in items[0].reason


# --- depth and nesting --------------------------------------------------------------------------

def test_a_deep_folder_is_walked_without_recursion_and_bounded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = job(tmp_path)
    deep = folder
    for _ in range(30):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "rank4.log").write_bytes(LOG.replace(b"rank3", b"rank4"))
    names = [x if isinstance(x, Path) else x.name for x in iter_files([str(folder)])]
    assert names[-1] == deep / "rank4.log"  # read within the bound
    monkeypatch.setattr(discover, "MAX_FOLDER_DEPTH", 10)
    found = list(iter_files([str(folder)]))
    cut = [x for x in found if isinstance(x, Unreadable)]
    assert len(cut) == 1 and "deeper than 10 levels" in cut[0].reason
    assert found[0] == folder / "rank3.log"


def test_an_unreadable_sub_folder_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = job(tmp_path)
    (folder / "locked").mkdir()
    (folder / "locked" / "rank5.log").write_bytes(LOG)
    real_scandir = os.scandir

    def scandir(path: object) -> object:  # root reads a chmod-000 folder, so refuse it here
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    report = analyze([folder])
    locked = by_name(report)[f"{folder}/locked"]
    assert locked.skipped == "folder cannot be read: permission denied"
    assert by_name(report)[f"{folder}/rank3.log"].skipped is None


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def _tar_gz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def test_a_zip_inside_a_tar_gz_and_inside_a_gzip_is_read(tmp_path: Path) -> None:
    inner = _zip_bytes({"rank3.log": LOG})
    bundle = _tar_gz(tmp_path / "bundle.tar.gz", {"logs.zip": inner, "rank1.log": b"[rank1]: ok\n"})
    (tmp_path / "logs.zip.gz").write_bytes(gzip.compress(inner))
    report = analyze([bundle, tmp_path / "logs.zip.gz"])
    sources = by_name(report)
    assert sources[f"{bundle}!logs.zip!rank3.log"].events >= 1
    assert sources[f"{bundle}!rank1.log"].skipped is None  # the tar goes on after the zip
    assert sources[f"{tmp_path}/logs.zip.gz!rank3.log"].events >= 1


def test_a_large_nested_zip_is_skipped_with_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_open, "MAX_NESTED_ZIP_BYTES", 100)
    inner = _zip_bytes({"rank3.log": LOG})
    bundle = _tar_gz(tmp_path / "bundle.tar.gz", {"logs.zip": inner, "rank1.log": b"[rank1]: ok\n"})
    sources = by_name(analyze([bundle]))
    assert "larger than 0 MB: skipped" in (sources[f"{bundle}!logs.zip"].skipped or "")
    assert sources[f"{bundle}!rank1.log"].skipped is None


# --- decompression bombs ------------------------------------------------------------------------

def test_a_high_ratio_gzip_is_cut_keeping_what_was_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_open, "RATIO_GRACE_BYTES", 1 << 20)
    monkeypatch.setattr(ingest_open, "MAX_RATIO", 20)
    monkeypatch.setattr(ingest_open, "CHUNK", 64 << 10)
    text = LOG + b"x" * 199 + b"\n"
    data = text + b"same line again\n" * (4 << 20 >> 4)  # 4 MB that gzip packs some 300 to 1
    (tmp_path / "rank3.log.gz").write_bytes(gzip.compress(data, 9))
    info = analyze([tmp_path / "rank3.log.gz"]).sources[0]
    assert info.skipped is None
    assert info.events >= 1  # the watchdog line read before the cut is kept
    assert 1 << 20 < info.bytes < len(data)
    assert any(n.startswith("stopped reading after 1 MB: expansion ratio above 20") for n in info.notes), info.notes


def test_the_total_expanded_per_input_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_open, "MAX_EXPANDED_BYTES", 300_000)
    monkeypatch.setattr(ingest_open, "CHUNK", 64 << 10)
    member = LOG + b"".join(b"%d %s\n" % (i, os.urandom(8).hex().encode()) for i in range(10_000))
    bundle = _tar_gz(tmp_path / "b.tar.gz", {"rank1.log": member, "rank2.log": member, "rank3.log": member})
    sources = analyze([bundle]).sources
    assert [s.name.rsplit("!", 1)[1] for s in sources] == ["rank1.log", "rank2.log", "rank3.log"]
    assert sources[0].skipped is None and not any("stopped" in n for n in sources[0].notes)
    assert any("more than 0 MB decompressed from one input" in n for n in sources[1].notes), sources[1].notes
    assert 0 < sources[1].bytes < len(member)
    assert (sources[2].skipped or "").startswith("not read: stopped reading after")


def test_plain_files_are_not_charged_to_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_open, "MAX_EXPANDED_BYTES", 1000)
    monkeypatch.setattr(ingest_open, "RATIO_GRACE_BYTES", 0)
    (tmp_path / "rank3.log").write_bytes(LOG * 50)
    info = analyze([tmp_path / "rank3.log"]).sources[0]
    assert info.bytes == len(LOG) * 50 and not any("stopped" in n for n in info.notes)


# --- file names ---------------------------------------------------------------------------------

def test_display_name_escapes_what_json_and_terminals_cannot_take() -> None:
    assert display_name("job/rank3.log") == "job/rank3.log"
    assert display_name(os.fsdecode(b"rank\xff\n3\t.log\x1b[31m")) == "rank\\xff\\n3\\t.log\\x1b[31m"
    assert display_name("é\u2028") == "é\\u2028"


def test_names_of_any_bytes_survive_into_json_and_the_terminal(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    odd = os.fsdecode(b"rank3\xff\nx.log")
    (folder / odd).write_bytes(LOG)
    (folder / os.fsdecode(b"empty\xfe")).mkdir()
    inner = _zip_bytes({"a\nb.log": LOG})
    (folder / "z.zip").write_bytes(inner)
    report = analyze([folder])
    names = {s.name for s in report.sources}
    assert f"{folder}/rank3\\xffx.log".replace("xffx", "xff\\nx") in names
    assert f"{folder}/z.zip!a\\nb.log" in names
    out = io.StringIO()
    render(report, "json", out)
    data = json.loads(out.getvalue())  # valid JSON
    assert out.getvalue().isascii() or "\udcff" not in out.getvalue()
    assert f"{folder}/rank3\\xff\\nx.log" in {s["name"] for s in data["sources"]}
    text = io.StringIO()
    render(report, "terminal", text, color=False)
    text.getvalue().encode("utf-8")  # no lone surrogate left to fail on
