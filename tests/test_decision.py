"""The decision stage: each row of the built-in policy on real bundles, a user's policy, bad policies.

The bundles are the fixtures' own (tests/fixtures/<name>, with their expected.yaml): the decision
is computed from the verdict they get, the same as `triage analyze` prints.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from triage.api import analyze
from triage.decision import PolicyError, default_policy, load_policy
from triage.model import Decision, Report

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
FLIGHT_RECORDER = {"TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DUMP_ON_TIMEOUT"}


def _analyze(name: str, policy_file: Path | None = None) -> Report:
    folder = FIXTURES / name
    expected = yaml.safe_load((folder / "expected.yaml").read_text(encoding="utf-8"))
    inputs = [str(p) for p in sorted(folder.iterdir()) if p.name not in ("expected.yaml", "README.md")]
    return analyze(inputs, world_size=(expected.get("args") or {}).get("world_size"), jobs=1,
                   policy=load_policy(policy_file) if policy_file else None)


def _decision(name: str, policy_file: Path | None = None) -> Decision:
    decision = _analyze(name, policy_file).decision
    assert decision is not None
    return decision


# --- each row of the built-in table, on a bundle it decides ---------------------------------------

# (fixture, the row that must decide, action, hosts excluded, ranks to drop)
ROWS = [
    ("real-gloo-clean", "no-failure", "none", [], []),
    ("nccl24-only-host0-inconclusive", "not-confident", "investigate", [], []),
    ("nccl24-slurm-interleaved-rank7", "device-fault-in-code", "stop", [], []),
    ("ascendfd-aicpu-notify", "device-fault", "requeue-excluding", ["worker-0"], [0]),
    ("ascend-ej0001-rank7", "device-fault", "requeue-excluding", ["atlas-a01"], list(range(8))),
    ("nccl24-ib-host3", "network-fault", "requeue-excluding", ["gpu-node-03"], list(range(16, 24))),
    ("ascend-link-cycle-rank2-rank6", "network-fault", "requeue-excluding", ["10.90.42.160", "10.90.42.161"],
     [2, 6]),
    ("real-mismatch-op-rank3", "code-or-configuration", "stop", [], []),
    ("real-oom-rank2", "code-or-configuration", "stop", [], []),
    ("ascend-init-ranktable-rank3", "code-or-configuration", "stop", [], []),
    ("excerpt-nccl-closed-by-remote-peer-host", "node-went-away", "requeue-excluding", ["node07"], []),
    ("real-gloo-sigkill-rank1", "killed-from-outside", "requeue", [], []),
    ("real-first-segfault-rank0", "crashed-in-code", "stop", [], []),
    ("real-gloo-exception-rank3", "exception-or-exit", "stop", [], []),
    ("real-gloo-hang-rank2", "hang", "requeue", [], []),
    ("excerpt-nccl-ib-completion-execution", "node-went-away", "requeue-excluding", ["10.1.2.33"], []),
    ("ras-dead-process", "died-without-a-cause", "requeue", [], []),
    ("nccl26-missing-log-rank5", "stopped-silently", "requeue", [], []),
]
# The catch-all: with the built-in rows every verdict has a row of its own before it.
CATCH_ALL = "anything-else"


@pytest.mark.parametrize(("fixture", "row", "action", "hosts", "ranks"), ROWS, ids=[r[0] for r in ROWS])
def test_each_row_decides_its_bundle(fixture: str, row: str, action: str, hosts: list[str],
                                     ranks: list[int]) -> None:
    decision = _decision(fixture)
    assert (decision.rule, decision.action) == (row, action), decision.reason
    assert decision.hosts == hosts
    assert decision.ranks == ranks
    assert decision.requeue is (action in ("requeue", "requeue-excluding"))
    assert decision.exit_code == default_policy().exit_codes[action]
    assert "{" not in decision.reason  # every placeholder filled


def test_every_row_of_the_built_in_table_is_exercised() -> None:
    rows = default_policy().rows
    assert {r.id for r in rows} - {CATCH_ALL} == {row for _, row, *_ in ROWS}
    assert (rows[-1].id, rows[-1].when, rows[-1].action) == (CATCH_ALL, {}, "investigate")


@pytest.mark.parametrize("fixture", ["real-gloo-hang-rank2", "nccl26-missing-log-rank5", "ras-dead-process"])
def test_a_hang_is_requeued_with_the_flight_recorder_and_says_which_settings(fixture: str) -> None:
    decision = _decision(fixture)
    assert set(decision.env) >= FLIGHT_RECORDER
    for name, value in decision.env.items():
        assert f"{name}={value}" in decision.reason
    assert decision.exclude == []


def test_only_the_rows_that_ask_for_it_carry_settings() -> None:
    for fixture in ("nccl24-ib-host3", "real-gloo-sigkill-rank1", "real-mismatch-op-rank3", "real-gloo-clean"):
        assert _decision(fixture).env == {}


def test_a_device_fault_excludes_the_culprits_node_and_names_the_rank() -> None:
    decision = _decision("ascendfd-aicpu-notify")
    [exclusion] = decision.exclude
    assert (exclusion.kind, exclusion.host, exclusion.rank) == ("host", "worker-0", 0)
    assert "device error" in exclusion.why


def test_a_link_excludes_both_ends_and_keeps_them_apart() -> None:
    [exclusion] = _decision("ascend-link-cycle-rank2-rank6").exclude
    assert (exclusion.kind, exclusion.host, exclusion.rank, exclusion.peer, exclusion.peer_rank) == \
        ("link", "10.90.42.160", 2, "10.90.42.161", 6)


def test_a_culprit_with_no_known_node_is_excluded_as_a_rank(tmp_path: Path) -> None:
    policy = _policy_file(tmp_path, [{"id": "all", "when": {}, "action": "requeue-excluding",
                                          "reason": "exclude {culprits}"}])
    decision = _decision("nccl26-missing-log-rank5", policy)
    [exclusion] = decision.exclude
    assert (exclusion.kind, exclusion.host, exclusion.rank) == ("rank", None, 5)
    assert decision.hosts == [] and decision.ranks == [5]
    assert "node is not known" in exclusion.why


# --- a user's table --------------------------------------------------------------------------------

def _policy_file(folder: Path, rows: list[dict[str, object]], **top: object) -> Path:
    path = folder / "policy.yaml"
    path.write_text(yaml.safe_dump({"version": 1, **top, "rules": rows}), encoding="utf-8")
    return path


def test_a_user_policy_replaces_the_table(tmp_path: Path) -> None:
    # A site that trusts no hardware verdict: every network fault goes to a person, and SIGKILL stops.
    path = _policy_file(tmp_path, [
        {"id": "site-network", "when": {"category": "network_fault"}, "action": "investigate",
         "reason": "our NICs are checked by hand: {hosts}"},
        {"id": "site-kill", "when": {"signal": ["9"]}, "action": "stop", "reason": "{culprits} got {signal}"},
        {"id": "rest", "when": {}, "action": "none", "reason": "fine"},
    ], exit_codes={"investigate": 42})
    network = _decision("nccl24-ib-host3", path)
    assert (network.rule, network.action, network.exit_code) == ("site-network", "investigate", 42)
    assert network.reason == "our NICs are checked by hand: gpu-node-03" and network.exclude == []
    killed = _decision("real-gloo-sigkill-rank1", path)
    assert (killed.rule, killed.action, killed.exit_code) == ("site-kill", "stop", 93)
    assert killed.reason == "rank 1 (node01) got SIGKILL"
    assert _decision("real-mismatch-op-rank3", path).rule == "rest"


def test_evidence_conditions(tmp_path: Path) -> None:
    path = _policy_file(tmp_path, [
        {"id": "by-rule", "when": {"evidence_rule": "nccl-ib-*"}, "action": "requeue-excluding", "reason": "ib"},
        {"id": "by-text", "when": {"evidence_text": "ValueError|RuntimeError"}, "action": "stop", "reason": "t"},
        {"id": "by-kind", "when": {"culprit_kind": "link"}, "action": "investigate", "reason": "k"},
        {"id": "by-category", "when": {"evidence_category": "device_error"}, "action": "investigate", "reason": "c"},
        {"id": "rest", "when": {}, "action": "none", "reason": "r"},
    ])
    assert _decision("nccl24-ib-host3", path).rule == "by-rule"
    assert _decision("real-gloo-exception-rank3", path).rule == "by-text"
    assert _decision("ascend-link-cycle-rank2-rank6", path).rule == "by-kind"
    assert _decision("ascendfd-aicpu-notify", path).rule == "by-category"
    assert _decision("real-gloo-clean", path).rule == "rest"


def test_a_higher_confidence_bar_sends_a_diagnosed_verdict_to_a_person(tmp_path: Path) -> None:
    report = _analyze("real-gloo-hang-rank2")
    assert report.verdict.confidence < 0.99
    rows = [{"id": "unsure", "when": {"confident": False}, "action": "investigate", "reason": "{confidence}"},
            {"id": "rest", "when": {}, "action": "none", "reason": "r"}]
    strict = _decision("real-gloo-hang-rank2", _policy_file(tmp_path, rows, confident=0.99))
    assert (strict.rule, strict.reason) == ("unsure", f"{report.verdict.confidence:.2f}")
    assert _decision("real-gloo-clean", _policy_file(tmp_path, rows, confident=0.99)).rule == "rest"


BAD = [
    ("version: 2\nrules: [{id: a, when: {}, action: none, reason: r}]\n", "version must be 1"),
    ("version: 1\nrules: []\n", "rules must be a list"),
    ("version: 1\nrules: [{id: a, when: {}, action: reboot, reason: r}]\n", "action must be one of"),
    ("version: 1\nrules: [{id: a, when: {colour: red}, action: none, reason: r}]\n", "unknown condition 'colour'"),
    ("version: 1\nrules: [{id: a, when: {category: flaky}, action: none, reason: r}]\n",
     "category 'flaky' is not one of"),
    ("version: 1\nrules: [{id: a, when: {signal: SIGWHAT}, action: none, reason: r}, {id: b, when: {}, "
     "action: none, reason: r}]\n", "signal 'SIGWHAT' is not a signal"),
    ("version: 1\nrules: [{id: a, when: {evidence_text: '(unclosed'}, action: none, reason: r}]\n",
     "evidence_text does not compile"),
    ("version: 1\nrules: [{id: a, when: {}, action: none, reason: 'see {node}'}]\n", "{node} is not a placeholder"),
    ("version: 1\nrules: [{id: a, when: {}, action: none, reason: '{confidence:.1f}'}]\n",
     "{confidence:.1f} is not a placeholder"),
    ("version: 1\nrules: [{id: a, when: {status: diagnosed}, action: stop, reason: r}]\n",
     "the last row must have an empty `when: {}`"),
    ("version: 1\nrules: [{id: a, when: {}, action: none, reason: r}, {id: a, when: {}, action: none, reason: r}]\n",
     "row id 'a' is used twice"),
    ("version: 1\nexit_codes: {stop: 2}\nrules: [{id: a, when: {}, action: none, reason: r}]\n",
     "stop cannot be 2"),
    ("version: 1\nconfident: 7\nrules: [{id: a, when: {}, action: none, reason: r}]\n",
     "confident must be a number from 0 to 1"),
    ("version: 1\nrules: &r [{id: a, when: {}, action: none, reason: r}]\nx: *r\n", "anchors and aliases"),
    ("version: 1\nrules: [{id: a, when: {}, action: none, reason: r}\n", "cannot read policy"),
    ("- just\n- a list\n", "holds one mapping"),
    ("version: 1\nrules: [{id: a, when: {}, action: stop, reason: r, flight_recorder: true}]\n",
     "flight_recorder is for a requeue"),
]


@pytest.mark.parametrize(("text", "says"), BAD, ids=[s for _, s in BAD])
def test_a_bad_policy_is_refused_with_what_is_wrong(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert str(caught.value).startswith(str(path)) and says in str(caught.value)


def test_a_policy_that_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read policy"):
        load_policy(tmp_path / "missing.yaml")
    with pytest.raises(PolicyError, match="not a regular file"):
        load_policy(tmp_path)


def test_the_built_in_table_loads_as_a_user_file_would() -> None:
    # The strict reader (no anchors, pure-Python loader) accepts the shipped file as it is.
    shipped = load_policy(Path(default_policy().source))
    assert [r.id for r in shipped.rows] == [r.id for r in default_policy().rows]


def test_the_docs_list_every_row_of_the_built_in_table() -> None:
    text = (ROOT / "docs" / "decision.md").read_text(encoding="utf-8")
    cells = dict(re.findall(r"^\| `([a-z-]+)` \| .+ \| ([^|]+) \|$", text, re.MULTILINE))
    for row in default_policy().rows:
        assert row.id in cells, f"docs/decision.md does not list the row {row.id}"
        assert cells[row.id].startswith(row.action), (row.id, cells[row.id])
        assert ("flight recorder" in cells[row.id]) is row.flight_recorder, row.id


@pytest.mark.parametrize("damage", [None, "{not json", '{"version": 7}'])
def test_the_built_in_policy_read_from_the_cache_is_the_file_s(damage: str | None, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # The built-in policy's document is kept in the cache (no YAML parser on the next run); an entry
    # that does not load, or is no policy, is not used: the file decides.
    shipped = load_policy(Path(default_policy().source), strict=False)
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path))
    for _ in range(2):  # written, then read back
        default_policy.cache_clear()
        assert default_policy() == shipped
    (entry,) = tmp_path.glob("document-*.json")
    if damage is not None:
        entry.write_text(damage)
        default_policy.cache_clear()
        assert default_policy() == shipped
    default_policy.cache_clear()
