"""Every generated Ascend bundle (tests/fixtures/ascend-*): triage's verdict against the generator's truth.

The truth is what `bench/ascendgen.py` injected (checked against the files by test_ascend_truth.py);
here the verdict must match it: status, phase, category and culprits (a rank, or the link between
two ranks' devices), and the principle that decided must be the one the bundle was built to test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from triage.api import analyze
from triage.report.json_format import to_dict

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BUNDLES = sorted(p.parent for p in FIXTURES.glob("ascend-*/truth.yaml"))

# The principle that must decide each bundle (the reasoning the bundle was built for).
WINNERS = {
    "ascend-16r-2srv-heartbeat-lost-rank13": "named-by-tool",  # HCCL's Cluster Exception Location
    "ascend-cqe-link-rank5": "named-by-tool",  # the heartbeat's Error cqe location, the CQE endpoint
    "ascend-ei0002-silent-rank5": "wait-chain",  # the notify waits' remote ranks end at the silent rank
    "ascend-ei0005-tag-rank3": "parameter-mismatch",
    "ascend-ei0006-silent-rank2": "wait-chain",
    "ascend-ej0001-rank7": "named-by-tool",  # the root's missing agent; EJ0001 gives the category
    "ascend-heartbeat-stuck-rank1": "named-by-tool",
    "ascend-init-agent-rank6": "named-by-tool",
    "ascend-init-missing-rank5": "named-by-tool",
    "ascend-init-ranktable-rank3": "first-failure",
    "ascend-late-rank4": "late-arrival",
    "ascend-link-chain-rank6": "wait-chain",  # followed through group_name_1's ranks
    "ascend-link-cycle-rank2-rank6": "device-link",
    "ascend-no-failure": None,
    "ascend-plogs-only-ei0005-count-rank1": "parameter-mismatch",
    "ascend-screen-only-ei0002-rank6": "silent-rank",
    "ascend-tls-rank4": "tls-mismatch",
    # Bundles where a principle's evidence is there and points at the wrong rank: it must lose.
    "ascend-lose-chain-end-rank3": "parameter-mismatch",  # beats the wait chain
    "ascend-lose-cqe-rank4": "named-by-tool",  # the heartbeat (LOST) beats the CQE endpoint count
    "ascend-lose-cycle-rank3": "tls-mismatch",  # beats the cycle of waits
    "ascend-lose-ei0005-rank5": "silent-rank",  # the one rank with no error beats the odd operator out
    "ascend-lose-ei0002-rank2": "named-by-tool",  # the heartbeat beats the silent rank
    "ascend-lose-ei0006-rank5": "tls-mismatch",  # beats the silent rank
    "ascend-lose-ej0001-rank3": "named-by-tool",  # the first attempt's heartbeat beats the restart's EJ0001
    "ascend-lose-heartbeat-rank5": "cqe-endpoint",  # the CQEs came first: beats the heartbeat
    "ascend-lose-init-agent-rank0": "first-failure",  # EJ0001 beats the agent's failed connect
    "ascend-lose-init-root-rank0": "unreachable-root",  # beats the root's list of missing ranks
    "ascend-lose-init-store-rank0": "first-failure",  # EJ0001 on the root beats a late rank's store error
    "ascend-lose-spread-rank1": "wait-chain",  # the silent end beats the last to time out
    "ascend-lose-tls-rank6": "wait-chain",  # beats a TLS difference outside the failing group
}
# Where the bundle cannot show what the truth knows.
CATEGORY_UNSETTLED = {
    "ascend-screen-only-ei0002-rank6": "rank 6 left no line at all in the screen output: whether it hung or "
                                       "died is not in the bundle (the verdict says unknown)",
}

_REPORTS: dict[Path, dict[str, Any]] = {}


def _report(bundle: Path) -> dict[str, Any]:
    if bundle not in _REPORTS:
        _REPORTS[bundle] = to_dict(analyze([bundle / "logs"]))
    return _REPORTS[bundle]


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_verdict_matches_the_injected_truth(bundle: Path) -> None:
    truth = yaml.safe_load((bundle / "truth.yaml").read_text(encoding="utf-8"))["truth"]
    verdict = _report(bundle)["verdict"]
    why = verdict["reasoning"]
    if truth["fault"] == "none":
        assert verdict["status"] == "no_failure", why
        return
    assert verdict["status"] == "diagnosed", why
    assert verdict["phase"] == truth["phase"], why
    if bundle.name not in CATEGORY_UNSETTLED:
        assert verdict["category"] == truth["category"], why
    links = [c for c in verdict["culprits"] if c["kind"] == "link"]
    if truth["branch"] == "wait_chain_cycle":  # the pair of devices that could not connect
        ends = {e["rank"] for e in truth["link"]["ends"]}
        assert [{c["rank"], c["peer_rank"]} for c in links] == [ends], why
    else:
        assert sorted(c["rank"] for c in verdict["culprits"] if c["kind"] == "rank") == \
            sorted(truth["culprit_ranks"]), why
    assert verdict["confidence"] >= 0.6


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_the_principle_it_was_built_for_decides(bundle: Path) -> None:
    if bundle.name not in WINNERS:
        pytest.fail(f"{bundle.name}: add the principle that must decide it to WINNERS")
    assert _report(bundle)["verdict"]["hypothesis"] == WINNERS[bundle.name]
