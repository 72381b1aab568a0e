"""`triage extract`: the map step run where the logs are, and `triage analyze` over its extracts.

The contract: analysing the extracts of a job's nodes (alone, gzipped, in an archive, mixed with raw
logs) gives the report that analysing all the raw logs gives, and an extract is a small fraction of
the logs. A damaged or hostile extract is a skipped source with its reason, never a traceback.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from generators import jobgen

from triage import extract as ex
from triage.api import _scan_all, analyze, extract
from triage.model import Report
from triage.parse.scan import Matcher
from triage.report import terminal
from triage.report.json_format import to_dict
from triage.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

JOBS = {
    # A noisy job (2,000 lines of chatter per rank): rank 6 hangs, the others time out.
    "silent": {"hosts": 4, "gpus": 4, "fault": "silent", "culprit": 6, "noise_lines": 2000},
    # Every rank times out and the IB errors point at one host.
    "ib": {"hosts": 4, "gpus": 4, "fault": "ib", "culprit": "gpu-node-03", "noise_lines": 200},
}


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("jobs")
    for name, spec in JOBS.items():
        jobgen.generate(root / name, seed=3, **spec)  # type: ignore[arg-type]
    return {name: root / name for name in JOBS}


def triage(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "triage", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def comparable(report: dict[str, Any] | Report) -> dict[str, Any]:
    """The JSON report, less what says where each source came from (an extract's note)."""
    doc = to_dict(report) if isinstance(report, Report) else report
    for source in doc["sources"]:
        source["notes"] = [n for n in source["notes"] if not n.startswith(ex.NOTE_FROM)]
    return doc


def verdict_of(doc: dict[str, Any]) -> tuple[Any, ...]:
    v = doc["verdict"]
    culprits = [(c["kind"], c["rank"], c["host"], c["peer"]) for c in v["culprits"]]
    roles = {r["rank"]: (r["role"], r["host"], r["milestone"]) for r in doc["ranks"]}
    return v["status"], v["phase"], v["category"], v["confidence"], culprits, roles


def hosts_of(job: Path) -> list[Path]:
    return sorted(p for p in job.iterdir() if p.is_dir())


# --- split versus direct ----------------------------------------------------------------------

@pytest.mark.parametrize("job_name", list(JOBS))
def test_extracts_of_each_node_give_the_direct_report(jobs: dict[str, Path], tmp_path: Path,
                                                      job_name: str) -> None:
    job = jobs[job_name]
    direct = comparable(analyze([job]))
    out = tmp_path / "extracts"
    for host in hosts_of(job):  # each host folder is one node; half plain, half gzipped
        suffix = ".jsonl.gz" if host.name.endswith(("1", "3")) else ".jsonl"
        done = extract([host], out / f"{host.name}{suffix}")
        assert done.readable and done.events > 0
    split = comparable(analyze([out]))
    assert verdict_of(split) == verdict_of(direct)
    assert split == direct  # every rank, group, source and unexplained line: the same report
    if job_name == "silent":
        assert verdict_of(direct)[:3] == ("diagnosed", "execution", "hung_process")
        assert verdict_of(direct)[4] == [("rank", 6, "gpu-node-02", None)]
    else:
        assert verdict_of(direct)[4][0][:3] == ("host", None, "gpu-node-03")

    # Archived together, or mixed with one node's raw logs: the same report again.
    archive = tmp_path / "extracts.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(out, arcname="extracts")
    assert verdict_of(comparable(analyze([archive]))) == verdict_of(direct)
    zipped = tmp_path / "extracts.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(out.iterdir()):
            zf.write(path, arcname=path.name)
    assert verdict_of(comparable(analyze([zipped]))) == verdict_of(direct)
    last = hosts_of(job)[-1]
    mixed = sorted(p for p in out.iterdir() if not p.name.startswith(last.name))
    assert comparable(analyze([*mixed, last])) == direct


def test_an_extract_is_a_small_fraction_of_a_noisy_jobs_logs(jobs: dict[str, Path], tmp_path: Path) -> None:
    job = jobs["silent"]
    logs = sum(p.stat().st_size for p in job.rglob("*") if p.is_file())
    plain = [extract([h], tmp_path / f"{h.name}.jsonl") for h in hosts_of(job)]
    packed = [extract([h], tmp_path / f"{h.name}.jsonl.gz") for h in hosts_of(job)]
    assert sum(d.bytes_in for d in plain) == logs
    # Measured: about 1/30 plain and 1/300 gzipped for 2,000 lines of chatter per rank.
    assert sum(d.bytes_out for d in plain) * 10 < logs
    assert sum(d.bytes_out for d in packed) * 100 < logs
    assert all(d.bytes_out == (tmp_path / Path(d.output).name).stat().st_size for d in plain + packed)


def test_the_command_on_each_node_with_host_named(jobs: dict[str, Path], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # On a node the paths need not name the host (`.` in the node's log folder): --host puts it in
    # front of every source name, as collecting the logs into a folder named after the host does.
    job = jobs["ib"]
    out = tmp_path / "shared"
    for host in hosts_of(job):
        done = triage("extract", ".", "--host", host.name, "-o", out / f"{host.name}.jsonl.gz", cwd=host)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        assert done.stderr.startswith("triage: extract: 9 sources read (0 skipped), ")
    split = triage("analyze", "-f", "json", out)
    assert split.returncode == 1  # diagnosed
    monkeypatch.chdir(job)
    direct = analyze([h.name for h in hosts_of(job)])  # the logs collected into host folders
    assert comparable(json.loads(split.stdout)) == comparable(json.loads(json.dumps(to_dict(direct))))
    sources = json.loads(split.stdout)["sources"]
    assert sources[0]["name"] == "gpu-node-01/agent.log"
    assert sources[0]["notes"] == [f"{ex.NOTE_FROM}{out}/gpu-node-01.jsonl.gz (host gpu-node-01)"]
    assert all(s["host"] for s in sources)  # every source's host known, from the name --host gave
    buffer = io.StringIO()
    terminal.write(analyze([out]), buffer)
    said = buffer.getvalue().split("Sources:")[1]
    assert f"from triage extracts: 9 from {out}/gpu-node-01.jsonl.gz (host gpu-node-01), " in said
    assert said.count("(host gpu-node-01)") == 1  # said once, not on each source


def test_a_real_two_node_job_split_by_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = FIXTURES / "real-2node-hang-rank6" / "logs"
    for node in ("node01", "node02"):
        monkeypatch.chdir(logs / node)
        extract(["."], tmp_path / f"{node}.jsonl", host=node)
    monkeypatch.chdir(logs)
    direct = comparable(analyze(["node01", "node02"]))
    split = comparable(analyze([tmp_path]))
    assert split == direct
    assert [(c["kind"], c["rank"]) for c in split["verdict"]["culprits"]] == [("rank", 6)]


def test_stdout_stdin_and_exit_codes(tmp_path: Path) -> None:
    logs = FIXTURES / "real-gloo-hang-rank2" / "logs"
    piped = triage("extract", logs, "-o", "-")
    assert piped.returncode == 0 and piped.stdout.startswith('{"triage_extract":1,')
    extract_file = tmp_path / "node.jsonl"
    extract_file.write_text(piped.stdout, encoding="utf-8")
    back = subprocess.run([sys.executable, "-m", "triage", "analyze", "-f", "json", "-"],
                          input=piped.stdout.encode(), capture_output=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert back.returncode == 1
    assert comparable(json.loads(back.stdout)) == comparable(analyze([logs]))

    missing = triage("extract", tmp_path / "nowhere", "-o", tmp_path / "empty.jsonl")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "no readable log" in missing.stderr
    # Still written: the analysis of all the nodes says what this one lacked.
    (skipped,) = ex.read("e", [(tmp_path / "empty.jsonl").read_bytes()], lambda: "")
    assert skipped[0].skipped == "no such file or folder"
    bad_host = triage("extract", logs, "--host", "a/b", "-o", tmp_path / "x.jsonl")
    assert bad_host.returncode == 2 and "--host must be a node name" in bad_host.stderr
    assert not (tmp_path / "x.jsonl").exists()
    # A name no folder rule reads as a host (`trainbox`, a pod's) is still this node's host.
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "rank0.log").write_text("[rank0]: RuntimeError: boom\n", encoding="utf-8")
    odd_host = triage("extract", plain, "--host", "trainbox", "-o", tmp_path / "y.jsonl")
    assert odd_host.returncode == 0
    (source,) = json.loads(triage("analyze", "-f", "json", tmp_path / "y.jsonl").stdout)["sources"]
    assert (source["host"], source["identity_from"]["host"]) == ("trainbox", "triage extract --host")


def test_the_extract_being_written_is_not_read(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank0.log").write_text("[rank0]: hello\n", encoding="utf-8")
    for _ in range(2):  # the second run finds the first run's extract in the folder it reads
        done = extract([logs], logs / "here.jsonl")
        assert [s.name for s in done.sources] == [f"{logs}/rank0.log"]
    assert not [p for p in logs.iterdir() if p.name.endswith(".partial")]


def test_the_same_paths_on_two_nodes_are_said_to_clash(tmp_path: Path) -> None:
    logs = FIXTURES / "real-gloo-hang-rank2" / "logs"
    extract([logs], tmp_path / "a.jsonl")
    extract([logs], tmp_path / "b.jsonl")
    report = analyze([tmp_path])
    assert all("--host NAME" in s.notes[-1] for s in report.sources)


# --- the format ---------------------------------------------------------------------------------

ROUND_TRIP = ["real-gloo-hang-rank2", "nccl24-slurm-interleaved-rank7", "ras-json-dead", "ras-recorded",
              "ascend-init-ranktable-rank3", "ascend-cqe-link-rank5", "paste-cuda-oom-rank1",
              "fuzz-int-digits-line", "nccl24-compressed-silent-rank6", "mindspore-8r-init-killed-rank5",
              "real-detail-mismatch-op-rank3", "nccl25-subgroup-hang-rank2"]


@pytest.mark.parametrize("fixture", ROUND_TRIP)
def test_every_source_and_event_reads_back_as_it_was_written(fixture: str) -> None:
    matcher = Matcher(load_rules())
    scanned = [one for batch in _scan_all(matcher, [str(FIXTURES / fixture)]) for one in batch]
    assert scanned and any(events for _, events in scanned)
    for info, events in scanned:
        line = ex.source_to_json(info, events)
        back_info, back_events = ex.source_from_json(json.loads(json.dumps(line)))
        assert back_info == info
        assert back_events == events
        # Evidence's rule is not part of its equality: checked on its own.
        assert [e.evidence.rule_id for e in back_events] == [e.evidence.rule_id for e in events]
        if info.last_line:
            assert back_info.last_line and back_info.last_line.rule_id == info.last_line.rule_id
    # And through a whole file: the same, with a note on where each came from.
    buffer = io.BytesIO()
    ex.write(buffer, ex.header(rules="r", host="h", created="now", paths=["p"], name_prefix=None),
             scanned)
    back = ex.read("f.jsonl", [buffer.getvalue()], lambda: "r")
    assert len(back) == len(scanned)
    for (info, events), (got_info, got_events) in zip(scanned, back, strict=True):
        assert got_info.notes == [*info.notes, f"{ex.NOTE_FROM}f.jsonl (host h)"]
        got_info.notes = info.notes
        assert (got_info, got_events) == (info, events)


def test_a_rule_set_change_is_noted_but_the_events_are_used(tmp_path: Path) -> None:
    logs = FIXTURES / "real-gloo-hang-rank2" / "logs"
    path = tmp_path / "old.jsonl"
    extract([logs], path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    head = json.loads(lines[0])
    assert head["rules"] == ex.rules_digest(load_rules())
    head["rules"], head["triage_version"] = "0123456789abcdef", "0.0.1"
    path.write_text(json.dumps(head) + "\n" + "".join(lines[1:]), encoding="utf-8")
    report = analyze([path])
    assert comparable(report)["verdict"] == comparable(analyze([logs]))["verdict"]
    assert all(any("another rule set (rules 0123456789abcdef, triage 0.0.1" in n for n in s.notes)
               for s in report.sources)


# --- damaged and hostile extracts -------------------------------------------------------------

@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("good") / "node.jsonl"
    extract([FIXTURES / "real-gloo-clean" / "logs"], path)
    return path.read_bytes()


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _retyped(data: bytes) -> bytes:
    lines = _lines(data)
    doc = json.loads(lines[1])
    doc["events"][0]["kind"] = 5
    return lines[0] + json.dumps(doc).encode() + b"\n" + b"".join(lines[2:])


DAMAGED = {
    # name: (how the good extract is damaged, what the reason says, sources still read from it)
    "truncated mid-line": (lambda d: d[: len(d) - len(_lines(d)[-1]) - 40], "truncated: its line", "most"),
    "no end line": (lambda d: b"".join(_lines(d)[:-1]), "truncated: no end line after", "all"),
    "unknown version": (lambda d: d.replace(b'{"triage_extract":1,', b'{"triage_extract":7,', 1),
                        "says format version 7; this triage", "none"),
    "version of the wrong type": (lambda d: d.replace(b'{"triage_extract":1,', b'{"triage_extract":"1",', 1),
                                  "has triage_extract '1', not a format version", "none"),
    "header not JSON": (lambda d: b'{"triage_extract":1, oops\n' + d, "line 1 is not JSON", "none"),
    "not JSON after the header": (lambda d: _lines(d)[0] + b"garbage{\n" + b"".join(_lines(d)[1:]),
                                  "extract line 2 is not JSON", "all"),
    "wrong types": (_retyped, "events[0].kind: 5 is not one of", "others"),
    "nested too deep": (lambda d: _lines(d)[0] + b"[" * 100_000 + b"\n" + b"".join(_lines(d)[1:]),
                        "is nested too deeply", "all"),
    "a number of thousands of digits": (
        lambda d: _lines(d)[0] + b'{"source":{"name":"x","lines":' + b"9" * 5000 + b"}}\n"
        + b"".join(_lines(d)[1:]), "is not JSON", "all"),
    "NaN": (lambda d: _lines(d)[0] + b'{"source":{"name":"x","lines":NaN}}\n' + b"".join(_lines(d)[1:]),
            "NaN is not a number", "all"),
    "not UTF-8": (lambda d: _lines(d)[0] + b'{"source":{"name":"\xff"}}\n' + b"".join(_lines(d)[1:]),
                  "is not UTF-8", "all"),
    "a line after the end": (lambda d: d + b'{"source":{}}\n', "comes after its end line", "all"),
    # found by tools/fuzz/: a \ud800 escape decodes to text no report can be written in
    "a lone surrogate": (lambda d: _lines(d)[0] + b'{"source":{"name":"x\\ud800"}}\n' + b"".join(_lines(d)[1:]),
                         "holds a lone surrogate", "all"),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_damaged_extract_is_a_skipped_source_and_the_rest_is_analysed(good: bytes, tmp_path: Path,
                                                                        case: str) -> None:
    damage, reason, kept = DAMAGED[case]
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(damage(good))
    logs = FIXTURES / "real-gloo-hang-rank2" / "logs"
    report = analyze([bad, logs])
    assert report.verdict.status.value == "diagnosed"
    assert [c.rank for c in report.verdict.culprits] == [2]
    skipped = [s for s in report.sources if s.skipped]
    assert skipped and any(reason in (s.skipped or "") for s in skipped), [s.skipped for s in skipped]
    from_bad = [s for s in report.sources if not s.skipped and any(str(bad) in n for n in s.notes)]
    total = len(_lines(good)) - 2
    expect = {"all": total, "none": 0, "others": total - 1, "most": total - 1}[kept]
    assert len(from_bad) == expect


def test_mutated_extracts_never_raise(good: bytes) -> None:
    # Bytes flipped, dropped or repeated anywhere: whatever is read is sources, never an exception.
    rng = random.Random(11)  # noqa: S311 - a seeded fuzzer, not a secret
    pieces = [b"\x00", b"\n", b"{", b"}", b"[", b'"', b",", b":", b"\xff", b"-1", b"null", b"1e999", "\u00b2".encode()]
    for _ in range(300):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            if rng.random() < 0.5:
                data[at:at + rng.randint(0, 50)] = rng.choice(pieces)
            else:
                data[at:at] = data[rng.randrange(len(data)):][: rng.randint(1, 200)]
        got = ex.read("m.jsonl", [bytes(data)], lambda: "")
        assert all(isinstance(info.name, str) and isinstance(events, list) for info, events in got)
    odd = json.loads(_lines(good)[1])
    odd["source"]["head_ranks"] = {"\u00b2": 1}
    (bad,) = ex.read("m", [_lines(good)[0] + json.dumps(odd).encode() + b"\n"], lambda: "")[:1]
    assert bad[0].skipped and "is not a rank" in bad[0].skipped


def test_a_truncated_gzip_extract_keeps_what_was_read(good: bytes, tmp_path: Path) -> None:
    packed = gzip.compress(good * 400, mtime=0)  # concatenated extracts read as one after another
    bad = tmp_path / "cut.jsonl.gz"
    bad.write_bytes(packed[: len(packed) * 2 // 3])
    report = analyze([bad, FIXTURES / "real-gloo-hang-rank2" / "logs"])
    (skipped,) = [s for s in report.sources if s.skipped]
    assert skipped.name == str(bad)
    assert skipped.skipped and skipped.skipped.startswith(("read stopped after", "truncated"))
    assert sum(1 for s in report.sources if not s.skipped and any(str(bad) in n for n in s.notes)) > 20


def test_a_damaged_extract_on_the_command_line(good: bytes, tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_bytes(good.replace(b'"kind":"', b'"kind":"no-such-', 1))
    done = triage("analyze", tmp_path, FIXTURES / "real-gloo-hang-rank2" / "logs")
    assert done.returncode == 1 and "Traceback" not in done.stderr + done.stdout
    assert "is not one of" in done.stdout
    alone = triage("analyze", tmp_path / "bad.jsonl")
    assert alone.returncode in (0, 1, 3) and "Traceback" not in alone.stderr + alone.stdout
    (tmp_path / "bad.jsonl").write_bytes(b'{"triage_extract":2}\n')
    only = triage("analyze", tmp_path / "bad.jsonl")
    assert only.returncode == 2 and "says format version 2" in only.stderr
