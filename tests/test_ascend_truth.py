"""The Ascend/HCCL bundles are what generators/ascendgen writes, and their truth holds in their files.

`tests/generators/make_ascend.py` writes each `ascend-*/` bundle (logs + expected.yaml).  This
test checks (1) the committed bytes are exactly a fresh build's, (2) expected.yaml's `truth` is
`plan()`'s truth for the spec and its `spec` the Spec, (3) who-is-who in the files agrees with the truth (every pid's key-info lines,
torch_npu footers, server and device folders; no file claims a rank for another pid), and (4) the
injected fault left its evidence: the culprit's own signal, the victims' cascade codes, and what
each branch of culprit reasoning reads (root lists, wait chains, TLS switches, heartbeat
locations, error-CQE endpoints, timeout spreads).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from generators import ascendgen
from generators import make_ascend as maf

NAMES = list(maf.SPECS)

PLOG_NAME = re.compile(r"(?:plog|device)-(\d+)_\d+\.log$")
LINE_PID = re.compile(r"^\[[A-Z]+\] ?[A-Z_]+\((\d+),[^)]*\):")
ENTRY = re.compile(r"Entry-HcclCommInitRootInfo(?:Config)?Inner:ranks\[(\d+)\], rank\[(\d+)\].*identifier\[([^\]]+)\], deviceLogicId\[(\d+)\]")
COMM_KEY = re.compile(r"\[Communicator Key Info\]identifier\[([^\]]+)\]")
LOCAL_KEY = re.compile(r"\[LocalRank Key Info\]userRank\[(\d+)\] hostIp\[([^\]]+)\] devicePhyId\[(\d+)\] server\[([^\]]+)\] deviceIp\[([^\]]+)\]")
FOOTER = re.compile(r"\(PID:(\d+), Device:(-?\d+), RankID:(-?\d+)\) ERR\d{5}")
REMOTE = re.compile(r"localUserrank\[(\d+)\].*remoteUserrank\[(\d+)\].*tag\[([A-Za-z]+)_([^\]]+)\]")


def _starts_block(line: str) -> bool:
    """Another rank's footer, [PID: n] code or [rankN]: prefix."""
    return bool(re.search(r"\(PID:\d+,|\[PID: \d+\]|\[rank\d+\]", line))


def _continues_block(line: str) -> bool:
    """The error text under a footer: the CANN code line and its indented details."""
    return line.startswith((" ", "\t", "[Error]:", "there are")) or bool(re.match(r"E[IJ]\d{4}: ", line))


class Bundle:
    def __init__(self, name: str) -> None:
        self.name = name
        self.spec = maf.SPECS[name]
        self.root = maf.FIXTURES / name
        self.logs = self.root / "logs"
        self.truth: dict[str, Any] = yaml.safe_load((self.root / "expected.yaml").read_text(encoding="utf-8"))["truth"]
        self.ranks = {r["rank"]: r for r in self.truth["ranks"]}
        # a rank's processes: one, or one per attempt where torchrun restarted the workers
        restarted = self.truth.get("restart_pids", {})
        self.pids = {r: {me["pid"]} | ({restarted[r]} if r in restarted else set()) for r, me in self.ranks.items()}
        self.by_pid = {pid: self.ranks[r] for r, pids in self.pids.items() for pid in pids}
        self.files = {p.relative_to(self.logs).as_posix(): p.read_text(encoding="utf-8") for p in sorted(self.logs.rglob("*")) if p.is_file()}

    def pid_files(self, pid: int) -> dict[str, str]:
        return {k: v for k, v in self.files.items() if (m := PLOG_NAME.search(k)) and int(m.group(1)) == pid}

    def screen_lines(self, rank: int) -> list[str]:
        """Screen lines this rank printed: [rankN]: prefixes, footers, [PID: n] codes, its own file."""
        pids = sorted(self.pids[rank])
        marks = (f"[rank{rank}]", *(f"(PID:{pid}," for pid in pids), *(f"[PID: {pid}]" for pid in pids), f"[Rank {rank}]")
        out: list[str] = []
        for path, text in self.files.items():
            if not path.startswith("train"):
                continue
            own = path == f"train_{rank}.log"
            mine = False  # inside a block this rank printed (a footer's error text follows it)
            for line in text.splitlines():
                if any(m in line for m in marks):
                    mine = True
                elif _starts_block(line) or not _continues_block(line):
                    mine = False
                if own or mine:
                    out.append(line)
        return out

    def text(self, rank: int) -> str:
        files = [t for pid in sorted(self.pids[rank]) for t in self.pid_files(pid).values()]
        return "\n".join([*files, *self.screen_lines(rank)])

    def global_rank(self, ident: str, group_rank: int) -> int:
        return int(self.truth["groups"][ident][group_rank])

    def has_plogs(self) -> bool:
        return self.spec.layout != "screen"


