"""The NCCL RAS bundles are what generators/make_ras.py writes, and their truth holds in their files.

`tests/generators/make_ras.py` writes each `ras-*/` bundle (RAS snapshots under `logs/ras/`,
for some the job's per-rank logs, and `expected.yaml`).  This test checks (1) the committed bytes are
exactly a fresh build's (`--check`), (2) the truth is well formed and speaks triage's vocabulary,
(3) the snapshots are shaped as NCCL prints them (names, version header, sections, the 2.24/2.25
versus 2.26+ wording, the JSON and its known defect), and (4) each truth holds in the files, read
here with this file's own small parsers rather than with the generator: the dead pid really is
under DEAD in the last snapshot, the stragglers' counts do not move and are lower than the
majority's, the sub-communicator rank maps to the truth's global rank through the init lines,
every process RAS names is the process of that rank in the logs, and so on.
"""

from __future__ import annotations

import calendar
import itertools
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from generators import make_ras as mrf
from generators import rasgen

from triage.model import Category, Phase, Status

NAMES = [s.name for s in mrf.SCENARIOS]
WITH_LOGS = [s.name for s in mrf.SCENARIOS if "gen" in s.spec]  # per-rank logs from jobgen
REQUIRED = {  # the scenarios the issue asked for
    "ras-dead-process",
    "ras-unresponsive-then-dead",
    "ras-stragglers-persistent",
    "ras-transient-mismatch",
    "ras-minority-ahead",
    "ras-init-finalize-transition",
    "ras-json-dead",
    "ras-224-missing-rank-subcomm",
    "ras-with-logs-agree",
    "ras-with-logs-disagree",
}

SNAP_NAME = re.compile(r"^ras-(\d{8}T\d{6})\.(\d{6})Z\.(txt|json)$")
HEADER = re.compile(r"^NCCL version (\d+\.\d+\.\d+) compiled with CUDA \d+\.\d+$")
ROW = re.compile(r"^ {0,4}(\d+) +(\d+) +(\d+) +([\d-]+) +(\d+) +(\d+) +([A-Z]+) +([A-Z,]+)$")
BLOCK = re.compile(r"^#(\d+)-(\d+) \(([0-9a-f]{16})\) (INCOMPLETE|ERROR|MISMATCH)$")
PROC = re.compile(r"^  Process (\d+) on node (\S+) managing GPUs? ([\d,]+)$")
RANK_WHO = re.compile(r"^  Rank (\d+)(?: (has launched up to operation (\d+)|has status ([A-Z]+)))? -- "
                      r"GPU (\d+) managed by process (\d+) on node (\S+)$")
GROUP_COUNT = re.compile(r"^  (\d+) ranks have launched up to operation (\d+)$")
INIT_LINE = re.compile(r"^(\S+):(\d+):\d+ \[(\d+)\] NCCL INFO (?:\[Rank \d+\] )?\w+ comm 0x[0-9a-f]+ rank (\d+) "
                       r"nranks (\d+) cudaDev \d+ nvmlDev \d+ busId \w+ commId 0x([0-9a-f]+) - Init COMPLETE$")
BOOTSTRAP = re.compile(r"^(\S+):(\d+):\d+ \[(\d+)\] NCCL INFO Bootstrap : Using \w+:([\d.]+)<0>$")
WATCHDOG = re.compile(r"\[E(\d{3,4}) (\d\d:\d\d:\d\d)\.\d+ ProcessGroupNCCL\.cpp:\d+\] .*Watchdog caught collective "
                      r"operation timeout")
STEP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d{3} INFO train: rank (\d+)/\d+ step ", re.M)


# --------------------------------------------------------------------------------------------
# Reading a text dump as NCCL lays it out


@dataclass
class Text:
    version: str
    rows: list[dict[str, Any]]  # the communicators table
    incomplete: list[tuple[int, str, str]]  # job processes whose data is missing (pid, ip, gpus)
    dead: list[tuple[int, str, str]]
    timeouts: int
    blocks: list[dict[str, Any]] = field(default_factory=list)  # "#g-i (hash) KIND" and their lines

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [b for b in self.blocks if b["kind"] == kind]

    def size_of(self, block: dict[str, Any]) -> int:
        return int(self.rows[block["group"]]["size"])


