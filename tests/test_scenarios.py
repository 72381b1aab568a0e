"""Every scenario fixture: a multi-rank log bundle and the verdict it must produce.

Each `tests/fixtures/<name>/expected.yaml` (and the bundled examples) names the expected status,
phase, category and the exact set of culprits; `logs/` holds what the job left behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from triage.api import analyze
from triage.report.json_format import to_dict

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted(
    [*(ROOT / "tests" / "fixtures").glob("*/expected.yaml"), *(ROOT / "examples").glob("*/expected.yaml")]
)


def _culprit_key(c: dict[str, Any]) -> tuple[str, Any]:
    return (c["kind"], c["rank"] if c["kind"] == "rank" else c["host"])


_REPORTS: dict[Path, dict[str, Any]] = {}


def _report_of(expected_path: Path) -> dict[str, Any]:
    """Each fixture is analysed once per test session (per worker), whatever tests look at it."""
    if expected_path not in _REPORTS:
        spec = yaml.safe_load(expected_path.read_text(encoding="utf-8"))
        logs = expected_path.parent / "logs"
        if not logs.exists():
            logs = expected_path.parent
        args = spec.get("args") or {}
        _REPORTS[expected_path] = to_dict(analyze([logs], world_size=args.get("world_size")))
    return _REPORTS[expected_path]


@pytest.mark.parametrize("expected_path", SCENARIOS, ids=lambda p: p.parent.name)
def test_scenario_verdict(expected_path: Path) -> None:
    spec = yaml.safe_load(expected_path.read_text(encoding="utf-8"))
    expect = spec["expect"]
    report = _report_of(expected_path)
    verdict = report["verdict"]
    assert verdict["status"] == expect["status"], verdict["reasoning"]
    for key in ("phase", "category"):
        if key in expect:
            assert verdict[key] == expect[key], f"{key}: {verdict['reasoning']}"
    if "culprits" in expect:
        want = {_culprit_key({"rank": None, "host": None, **c}) for c in expect["culprits"]}
        got = {_culprit_key(c) for c in verdict["culprits"]}
        assert want <= got, f"culprits {got}, expected {want}: {verdict['reasoning']}"
        # Extras allowed: the ranks of an expected host, or the host that holds exactly the
        # expected ranks (the node principle names both).
        host_of = {r["rank"]: r["host"] for r in report["ranks"]}
        want_hosts = {who for kind, who in want if kind == "host"}
        want_ranks = [who for kind, who in want if kind == "rank"]
        for kind, who in got - want:
            allowed = (kind == "rank" and host_of.get(who) in want_hosts) or (
                kind == "host" and want_ranks and all(host_of.get(r) == who for r in want_ranks))
            assert allowed, f"unexpected culprit {kind} {who}: {verdict['reasoning']}"
    missing_text = " ".join(verdict["missing"])
    for fragment in expect.get("missing_mentions") or []:
        assert fragment in missing_text, missing_text
    if expect["status"] == "diagnosed":
        assert verdict["confidence"] >= 0.5
        assert all(c["evidence"] or c["kind"] == "rank" for c in verdict["culprits"])
    if "group" in expect:  # a hang inside a sub-group: the verdict says which group
        assert f"process group {expect['group']}" in verdict["reasoning"], verdict["reasoning"]
        assert "ALLREDUCE SeqNum" in verdict["reasoning"], verdict["reasoning"]  # and which collective


def test_real_runs_cover_the_ground() -> None:
    """Real torchrun + gloo runs (make_real_fixtures.py), and inputs cut the way people share them."""
    names = [p.parent.name for p in SCENARIOS]
    real = [n for n in names if n.startswith("real-")]
    partial = [n for n in names if n.startswith("partial-")]
    assert len(real) >= 30, real
    for cut in ("culprit-files", "victim-files", "node0", "console", "paste"):
        assert any(cut in n for n in partial), cut
    phases = {yaml.safe_load(p.read_text(encoding="utf-8"))["truth"]["phase"]
              for p in SCENARIOS if p.parent.name.startswith("real-") and "truth" in
              yaml.safe_load(p.read_text(encoding="utf-8"))}
    assert {"comm_init", "operator_load", "execution"} <= phases


def test_there_are_enough_scenarios() -> None:
    assert len(SCENARIOS) >= 15, [p.parent.name for p in SCENARIOS]


# Which principle of DESIGN §4 must name the culprit in each scenario, and which must lose there.
WINNERS = {
    "named-by-tool": ["nccl23-desync-rank2", "real-gloo-skip-init-rank3", "real-detail-hang-rank2",
                      "real-2node-subgroup-hang-rank4", "real-init-wrong-port-rank3"],
    "first-failure": ["nccl23-oom-rank6", "nccl25-sigkill-rank3", "nccl24-slurm-interleaved-rank7",
                      "nccl24-store-rank13", "real-gloo-sigkill-rank1", "real-gloo-exception-rank3",
                      "real-gloo-segfault-rank2", "real-2node-sigkill-rank5", "real-init-exit-rank3",
                      "real-first-oom-rank1", "partial-oom-rank2-culprit-files"],
    "silent-rank": ["nccl24-silent-rank11", "nccl21-silent-rank3", "nccl26-missing-log-rank5",
                    "big-1024-silent-rank777", "real-gloo-hang-rank2", "real-2node-hang-rank6",
                    "real-first-hang-rank1", "nccl26-subgroup-hang-rank5", "real-subgroup-hang-rank3"],
    "lagging-rank": ["nccl25-lagging-rank9"],
    "collective-mismatch": ["nccl24-mismatch-rank4", "real-detail-mismatch-shape-rank1",
                            "real-mismatch-op-rank3"],
    "late-arrival": ["real-straggler-rank1", "real-first-late-rank2"],
    "network-host": ["nccl24-ib-host3"],
    "network-endpoint": ["nccl24-first-collective-rank12"],
}
# More losing cases, each against a different culprit: tests/test_hypotheses_lose.py.
LOSERS = {
    "silent-rank": ["nccl23-desync-rank2"],
    "first-failure": ["nccl24-first-collective-rank12"],
}


def _verdict_of(name: str) -> dict[str, Any]:
    (path,) = [p for p in SCENARIOS if p.parent.name == name]
    verdict: dict[str, Any] = _report_of(path)["verdict"]
    return verdict


@pytest.mark.parametrize(("hypothesis", "scenario"),
                         [(h, s) for h, names in WINNERS.items() for s in names])
def test_the_right_principle_wins(hypothesis: str, scenario: str) -> None:
    assert _verdict_of(scenario)["hypothesis"] == hypothesis


@pytest.mark.parametrize(("hypothesis", "scenario"),
                         [(h, s) for h, names in LOSERS.items() for s in names])
def test_a_weaker_principle_loses(hypothesis: str, scenario: str) -> None:
    verdict = _verdict_of(scenario)
    assert verdict["hypothesis"] != hypothesis
    assert hypothesis in [h["name"] for h in verdict["hypotheses_lost"]]