@pytest.fixture(scope="module", params=NAMES)
def bundle(request: pytest.FixtureRequest) -> Bundle:
    return Bundle(request.param)


def test_there_are_enough_bundles() -> None:
    assert len(NAMES) >= 14
    branches = {ascendgen.FAULTS[s.fault][2] for s in maf.SPECS.values()}
    assert len(branches - {""}) >= 12, sorted(branches)


@pytest.mark.parametrize("name", NAMES)
def test_committed_bundle_is_what_the_generator_writes(name: str) -> None:
    assert (maf.FIXTURES / name).is_dir(), f"run {maf.MADE_BY} {name}"
    assert maf.differences(maf.SPECS[name]) == []


@pytest.mark.parametrize("name", NAMES)
def test_truth_is_the_plan(name: str) -> None:
    spec = maf.SPECS[name]
    data = yaml.safe_load((maf.FIXTURES / name / "expected.yaml").read_text(encoding="utf-8"))
    assert data["truth"] == ascendgen.truth_dict(ascendgen.plan(spec))
    assert data["spec"]["name"] == name and data["made_by"] == maf.MADE_BY
    got = {p.relative_to(maf.FIXTURES / name / "logs").as_posix() for p in (maf.FIXTURES / name / "logs").rglob("*") if p.is_file()}
    assert got == set(data["truth"]["files"])


@pytest.mark.parametrize("name", NAMES)
def test_bundle_sizes_stay_small(name: str) -> None:
    size = sum(p.stat().st_size for p in (maf.FIXTURES / name).rglob("*") if p.is_file())
    assert size < (2_000_000 if maf.SPECS[name].servers * maf.SPECS[name].npus > 8 else 400_000)


def test_every_line_of_a_pids_file_is_that_pids(bundle: Bundle) -> None:
    """A plog or device log holds its own pid's lines only (HCCP service lines excepted)."""
    for path, text in bundle.files.items():
        m = PLOG_NAME.search(path)
        if not m:
            continue
        pid = int(m.group(1))
        me = bundle.by_pid[pid]
        assert path.split("/")[0] == me["server"], f"{path}: pid {pid} runs on {me['server']}"
        if dev := re.search(r"/device-(\d+)/", path):
            assert int(dev.group(1)) == me["device"], f"{path}: rank {me['rank']} uses device {me['device']}"
        for line in text.splitlines():
            lm = LINE_PID.match(line)
            if lm and "hccp_service.bin" not in line:
                assert int(lm.group(1)) == pid, f"{path}: {line[:80]}"


def test_key_info_agrees_with_the_truth(bundle: Bundle) -> None:
    """Entry/[Communicator|LocalRank Key Info] lines: group rank -> global rank, device, server."""
    claims: dict[int, set[int]] = {}
    for path, text in bundle.files.items():
        m = PLOG_NAME.search(path)
        if not m:
            continue
        me = bundle.by_pid[int(m.group(1))]
        ident = None
        for line in text.splitlines():
            if e := ENTRY.search(line):
                n, g, eid, logic = int(e.group(1)), int(e.group(2)), e.group(3), int(e.group(4))
                assert len(bundle.truth["groups"][eid]) == n
                assert bundle.global_rank(eid, g) == me["rank"], f"{path}: {line[:120]}"
                assert logic == me["logical"]
                claims.setdefault(bundle.global_rank(eid, g), set()).add(me["pid"])
            if c := COMM_KEY.search(line):
                ident = c.group(1)
            if k := LOCAL_KEY.search(line):
                assert ident is not None, f"{path}: LocalRank Key Info without its communicator"
                g = int(k.group(1))
                assert bundle.global_rank(ident, g) == me["rank"], f"{path}: {line[:120]}"
                assert (k.group(2), int(k.group(3)), k.group(4), k.group(5)) == (me["host_ip"], me["device"], me["host_ip"], me["device_ip"])
                claims.setdefault(me["rank"], set()).add(me["pid"])
    for text in (t for p, t in bundle.files.items() if p.startswith("train")):
        for f in FOOTER.finditer(text):
            pid, dev, rank = (int(x) for x in f.groups())
            assert pid in bundle.pids[rank] and bundle.ranks[rank]["logical"] == dev, f.group(0)
            claims.setdefault(rank, set()).add(pid)
    for rank, pids in claims.items():
        assert pids <= bundle.pids[rank], f"rank {rank} claimed by pids {pids}"
    for rank in bundle.truth["culprit_ranks"]:
        assert claims.get(rank, set()) <= bundle.pids[rank]