def read_text(text: str) -> Text:
    lines = text.split("\n")
    m = HEADER.match(lines[0])
    assert m, lines[0]
    assert lines[1].startswith("CUDA runtime version ") and lines[2] == ""
    assert lines[3:6] == ["Job summary", "===========", ""]
    i_comm = next(i for i, ln in enumerate(lines) if ln.startswith("Communicators... ("))
    assert lines[i_comm + 1] == "=============" and lines[i_comm + 2] == ""
    i_err = lines.index("Errors")
    i_warn = lines.index("Warnings")
    assert lines[i_err + 1:i_err + 3] == ["======", ""] and lines[i_warn + 1:i_warn + 3] == ["========", ""]
    assert i_comm < i_err < i_warn
    rows = []
    for ln in lines[i_comm + 5:i_err - 1]:
        r = ROW.match(ln)
        assert r, ln
        rows.append(dict(zip(("group", "comms", "nodes", "per_node", "size", "in_group", "status", "errors"),
                             r.groups(), strict=True)))
    assert [int(r["group"]) for r in rows] == list(range(len(rows)))
    out = Text(m[1], rows, [], [], 0)
    current: dict[str, Any] | None = None
    section = ""
    for ln in lines[i_err + 3:]:
        if ln in ("Warnings", "========"):
            current = None
            continue
        b = BLOCK.match(ln)
        if b:
            current = {"group": int(b[1]), "idx": int(b[2]), "hash": b[3], "kind": b[4], "lines": []}
            out.blocks.append(current)
        elif ln in ("INCOMPLETE", "DEAD", "TIMEOUT"):
            section, current = ln, None
        elif ln.startswith("  ") and current is not None:
            current["lines"].append(ln)
        elif ln.startswith("  ") and (p := PROC.match(ln)):
            (out.incomplete if section == "INCOMPLETE" else out.dead).append((int(p[1]), p[2], p[3]))
        elif ln.startswith("  Encountered ") and section == "TIMEOUT":
            out.timeouts = int(ln.split()[1])
        elif ln == "":
            current, section = None, ""
    return out


def counts_in(block: dict[str, Any]) -> dict[int, int]:
    """Communicator rank -> count, for the ranks a MISMATCH block lists under a count."""
    out: dict[int, int] = {}
    group_value: int | None = None
    for ln in block["lines"]:
        if g := GROUP_COUNT.match(ln):
            group_value = int(g[2])
        elif (r := RANK_WHO.match(ln)) and r[3] is not None:
            out[int(r[1])] = int(r[3])
            group_value = None
        elif r and r[4] is None and group_value is not None:
            out[int(r[1])] = group_value
        elif ln.startswith("  Communicator ranks have different"):
            group_value = None
    return out


def group_counts(block: dict[str, Any]) -> dict[int, int]:
    """Operation count -> number of ranks, from the `N ranks have launched …` and lone-rank lines."""
    out: dict[int, int] = {}
    for ln in block["lines"]:
        if g := GROUP_COUNT.match(ln):
            out[int(g[2])] = int(g[1])
        elif (r := RANK_WHO.match(ln)) and r[3] is not None:
            out[int(r[3])] = 1
    return out


def loads_ras_json(text: str, version: str) -> dict[str, Any]:
    """NCCL's JSON; 2.28.7-2.28.9 miss the comma after a missing rank's nvml_dev (and only that)."""
    try:
        data: dict[str, Any] = json.loads(text)
    except json.JSONDecodeError as exc:
        assert version.startswith("2.28."), f"NCCL {version} writes valid JSON: {exc}"
        before = text[:exc.pos].rstrip().rsplit("\n", 1)[-1]
        assert re.fullmatch(r'\s+"nvml_dev": \d+', before), f"not the known defect: {before!r} ({exc})"
        fixed = re.sub(r'("nvml_dev": \d+)\n(\s+"status": \{\n\s+"unresponsive")', r"\1,\n\2", text)
        data = json.loads(fixed)
    return data


# --------------------------------------------------------------------------------------------
# A bundle


