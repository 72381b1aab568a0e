"""ascend-fd's own test inputs (tests/fixtures/ascendfd-*): logs nobody on this project wrote.

MindCluster's fault-diagnosis tool ships these plog trees with the answer its tests assert
(`ascend_fd` in each truth.yaml). Here triage's verdict is checked against the truth stated in the
bundle's description, which agrees with ascend-fd's answer where the logs support it and says why
where it does not (one server's logs only; no rank mappable).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from triage.api import analyze
from triage.report.json_format import to_dict

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BUNDLES = sorted(p.parent for p in FIXTURES.glob("ascendfd-*/truth.yaml"))


def _load(bundle: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    truth = yaml.safe_load((bundle / "truth.yaml").read_text(encoding="utf-8"))["truth"]
    return truth, to_dict(analyze([bundle / "logs"]))["verdict"]


def test_every_case_of_ascend_fd_with_raw_logs_is_here() -> None:
    assert len(BUNDLES) == 7


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_verdict_matches_the_truth(bundle: Path) -> None:
    truth, verdict = _load(bundle)
    why = verdict["reasoning"]
    assert verdict["status"] == truth["status"], why
    assert verdict["phase"] == truth["phase"], why
    if "category" in truth:
        assert verdict["category"] == truth["category"], why
    links = [{c["rank"], c["peer_rank"]} for c in verdict["culprits"] if c["kind"] == "link"]
    ranks = sorted(c["rank"] for c in verdict["culprits"] if c["kind"] == "rank")
    if "link" in truth:
        assert links == [set(truth["link"])] and ranks == [], why
    else:
        assert ranks == sorted(truth.get("culprit_ranks", [])) and links == [], why
    for said in truth.get("said", []):  # an inconclusive verdict still says what the ranks saw
        assert said in why


def test_a_wait_socket_line_names_its_writer_not_the_peer() -> None:
    """`wait socket establish timeout, role[0] rank[2]` is written by rank 2 (its LINK_ERROR_INFO
    row's src and its SetupAgent line agree): read as the peer, rank 2 would wait on itself."""
    report = to_dict(analyze([FIXTURES / "ascendfd-transport-timeout" / "logs"]))
    assert "rank 2 waited on rank 10" in report["verdict"]["reasoning"]