def test_rank_table_matches_the_truth(bundle: Bundle) -> None:
    if "rank_table.json" not in bundle.files:
        pytest.skip("no rank table in this bundle")
    import json

    doc = json.loads(bundle.files["rank_table.json"])
    for server in doc["server_list"]:
        for d in server["device"]:
            me = bundle.ranks[int(d["rank_id"])]
            assert (server["server_id"], int(d["device_id"]), d["device_ip"]) == (me["host_ip"], me["device"], me["device_ip"])


def test_permuted_devices_are_not_local_ranks(bundle: Bundle) -> None:
    if not bundle.spec.visible:
        pytest.skip("identity device mapping")
    moved = [r for r in bundle.truth["ranks"] if r["device"] != r["logical"]]
    assert moved, "a permuted job must have ranks whose device is not their local rank"


# --------------------------------------------------------------------------------------------
# The injected fault's evidence, per branch

EI0006 = ("Getting socket times out", "wait socket establish timeout")
EI0002 = "The wait execution of the Notify register times out"


def _wait_edges(b: Bundle) -> dict[int, int]:
    """Global rank -> global rank it waited on at link establishment (Transport init error)."""
    edges: dict[int, int] = {}
    for r in b.ranks:
        for line in b.text(r).splitlines():
            if "Transport init error" in line and (m := REMOTE.search(line)):
                ident = m.group(4)
                edges[r] = b.global_rank(ident, int(m.group(2)))
    return edges


def _walk(edges: dict[int, int], start: int) -> tuple[int, set[int]]:
    """Follow waits from start: (end, set()) at a rank that waits on nobody, or (-1, cycle)."""
    seen: list[int] = []
    r = start
    while r in edges:
        if r in seen:
            return -1, set(seen[seen.index(r):])
        seen.append(r)
        r = edges[r]
    return r, set()


def _root_lists(b: Bundle) -> None:
    root = b.text(0)
    n = b.truth["world_size"]
    assert f"need connect rankNum is [{n}]" in root
    listed = {int(x) for x in re.findall(r"\[(\d{16})\]", root)}
    assert listed == set(range(n)) - set(b.truth["culprit_ranks"])
    agents = "".join(f"{r}," for r in b.truth["culprit_ranks"])
    for v in b.truth["victims"]:
        assert f"Failed to connect agent[{agents}]" in b.text(v), f"rank {v}"


def check_init_root(b: Bundle) -> None:
    _root_lists(b)
    c = b.truth["culprit_ranks"][0]
    assert "Entry-HcclCommInitRootInfo" not in b.text(c)
    assert "FileNotFoundError" in b.text(c)


def check_init_agent(b: Bundle) -> None:
    _root_lists(b)
    c = b.truth["culprit_ranks"][0]
    assert "TopoExchangeAgent: connect server[10.90.42.160 : 60000] failed" in b.text(c)


def check_init_rank_error(b: Bundle) -> None:
    c = b.truth["culprit_ranks"][0]
    assert "is not a valid real path" in b.text(c) and "EI0004: " in b.text(c)
    assert not any(s in b.text(c) for s in EI0006)
    for v in b.truth["victims"]:
        assert all(s in b.text(v) for s in EI0006), f"rank {v}"
    assert _walk(_wait_edges(b), b.truth["victims"][0])[0] == c


def check_ei0006_non_reporter(b: Bundle) -> None:
    c = b.truth["culprit_ranks"][0]
    assert not any(s in b.text(c) for s in EI0006)
    for v in b.truth["victims"]:
        assert "EI0006: " in b.text(v) and "LINK_ERROR_INFO" in b.text(v), f"rank {v}"
    edges = _wait_edges(b)
    assert c in edges.values(), "some victim must wait on the culprit directly"
    assert any(t != c for t in edges.values()), "a cascade: some victims wait on other victims"