class Bundle:
    def __init__(self, name: str) -> None:
        self.name = name
        self.root = mrf.FIXTURES / name
        self.logs = self.root / "logs"
        data = yaml.safe_load((self.root / "expected.yaml").read_text(encoding="utf-8"))
        self.data: dict[str, Any] = data
        self.truth: dict[str, Any] = data["truth"]
        self.facts: dict[str, Any] = self.truth["facts"]
        self.snaps = [s["file"] for s in self.truth["snapshots"]]

    def read(self, rel: str) -> str:
        return (self.logs / rel).read_text(encoding="utf-8")

    def texts(self) -> list[Text]:
        return [read_text(self.read(f)) for f in self.snaps if f.endswith(".txt")]

    def rank_logs(self) -> dict[str, str]:
        return {p.relative_to(self.logs).as_posix(): p.read_text(encoding="utf-8")
                for p in sorted(self.logs.rglob("*")) if p.is_file() and not p.name.startswith("ras-")}

    def who_in_logs(self) -> dict[int, dict[str, Any]]:
        """Global rank -> {pid, ip, gpu, file, comms: {commId: (rank, nranks)}}, from the NCCL lines."""
        by_pid: dict[int, dict[str, Any]] = {}
        for rel, text in self.rank_logs().items():
            for ln in text.splitlines():
                ln = re.sub(r"^\[(?:default)?\d+\]:", "", ln)
                if b := BOOTSTRAP.match(ln):
                    by_pid.setdefault(int(b[2]), {"comms": {}, "file": rel}).update(ip=b[4], gpu=int(b[3]))
                elif i := INIT_LINE.match(ln):
                    entry = by_pid.setdefault(int(i[2]), {"comms": {}, "file": rel})
                    entry["comms"][i[6]] = (int(i[4]), int(i[5]))
        world = max(n for e in by_pid.values() for _, n in e["comms"].values())
        out = {}
        for pid, e in by_pid.items():
            r = next(r for r, n in e["comms"].values() if n == world)
            out[r] = {"pid": pid, **e}
        return out


@pytest.fixture(scope="module", params=NAMES)
def bundle(request: pytest.FixtureRequest) -> Bundle:
    return Bundle(request.param)


def _epoch(stamp: str) -> float:
    m = SNAP_NAME.match(stamp)
    assert m, stamp
    return calendar.timegm(time.strptime(m[1], "%Y%m%dT%H%M%S")) + int(m[2]) / 1e6


# --------------------------------------------------------------------------------------------
# The bundles as a whole


def test_every_scenario_the_issue_asked_for_is_there() -> None:
    assert set(NAMES) >= REQUIRED, sorted(REQUIRED - set(NAMES))
    formats = {f for n in NAMES for f in Bundle(n).truth["formats"]}
    for needed in ("ras-text-2.24", "ras-text-2.26", "ras-text-2.26-verbose", "ras-json-2.28.7-invalid",
                   "ras-monitor-2.29"):
        assert any(f.startswith(needed) for f in formats), needed


@pytest.mark.parametrize("name", NAMES)
def test_committed_bundle_is_what_the_generator_writes(name: str) -> None:
    assert (mrf.FIXTURES / name).is_dir(), f"run {mrf.MADE_BY} {name}"
    assert mrf.differences(mrf.BY_NAME[name]) == []