def check_chain_end(b: Bundle) -> None:
    c = b.truth["culprit_ranks"][0]
    edges = _wait_edges(b)
    assert set(edges) == set(b.truth["victims"])
    assert all(_walk(edges, v)[0] == c for v in edges), edges
    assert any(edges[v] != c for v in edges), "the chain must have more than one hop"
    # the chain is written in group ranks that differ from the global ones
    assert any(int(m.group(2)) != edges[v] for v in edges for m in REMOTE.finditer(b.text(v)))
    outside = set(b.ranks) - set(b.truth["groups"]["group_name_1"])
    assert outside and not any(s in b.text(r) for r in outside for s in EI0006)


def check_chain_cycle(b: Bundle) -> None:
    edges = _wait_edges(b)
    assert len(edges) == b.truth["world_size"]
    for v in edges:
        end, cycle = _walk(edges, v)
        assert end == -1 and cycle == set(b.truth["culprit_ranks"]), (v, edges)
    ends = b.truth["link"]["ends"]
    assert ends[0]["server_ip"] != ends[1]["server_ip"]
    for r in b.truth["culprit_ranks"]:
        assert "CONNECT TIMEOUT DETECT RESULT" in b.text(r)


def check_tls(b: Bundle) -> None:
    c = b.truth["culprit_ranks"][0]
    switches = {r: re.findall(r"TLS SWITCH \((\d)\)", b.text(r)) for r in b.ranks}
    assert switches[c] == ["1"] and all(v == ["0"] for r, v in switches.items() if r != c)
    for r in b.ranks:
        assert "EI0006: " in b.text(r), f"rank {r}: all ranks time out"
    assert "time out |   ENABLE" in b.text(c)


def check_ei0005(b: Bundle) -> None:
    c = b.truth["culprit_ranks"][0]
    assert "CMD information" in b.text(c)
    reporters = [r for r in b.ranks if "CMD information" in b.text(r)]
    assert len(reporters) == 3 and c in reporters
    others = [r for r in reporters if r != c]
    # the culprit disagrees with each of its neighbours; the neighbours agree with each other
    mine = re.findall(r"check fail\. local\[([^\]]+)\]", b.text(c))
    theirs = {tuple(re.findall(r"check fail\. local\[([^\]]+)\]", b.text(r))) for r in others}
    assert len(theirs) == 1 and set(mine).isdisjoint(next(iter(theirs)))


def check_ei0002_non_reporter(b: Bundle) -> None:
    c = b.truth["culprit_ranks"][0]
    assert EI0002 not in b.text(c)
    for v in b.truth["victims"]:
        assert EI0002 in b.text(v), f"rank {v}"
    if b.spec.layout == "screen":
        assert all("WorkHCCL(SeqNum=" in b.text(v) for v in b.truth["victims"])


def check_heartbeat(b: Bundle) -> None:
    c = b.truth["culprit_ranks"][0]
    where = b.truth["culprit_devices"][0]
    for v in b.truth["victims"]:
        t = b.text(v)
        assert EI0002 in t and f"Cluster Exception Location[IP/ID]:[{where}]" in t, f"rank {v}"
        if b.has_plogs():
            assert f"crimer rank [{where}]" in t
    assert "Cluster Exception Location" not in b.text(c)
    assert int(where.split("/")[1]) != b.ranks[c]["logical"], "device id must not be the local rank here"


def check_cqe(b: Bundle) -> None:
    link = b.truth["link"]
    remotes = Counter(re.findall(r"remoteIP\{server\[[^\]]+\],deviceId\[\d+\],deviceIp\[([^\]]+)\]", "\n".join(b.text(r) for r in b.ranks)))
    locals_ = Counter(re.findall(r"localInfo\{server\[[^\]]+\],deviceId\[\d+\],deviceIp\[([^\]]+)\]", "\n".join(b.text(r) for r in b.ranks)))
    seen = remotes + locals_
    end = next(e for e in link["ends"] if e["rank"] == link["endpoint"])
    other = next(e for e in link["ends"] if e["rank"] != link["endpoint"])
    assert seen.most_common(1)[0][0] == end["device_ip"], seen
    assert other["device_ip"] in seen
    assert "Execution Error ROCE CQE(EI0013)" in b.text(end["rank"])


def check_spread(b: Bundle) -> None:
    c = b.truth["culprit_ranks"][0]
    stamp = re.compile(r"(\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d)\.\d{3}\.\d{3} \[task_exception_handler\.cc:908\]")
    import calendar
    import time as _time

    def first(r: int) -> int:
        m = stamp.search(b.text(r))
        assert m, f"rank {r} has no task exception"
        return calendar.timegm(_time.strptime(m.group(1), "%Y-%m-%d-%H:%M:%S"))

    times = {r: first(r) for r in b.ranks}
    timeout = int(re.search(r"HCCL_EXEC_TIMEOUT set [a-z ]+ to \[(\d+)\]s", b.text(0)).group(1))  # type: ignore[union-attr]
    assert max(times, key=lambda r: times[r]) == c
    assert max(times.values()) - min(times.values()) > timeout


def check_ej0001(b: Bundle) -> None:
    c = b.truth["culprit_ranks"][0]
    t = b.text(c)
    assert "EJ0001" in t and "Failed to initialize the HCCP process" in t
    _root_lists(b)


def check_none(b: Bundle) -> None:
    for path, text in b.files.items():
        assert "[ERROR]" not in text and not re.search(r"\bE[IJ]\d{4}\b", text), path
    assert all("Entry-HcclCommDestroy" in b.text(r) for r in b.ranks)


CHECKS: dict[str, Callable[[Bundle], None]] = {
    "": check_none,
    "init_root_connected_vs_needed": check_init_root,
    "init_agent_connect_failed": check_init_agent,
    "init_rank_local_error": check_init_rank_error,
    "ei0006_non_reporter": check_ei0006_non_reporter,
    "wait_chain_end": check_chain_end,
    "wait_chain_cycle": check_chain_cycle,
    "tls_minority": check_tls,
    "ei0005_parameter_mismatch": check_ei0005,
    "ei0002_non_reporter": check_ei0002_non_reporter,
    "heartbeat_exception_location": check_heartbeat,
    "error_cqe_link": check_cqe,
    "exec_spread_last_device": check_spread,
    "ej0001_stale_process": check_ej0001,
}


# --------------------------------------------------------------------------------------------
# "Must lose" bundles: the losing branch's evidence is present and names truth.loser_culprit_ranks;
# the winning branch's evidence names the culprit.


def _tls_switches(b: Bundle) -> dict[int, list[str]]:
    return {r: re.findall(r"TLS SWITCH \((\d)\)", b.text(r)) for r in b.ranks}


def _tls_minority(b: Bundle) -> list[int]:
    sw = _tls_switches(b)
    assert all(len(v) == 1 for v in sw.values()), sw
    votes = Counter(v[0] for v in sw.values())
    minority = min(votes, key=lambda k: votes[k])
    assert votes[minority] < len(sw) / 2, votes
    return sorted(r for r, v in sw.items() if v[0] == minority)


def _first_exception(b: Bundle, r: int) -> int | None:
    import calendar
    import time as _time

    stamp = re.compile(r"(\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d)\.\d{3}\.\d{3} \[task_exception_handler\.cc:908\]")
    m = stamp.search(b.text(r))
    return calendar.timegm(_time.strptime(m.group(1), "%Y-%m-%d-%H:%M:%S")) if m else None


def _cqe_endpoints(b: Bundle) -> Counter[str]:
    text = "\n".join(b.text(r) for r in b.ranks)
    ips = re.findall(r"(?:remoteIP|localInfo)\{server\[[^\]]+\],deviceId\[\d+\],deviceIp\[([^\]]+)\]", text)
    return Counter(ips)


def _rank_of_ip(b: Bundle, device_ip: str) -> int:
    return int(next(r for r, me in b.ranks.items() if me["device_ip"] == device_ip))


def _device(b: Bundle, r: int) -> str:
    return f"{b.ranks[r]['host_ip']}/{b.ranks[r]['device']}"


def _screens(b: Bundle) -> str:
    return "\n".join(t for p, t in b.files.items() if p.startswith("train"))


def lose_init_root(b: Bundle, c: int, losers: list[int]) -> None:
    n = b.truth["world_size"]
    root = b.text(0)
    assert f"need connect rankNum is [{n}]" in root
    assert {int(x) for x in re.findall(r"\[(\d{16})\]", root)} == set(range(n)) - set(losers)  # loser
    assert "Failed to connect agent[" + "".join(f"{r}," for r in losers) + "]" in root
    assert "ifname[docker0], ip[172.17.0.1]" in b.text(c)  # winner: the root advertises docker0
    for r in b.ranks:
        assert "rootinfo: host ip[172.17.0.1]" in b.text(r)
    for r in losers:
        assert "TopoExchangeAgent: connect server[172.17.0.1 : 60000] failed" in b.text(r)
        assert b.ranks[r]["host_ip"] != b.ranks[c]["host_ip"]