def test_check_mode_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert mrf.main(["--check"]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("name", NAMES)
def test_truth_is_well_formed(name: str) -> None:
    b = Bundle(name)
    assert b.data["description"].strip() and b.data["made_by"] == mrf.MADE_BY
    assert b.data["spec"] == mrf.BY_NAME[name].spec
    t = b.truth
    assert t["status"] in {s.value for s in Status}
    assert t["phase"] in {p.value for p in Phase} - {"teardown"}
    assert t["category"] in {c.value for c in Category}
    assert all(isinstance(r, int) for r in t["culprit_ranks"])
    assert isinstance(t["disagreement"], bool) and t["formats"]
    if t["status"] == "diagnosed":
        assert t["culprit_ranks"] and t["phase"] != "unknown" and t["category"] != "unknown"
    if t["status"] == "no_failure":
        assert t["culprit_ranks"] == [] and t["culprit_processes"] == []
    for p in t["culprit_processes"]:
        assert set(p) == {"pid", "host_ip", "gpu"}
    got = {p.relative_to(b.logs).as_posix() for p in b.logs.rglob("*") if p.is_file()}
    assert got == set(t["files"])


def test_snapshots_are_named_and_shaped_as_nccl_writes_them(bundle: Bundle) -> None:
    times = []
    for snap in bundle.truth["snapshots"]:
        name = Path(snap["file"]).name
        m = SNAP_NAME.match(name)
        assert m, name
        assert snap["sent"] == f"{m[1][:4]}-{m[1][4:6]}-{m[1][6:8]}T{m[1][9:11]}:{m[1][11:13]}:{m[1][13:]}.{m[2]}Z"
        times.append(_epoch(name))
        text = bundle.read(snap["file"])
        version = bundle.truth["nccl_version"]
        v = tuple(int(x) for x in version.split("."))
        if m[3] == "json":
            data = loads_ras_json(text, version)
            assert data["nccl_version"] == version and data["communicators_count"] == len(data["communicators"])
            assert snap["format"] == ("ras-json-2.28.7-invalid" if v < (2, 29) else "ras-json-2.28.7")
            continue
        dump = read_text(text)
        assert dump.version == version
        secs = re.search(r"^Communicators\.\.\. \((\d+\.\d+)s\)$", text, re.M)
        assert secs and len(secs[1].split(".")[1]) == (3 if v >= (2, 28, 7) else 2)
        old = v < (2, 26)
        assert ("collective operation counts" in text) <= old  # 2.24/2.25 do not split by collective
        assert ("The missing rank" in text) <= old and ("NOCOMM" in text) <= (not old)
        assert ("UNKNOWN" in text) <= old
        assert snap["format"].startswith("ras-text-2.24" if old else "ras-text-2.26")
        assert snap["format"].endswith("-verbose") == snap["verbose"]
        summary = re.search(r"^ +(\d+) +(\d+) +(\d+) +(\d+) +(\d+)$", text, re.M)
        assert summary and int(summary[1]) * int(summary[2]) == int(summary[4])
    assert times == sorted(times)


def test_culprit_processes_are_named_by_ras(bundle: Bundle) -> None:
    """What truth.culprit_processes says RAS names is in the last snapshot, as NCCL words it."""
    last = bundle.read(bundle.snaps[-1])
    for p in bundle.truth["culprit_processes"]:
        if last.lstrip().startswith("{"):
            data = loads_ras_json(last, bundle.truth["nccl_version"])
            entries = [e for c in data["communicators"] for e in c["ranks"] + c["missing_ranks"]]
            assert any((e["pid"], e["host"], e["cuda_dev"]) == (p["pid"], p["host_ip"], p["gpu"]) for e in entries)
        else:
            said = [f"Process {p['pid']} on node {p['host_ip']} managing GPU {p['gpu']}",
                    f"GPU {p['gpu']} managed by process {p['pid']} on node {p['host_ip']}"]
            assert any(s in last for s in said), p


@pytest.mark.parametrize("name", WITH_LOGS)
def test_processes_ras_names_are_the_ranks_processes_in_the_logs(name: str) -> None:
    """Bundles with per-rank logs: RAS's processes, nodes and GPUs are those of the logs."""
    bundle = Bundle(name)
    assert bundle.rank_logs()
    who = bundle.who_in_logs()
    by_pid = {w["pid"]: (w["ip"], w["gpu"]) for w in who.values()}
    for f in bundle.snaps:
        text = bundle.read(f)
        named = 0
        for ln in text.splitlines():
            if r := RANK_WHO.match(ln):
                assert by_pid[int(r[6])] == (r[7], int(r[5])), ln
                named += 1
            elif q := PROC.match(ln):
                assert by_pid[int(q[1])] == (q[2], int(q[3])), ln
                named += 1
        assert named == len(re.findall(r"[Pp]rocess \d+ on node", text))
        summary = re.search(r"^ +(\d+) +(\d+) +(\d+) +(\d+) +(\d+)$", text, re.M)
        assert summary and int(summary[4]) == len(who)
    for r in bundle.truth["culprit_ranks"]:
        assert r in who
    for r, p in zip(bundle.truth["culprit_ranks"], bundle.truth["culprit_processes"], strict=False):
        assert (who[r]["pid"], who[r]["ip"], who[r]["gpu"]) == (p["pid"], p["host_ip"], p["gpu"])


# --------------------------------------------------------------------------------------------
# Each story


def test_dead_process_is_under_dead_and_its_communicator_incomplete() -> None:
    b = Bundle("ras-dead-process")
    (dump,) = b.texts()
    (culprit,) = b.truth["culprit_ranks"]
    (p,) = b.truth["culprit_processes"]
    assert dump.dead == [(p["pid"], p["host_ip"], str(p["gpu"]))] and dump.incomplete == []
    (inc,) = dump.of("INCOMPLETE")
    assert inc["hash"] == b.facts["world_hash"] and dump.size_of(inc) == int(dump.rows[0]["size"])
    assert f"  Rank {culprit} -- GPU {p['gpu']} managed by process {p['pid']} on node {p['host_ip']}" in inc["lines"]
    assert dump.rows[0]["errors"] == "INCOMPLETE" and dump.of("MISMATCH") == []


def test_unresponsive_first_then_dead() -> None:
    b = Bundle("ras-unresponsive-then-dead")
    first, last = b.texts()
    (p,) = b.truth["culprit_processes"]
    (culprit,) = b.truth["culprit_ranks"]
    me = (p["pid"], p["host_ip"], str(p["gpu"]))
    assert first.incomplete == [me] and first.dead == [] and first.timeouts == 1
    assert last.dead == [me] and last.incomplete == []
    for dump in (first, last):
        (inc,) = dump.of("INCOMPLETE")
        assert any(ln.startswith(f"  Rank {culprit} -- GPU {p['gpu']} managed by process {p['pid']}") for ln in inc["lines"])
    t0, t1 = (_epoch(Path(f).name) for f in b.snaps)
    assert t1 - t0 >= 30.0
    (monitor,) = [f for f in b.truth["files"] if "monitor" in f]
    text = b.read(monitor)
    assert text.startswith("RAS Monitor Mode - watching for peer changes")
    ev = re.search(rf"^\[(\S+ \S+)\] PEER_DEAD: Process {p['pid']} on node {re.escape(p['host_ip'])} managing GPU "
                   rf"{p['gpu']} $", text, re.M)
    assert ev, text
    when = calendar.timegm(time.strptime(ev[1], "%Y-%m-%d %H:%M:%S"))
    assert t0 < when < t1


def test_stragglers_stay_behind_at_the_same_count() -> None:
    b = Bundle("ras-stragglers-persistent")
    dumps = b.texts()
    assert len(dumps) >= 3
    seen = []
    for dump in dumps:
        (mm,) = dump.of("MISMATCH")
        counts = counts_in(mm)
        groups = group_counts(mm)
        majority = max(groups, key=lambda c: groups[c])
        behind = sorted(r for r, c in counts.items() if c < majority)
        assert behind == sorted(b.truth["culprit_ranks"])
        assert sum(groups.values()) == int(dump.rows[0]["size"])
        assert groups[majority] > len(behind) and all(counts[r] < majority for r in behind)
        seen.append((majority, {r: counts[r] for r in behind}))
    assert all(s == seen[0] for s in seen), "the counts must not move: the job is stuck"
    assert seen[0][0] == b.facts["majority_count"] and set(seen[0][1].values()) == {b.facts["behind_count"]}


def test_transient_mismatch_counts_advance() -> None:
    b = Bundle("ras-transient-mismatch")
    dumps = b.texts()
    assert b.truth["status"] == "no_failure"
    ranges = []
    for dump in dumps:
        mms = dump.of("MISMATCH")
        assert dump.dead == dump.incomplete == [] and not dump.of("INCOMPLETE") and not dump.of("ERROR")
        if mms:
            counts = group_counts(mms[0])
            assert max(counts) - min(counts) <= 2, "a little apart"
            ranges.append((min(counts), max(counts)))
    assert len(ranges) >= 2
    assert all(a[1] < b2[0] for a, b2 in itertools.pairwise(ranges)), "every rank moved on"
    assert dumps[-1].rows[0]["errors"] == "OK"


def test_minority_ahead_is_not_a_culprit() -> None:
    b = Bundle("ras-minority-ahead")
    seen = []
    for dump in b.texts():
        (mm,) = dump.of("MISMATCH")
        groups = group_counts(mm)
        majority = max(groups, key=lambda c: groups[c])
        ahead = {r: c for r, c in counts_in(mm).items() if c > majority}
        assert ahead == {b.facts["ahead_rank"]: majority + 1} and groups[majority] == int(dump.rows[0]["size"]) - 1
        seen.append((majority, ahead))
    assert len(seen) >= 2 and all(s == seen[0] for s in seen)  # frozen: a hang
    assert b.facts["ahead_rank"] not in b.truth["culprit_ranks"]
    assert b.truth["status"] == "inconclusive" and b.truth["culprit_ranks"] == []


def test_init_and_finalize_transitions() -> None:
    b = Bundle("ras-init-finalize-transition")
    start, busy, end = b.texts()
    assert start.rows[0]["status"] == "RUNNING" and start.rows[0]["errors"] == "MISMATCH"
    (mm,) = start.of("MISMATCH")
    assert f"  {len(b.facts['initializing'])} ranks have status INIT" in mm["lines"]
    listed = {int(r[1]) for ln in mm["lines"] if (r := RANK_WHO.match(ln))}
    assert listed == set(b.facts["initializing"])
    assert busy.rows[0]["errors"] == "OK" and not busy.blocks
    assert end.rows[0]["status"] == "FINALIZE" and end.rows[0]["errors"] == "MISMATCH"
    assert int(end.rows[0]["in_group"]) == int(end.rows[0]["size"]) - len(b.facts["destroyed"])
    (mm,) = end.of("MISMATCH")
    assert f"  {len(b.facts['finalizing'])} ranks have status FINALIZE" in mm["lines"]
    said = {ln for ln in mm["lines"] if " ranks have status NOCOMM" in ln or " has status NOCOMM" in ln}
    assert said == {f"  {len(b.facts['destroyed'])} ranks have status NOCOMM"}
    nocomm = [int(r[1]) for ln in mm["lines"] if (r := RANK_WHO.match(ln))]
    assert set(b.facts["destroyed"]) <= set(nocomm)  # verbose: listed with their processes
    last = b.read(b.snaps[-1])
    assert last.endswith("\n") and not last.endswith("\n\n")  # 2.26+: no blank line after status-only
    for dump in (start, busy, end):
        assert dump.dead == dump.incomplete == [] and not dump.of("INCOMPLETE")


def test_json_dead_rank_is_considered_dead_and_the_json_is_the_known_invalid_variant() -> None:
    b = Bundle("ras-json-dead")
    (p,) = b.truth["culprit_processes"]
    (culprit,) = b.truth["culprit_ranks"]
    states = []
    for f in b.snaps:
        text = b.read(f)
        with pytest.raises(json.JSONDecodeError):
            json.loads(text)  # 2.28.9 as it is
        data = loads_ras_json(text, b.truth["nccl_version"])
        (comm,) = data["communicators"]
        assert comm["hash"] == b.facts["world_hash"]
        (miss,) = comm["missing_ranks"]
        assert (miss["rank"], miss["pid"], miss["host"], miss["cuda_dev"]) == (culprit, p["pid"], p["host_ip"], p["gpu"])
        assert comm["size"] == comm["ranks_count"] + comm["missing_ranks_count"]
        states.append((miss["status"]["unresponsive"], miss["status"]["considered_dead"], data["ras"]["timeouts_count"]))
    assert states[0] == (True, False, 1) and states[-1][:2] == (True, True)


def test_224_missing_rank_of_a_subcommunicator_maps_to_the_global_rank() -> None:
    b = Bundle("ras-224-missing-rank-subcomm")
    (dump,) = b.texts()
    (p,) = b.truth["culprit_processes"]
    (culprit,) = b.truth["culprit_ranks"]
    assert dump.dead == [(p["pid"], p["host_ip"], str(p["gpu"]))]
    missing = {}
    for inc in dump.of("INCOMPLETE"):
        (ln,) = [ln for ln in inc["lines"] if ln.startswith("  The missing rank: ")]
        missing[dump.size_of(inc)] = (inc["hash"], int(ln.rsplit(" ", 1)[1]))
    who = b.who_in_logs()
    mine = next(w for w in who.values() if w["pid"] == p["pid"])
    # the dead process's own init lines: its rank in the 8-rank TP communicator and in the world
    (tp_id, (tp_rank, _)), = [(cid, rn) for cid, rn in mine["comms"].items() if rn[1] == 8]
    world_rank = next(r for r, n in mine["comms"].values() if n == len(who))
    assert missing[8][1] == tp_rank == b.facts["group_rank"] != culprit
    assert missing[len(who)][1] == world_rank == culprit
    assert f"0x{tp_id}" == b.facts["group_init_comm_id"]
    # 2.24/2.25: RAS's hash is another hash of the id than the init lines' commId
    init_ids = {cid.rjust(16, "0") for w in who.values() for cid in w["comms"]}
    assert not {blk["hash"] for blk in dump.blocks} & init_ids
    assert all(w["file"].endswith(".log") for w in who.values())


def test_subcommunicator_straggler_hash_ties_to_the_init_lines() -> None:
    b = Bundle("ras-subcomm-straggler")
    (culprit,) = b.truth["culprit_ranks"]
    (p,) = b.truth["culprit_processes"]
    who = b.who_in_logs()
    init_ids = {cid.rjust(16, "0"): rn for w in who.values() for cid, rn in w["comms"].items()}
    for dump in b.texts():
        by_size = {dump.size_of(mm): mm for mm in dump.of("MISMATCH")}
        tp = by_size[8]
        (lone,) = [r for ln in tp["lines"] if (r := RANK_WHO.match(ln))]
        assert int(lone[6]) == p["pid"] and lone[3] is not None
        assert tp["hash"] in init_ids  # 2.26+: commHash is the init lines' commId
        mine = next(w for w in who.values() if w["pid"] == p["pid"])
        assert mine["comms"][tp["hash"].lstrip("0")] == (int(lone[1]), 8)
        assert next(r for r, w in who.items() if w["pid"] == int(lone[6])) == culprit != int(lone[1])
        world_behind = sorted(r for r, c in counts_in(by_size[len(who)]).items()
                              if c < max(group_counts(by_size[len(who)])))
        assert world_behind == b.facts["group_ranks"] and culprit in world_behind


def _watchdog_times(text: str, year: int) -> list[float]:
    out: list[float] = []
    for md, hms in WATCHDOG.findall(text):
        month, day = divmod(int(md), 100)
        out.append(calendar.timegm(time.strptime(f"{year}-{month:02d}-{day:02d} {hms}", "%Y-%m-%d %H:%M:%S")))
    return out


def _last_step(text: str, rank: int) -> float:
    stamps = [s for s, r in STEP.findall(text) if int(r) == rank]
    return float(calendar.timegm(time.strptime(stamps[-1], "%Y-%m-%d %H:%M:%S")))


def _rank_texts(b: Bundle, who: dict[int, dict[str, Any]]) -> dict[int, str]:
    logs = b.rank_logs()
    out = {}
    for r, w in who.items():
        text = logs[w["file"]]
        if "/attempt_0/" in w["file"]:  # torchrun: stdout.log has NCCL's lines, stderr.log the c10 ones
            text += logs[w["file"].replace("stdout.log", "stderr.log")]
        out[r] = text
    return out


def test_with_logs_agree() -> None:
    b = Bundle("ras-with-logs-agree")
    (culprit,) = b.truth["culprit_ranks"]
    (p,) = b.truth["culprit_processes"]
    who = b.who_in_logs()
    texts = _rank_texts(b, who)
    snaps = [_epoch(Path(f).name) for f in b.snaps]
    year = time.gmtime(snaps[0]).tm_year
    timeouts = {r: _watchdog_times(t, year) for r, t in texts.items()}
    assert [r for r, t in timeouts.items() if not t] == [culprit]
    assert max(snaps) < min(min(t) for t in timeouts.values() if t)  # RAS looked during the hang
    assert _last_step(texts[culprit], culprit) < min(snaps)
    dumps = b.texts()
    assert len(dumps) >= 2 and not b.truth["disagreement"]
    for dump in dumps:
        (mm,) = dump.of("MISMATCH")
        counts = counts_in(mm)
        majority = max(group_counts(mm), key=lambda c: group_counts(mm)[c])
        assert {r: c for r, c in counts.items() if c != majority} == {culprit: counts[culprit]}
        assert counts[culprit] < majority
        assert f"GPU {p['gpu']} managed by process {p['pid']} on node {p['host_ip']}" in "\n".join(mm["lines"])
    assert len({tuple(sorted(counts_in(d.of('MISMATCH')[0]).items())) for d in dumps}) == 1


def test_with_logs_disagree() -> None:
    b = Bundle("ras-with-logs-disagree")
    (culprit,) = b.truth["culprit_ranks"]
    assert b.truth["disagreement"] is True and b.truth["culprit_processes"] == []
    who = b.who_in_logs()
    texts = _rank_texts(b, who)
    (snap,) = [_epoch(Path(f).name) for f in b.snaps]
    year = time.gmtime(snap).tm_year
    timeouts = {r: _watchdog_times(t, year) for r, t in texts.items()}
    assert [r for r, t in timeouts.items() if not t] == [culprit]  # the logs point at the culprit
    assert _last_step(texts[culprit], culprit) < snap < min(min(t) for t in timeouts.values() if t)
    (dump,) = b.texts()
    assert all(r["errors"] == "OK" and r["status"] == "RUNNING" for r in dump.rows)  # RAS: all is well
    assert not dump.blocks and not dump.dead and not dump.incomplete and dump.timeouts == 0


# --------------------------------------------------------------------------------------------
# The generator against a real NCCL (tests/fixtures/ras-captured-nccl2.28.9, see its README)

CAPTURED = mrf.FIXTURES / "ras-captured-nccl2.28.9"
RENDERED_AS_CAPTURED = [  # (JSON dump, what NCCL printed at the same moment)
    ("run1-straggler.json", "run1-straggler.txt"),
    ("run1-straggler.json", "run1-straggler-verbose.txt"),
    ("run1-straggler.json", "run1-straggler.json"),
    ("run1-killed.json", "run1-killed.json"),
    ("run2-ahead.json", "run2-ahead.txt"),
    ("run2-ahead.json", "run2-ahead.json"),
    ("run2-killed.json", "run2-killed.txt"),
    ("run2-killed.json", "run2-killed.json"),
    ("run2-dead.json", "run2-dead.txt"),
    ("run2-dead.json", "run2-dead-verbose.txt"),
    ("run2-dead.json", "run2-dead.json"),
]


def _mask(text: str) -> str:
    text = re.sub(r"^Communicators\.\.\. \(\d+\.\d+s\)$", "Communicators... (…s)", text, flags=re.M)
    text = re.sub(r'"timestamp": "[^"]*"', '"timestamp": …', text)
    return re.sub(r'"collection_time_sec": [\d.]+', '"collection_time_sec": …', text)


@pytest.mark.parametrize(("state", "printed"), RENDERED_AS_CAPTURED, ids=[p for _, p in RENDERED_AS_CAPTURED])
def test_rasgen_prints_what_nccl_printed(state: str, printed: str) -> None:
    snap = rasgen.from_json((CAPTURED / state).read_text(encoding="utf-8"), cuda="13.0",
                            verbose="verbose" in printed)
    want = (CAPTURED / printed).read_text(encoding="utf-8")
    got = rasgen.render_json(snap) if printed.endswith(".json") else rasgen.render_text(snap)
    assert _mask(got) == _mask(want)


def test_nccl_2_28_text_loses_the_communicators_after_one_with_missing_ranks() -> None:
    """The walk bug of 2.26-2.28 (see the README): the JSON has the world, the text has a phantom."""
    data = loads_ras_json((CAPTURED / "run1-killed.json").read_text(encoding="utf-8"), "2.28.9")
    sizes = sorted(c["size"] for c in data["communicators"])
    assert sizes == [2, 2, 4] and any(c["missing_ranks_count"] for c in data["communicators"] if c["size"] == 4)
    dump = read_text((CAPTURED / "run1-killed.txt").read_text(encoding="utf-8"))
    assert sorted(int(r["size"]) for r in dump.rows) == [0, 2, 2]
    assert {"nodes": "0", "size": "0", "status": "INIT", "errors": "OK"}.items() <= dump.rows[-1].items()
    assert not dump.of("ERROR")  # rank 0's Remote process error (world communicator) is lost