def lose_init_agent(b: Bundle, c: int, losers: list[int]) -> None:
    assert "EJ0001" in b.text(c) and "Failed to initialize the HCCP process" in b.text(c)
    assert "connect server[" not in b.text(c)
    for r in losers:  # every agent failed to reach the root, whose host is the culprit's
        assert f"TopoExchangeAgent: connect server[{b.ranks[c]['host_ip']} : 60000] failed" in b.text(r)
    assert not any("DisplayConnectionedRank" in t for t in b.files.values())


def lose_ei0006(b: Bundle, c: int, losers: list[int]) -> None:
    assert _tls_minority(b) == [c] and "time out |   ENABLE" in b.text(c)
    silent = [r for r in b.ranks if not any(s in b.text(r) for s in EI0006)]
    assert silent == losers
    for r in losers:
        assert "Entry-HcclAllReduce" in b.text(r)
        assert f"Sending process {b.ranks[r]['pid']} closing signal SIGTERM" in _screens(b)


def lose_chain_end(b: Bundle, c: int, losers: list[int]) -> None:
    reporters = sorted(r for r in b.ranks if "CMD information" in b.text(r))
    assert c in reporters and len(reporters) == 3
    mine = re.findall(r"check fail\. local\[([^\]]+)\]", b.text(c))
    theirs = {tuple(re.findall(r"check fail\. local\[([^\]]+)\]", b.text(r))) for r in reporters if r != c}
    assert len(theirs) == 1 and set(mine).isdisjoint(next(iter(theirs)))
    edges = _wait_edges(b)
    assert edges and {_walk(edges, v)[0] for v in edges} == set(losers)


def lose_cycle(b: Bundle, c: int, losers: list[int]) -> None:
    assert _tls_minority(b) == [c]
    edges = _wait_edges(b)
    assert len(edges) == b.truth["world_size"]
    for v in edges:
        end, cycle = _walk(edges, v)
        assert end == -1 and cycle == set(losers), (v, edges)
    assert len({b.ranks[r]["host_ip"] for r in losers}) == 2, "the cycle crosses servers"


def lose_tls(b: Bundle, c: int, losers: list[int]) -> None:
    edges = _wait_edges(b)
    assert set(edges) == set(b.truth["victims"]) and all(_walk(edges, v)[0] == c for v in edges)
    assert _tls_minority(b) == losers
    assert not set(losers) & set(b.truth["groups"]["group_name_1"])


def lose_ei0002(b: Bundle, c: int, losers: list[int]) -> None:
    assert sorted(r for r in b.ranks if EI0002 not in b.text(r)) == losers
    for v in b.truth["victims"]:
        assert f"Cluster Exception Location[IP/ID]:[{_device(b, c)}]" in b.text(v), v
    for r in b.ranks:
        if r != c:
            assert f"crimer rank [{_device(b, c)}] status[STUCK]" in b.text(r), r


def lose_heartbeat(b: Bundle, c: int, losers: list[int]) -> None:
    (q,) = losers
    seen = _cqe_endpoints(b)
    assert _rank_of_ip(b, seen.most_common(1)[0][0]) == c, seen
    named = set()
    for r in b.ranks:
        named |= set(re.findall(r"Cluster Exception Location\[IP/ID\]:\[([^\]]+)\]", b.text(r)))
    assert named == {_device(b, q)}
    assert "ROCE CQE(EI0013)" in b.text(q), "the heartbeat's LOST rank exited after its own error CQE"


def lose_cqe(b: Bundle, c: int, losers: list[int]) -> None:
    pid = b.ranks[c]["pid"]
    assert f"exitcode  : -9 (pid: {pid})" in _screens(b) and f"Signal 9 (SIGKILL) received by PID {pid}" in _screens(b)
    other = [r for r in b.ranks if b.ranks[r]["host_ip"] != b.ranks[c]["host_ip"]]
    for r in other:
        assert f"crimer rank [{_device(b, c)}] status[LOST]" in b.text(r), r
    seen = _cqe_endpoints(b)
    assert {_rank_of_ip(b, ip) for ip in seen} == set(losers) and len(set(seen.values())) == 1, seen
    assert "[ERROR]" not in b.text(c)


def lose_spread(b: Bundle, c: int, losers: list[int]) -> None:
    assert [r for r in b.ranks if EI0002 not in b.text(r)] == [c]
    times = {r: t for r in b.ranks if (t := _first_exception(b, r)) is not None}
    timeout = int(re.search(r"HCCL_EXEC_TIMEOUT set [a-z ]+ to \[(\d+)\]s", b.text(0)).group(1))  # type: ignore[union-attr]
    assert max(times.values()) - min(times.values()) > timeout
    assert [max(times, key=lambda r: (times[r], r))] == losers or times[losers[0]] == max(times.values())


def _when(stamp: str) -> int:
    """Epoch seconds of a plog/footer stamp (yyyy-mm-dd-hh:mm:ss, any fraction dropped)."""
    import calendar
    import time as _time

    return calendar.timegm(_time.strptime(stamp[:19], "%Y-%m-%d-%H:%M:%S"))


def _footer_time(b: Bundle, r: int, err: str) -> int:
    """When rank r's torch_npu footer with this ERR code was printed."""
    m = re.search(rf"\[ERROR\] (\S+) \(PID:\d+, Device:\d+, RankID:{r}\) {err}", b.text(r))
    assert m, f"rank {r}: no {err} footer"
    return _when(m.group(1))


def lose_ej0001(b: Bundle, c: int, losers: list[int]) -> None:
    (q,) = losers
    screens = _screens(b)
    # attempt 0: the heartbeat names the culprit's device (STUCK); the culprit alone has no EI0002
    assert [r for r in b.ranks if EI0002 not in b.text(r)] == [c]
    for v in b.truth["victims"]:
        assert f"Cluster Exception Location[IP/ID]:[{_device(b, c)}]" in b.text(v) and "Stuck Occurred" in b.text(v), v
    # torchrun restarted the workers; the loser's EJ0001 is the second attempt's, and its device was
    # held by the loser's own first-attempt process, which torchrun had just SIGTERMed
    restart_at = screens.index("Worker group FAILED. 1/1 attempts left; will restart worker group")
    assert "restart_count=1" in screens[restart_at:] and screens.index("EJ0001: ") > restart_at
    assert f"Sending process {b.ranks[q]['pid']} closing signal SIGTERM" in screens[:restart_at]
    assert f"is occupied by pid {b.ranks[q]['pid']}" in b.text(q)
    assert f"(PID:{b.truth['restart_pids'][q]}, Device:{b.ranks[q]['logical']}, RankID:{q}) ERR02200" in screens
    assert [r for r in b.ranks if "EJ0001" in b.text(r)] == [q]
    assert f"rank      : {q} (local_rank: " in screens  # torchrun's final root cause names the loser too
    assert _footer_time(b, q, "ERR02200") > max(_footer_time(b, v, "ERR00100") for v in b.truth["victims"])


def lose_ei0005(b: Bundle, c: int, losers: list[int]) -> None:
    reporters = sorted(r for r in b.ranks if "CMD information" in b.text(r))
    assert reporters == sorted(set(b.ranks) - {c})
    own = {r: set(re.findall(r"CMD information tag check fail\. local\[([A-Za-z]+)_", b.text(r))) for r in reporters}
    assert all(len(v) == 1 for v in own.values()), own
    votes = Counter(next(iter(v)) for v in own.values())
    odd = min(votes, key=lambda k: votes[k])
    assert len(votes) == 2 and votes[odd] < len(reporters) / 2, votes
    assert sorted(r for r in reporters if own[r] == {odd}) == losers  # the odd operator out: the loser's pick
    # the culprit never entered the first collective and logged no error; every other rank entered the
    # broadcast, and the losers had moved on from it to the all-reduce
    assert not re.search(r"Entry-Hccl(Broadcast|AllReduce)", b.text(c)) and "[ERROR]" not in b.text(c)
    assert "loading pretrained weights" in b.text(c) and "loaded 291 tensors" not in b.text(c)
    for r in reporters:
        t = b.text(r)
        assert "Entry-HcclBroadcast" in t and ("Entry-HcclAllReduce" in t) == (r in losers), r
        assert r in losers or t.index("Entry-HcclBroadcast") < t.index("CMD information"), r
    # the ranks still in the broadcast are exactly the culprit's link partners (server mates, same local index)
    me = b.ranks[c]
    partners = {r for r, x in b.ranks.items() if r != c and (x["server"] == me["server"] or x["logical"] == me["logical"])}
    assert set(reporters) - set(losers) == partners


def lose_init_store(b: Bundle, c: int, losers: list[int]) -> None:
    (q,) = losers
    assert "EJ0001" in b.text(c) and "Failed to initialize the HCCP process" in b.text(c)
    # the loser is the one rank whose error is its own store call's; it never started HCCL
    assert [r for r in b.ranks if "store->get('0') got error" in b.text(r)] == [q]
    assert "ERR02005 DIST internal error" in b.text(q) and "HCCL(" not in b.text(q)
    # the store lived in rank 0's process, which had exited before the loser asked it; the others had
    # fetched the root info and timed out connecting to the root
    ej, asked = _footer_time(b, c, "ERR02200"), _footer_time(b, q, "ERR02005")
    assert ej < asked
    others = [r for r in b.ranks if r not in (c, q)]
    for r in others:
        assert f"TopoExchangeAgent: connect server[{b.ranks[c]['host_ip']} : 60000] failed" in b.text(r), r
    # late, but inside the negotiation window the root would have waited (HCCL_CONNECT_TIMEOUT)
    entered = min(_when(m) for r in others for m in re.findall(r"\):(\S+) \[op_base\.cc:1293\]", b.text(r)))
    timeout = int(re.search(r"HCCL_CONNECT_TIMEOUT set [a-z ]+ to \[(\d+)\]s", b.text(c)).group(1))  # type: ignore[union-attr]
    assert entered < asked < entered + timeout
    assert not any("DisplayConnectionedRank" in t for t in b.files.values())


LOSE_CHECKS: dict[str, Callable[[Bundle, int, list[int]], None]] = {
    "lose-init-root": lose_init_root,
    "lose-init-agent": lose_init_agent,
    "lose-ei0006": lose_ei0006,
    "lose-chain-end": lose_chain_end,
    "lose-cycle": lose_cycle,
    "lose-tls": lose_tls,
    "lose-ei0002": lose_ei0002,
    "lose-heartbeat": lose_heartbeat,
    "lose-cqe": lose_cqe,
    "lose-spread": lose_spread,
    "lose-ej0001": lose_ej0001,
    "lose-ei0005": lose_ei0005,
    "lose-init-store": lose_init_store,
}


def test_the_fault_left_its_evidence(bundle: Bundle) -> None:
    if "loser_branch" in bundle.truth:
        t = bundle.truth
        LOSE_CHECKS[t["fault"]](bundle, t["culprit_ranks"][0], t["loser_culprit_ranks"])
        return
    CHECKS[bundle.truth["branch"]](bundle)


def test_lose_bundles_name_a_loser() -> None:
    """Each lose bundle's loser is another branch than its winner, and names other ranks."""
    losers = [n for n in NAMES if "loser_branch" in Bundle(n).truth]
    assert len(losers) >= 10
    seen = set()
    for n in losers:
        t = Bundle(n).truth
        assert n.startswith("ascend-lose-") and t["loser_branch"] in CHECKS and t["loser_branch"] != t["branch"]
        assert t["loser_culprit_ranks"] and t["loser_culprit_ranks"] != t["culprit_ranks"]
        assert list(t).index("loser_branch") == list(t).index("branch") + 1
        seen.add(t["loser_branch"])
    assert len(seen) == len(losers), "one lose bundle per branch"
    assert all("loser_branch" not in Bundle(n).truth for n in NAMES if not n.startswith("ascend-lose-"))


def test_victims_report_and_the_culprit_is_not_a_victim(bundle: Bundle) -> None:
    culprits = set(bundle.truth["culprit_ranks"])
    assert culprits.isdisjoint(bundle.truth["victims"])
    for v in bundle.truth["victims"]:
        assert re.search(r"\bE[IJ]\d{4}\b|\[ERROR\]", bundle.text(v)), f"victim {v} reports nothing"


def test_checks_can_fail() -> None:
    """The evidence checks reject a truth that names the wrong rank."""
    b = Bundle("ascend-ei0006-silent-rank2")
    b.truth = {**b.truth, "culprit_ranks": [3], "victims": [r for r in b.ranks if r != 3]}
    with pytest.raises(AssertionError):
        check_ei0006_non_reporter(b)
    lose = Bundle("ascend-lose-ei0006-rank5")
    with pytest.raises(AssertionError):
        lose_ei0006(lose, 5, [1])
    with pytest.raises(AssertionError):
        lose_ei0006(lose, 0, [0])
    for name, check, culprit, losers in (
        ("ascend-lose-ej0001-rank3", lose_ej0001, 3, [5]),  # the first-attempt exiter, not the stale device
        ("ascend-lose-ei0005-rank5", lose_ei0005, 5, [1, 4, 6, 7]),  # the majority operator
        ("ascend-lose-init-store-rank0", lose_init_store, 6, [0]),  # culprit and loser swapped
    ):
        with pytest.raises(AssertionError):
            check(Bundle(name), culprit, losers)
