"""Every NCCL RAS bundle (tests/fixtures/ras-*): triage's verdict against the bundle's truth.

The truth is what make_ras_fixtures.py built (checked against the files by test_ras_truth.py): the
status, the phase (when the truth knows it), the category and the culprits' global ranks must be
the verdict's; where RAS and the logs disagree, the verdict must say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from triage.api import analyze
from triage.report.json_format import to_dict

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BUNDLES = sorted(p.parent for p in FIXTURES.glob("ras-*/truth.yaml"))

_REPORTS: dict[Path, dict[str, Any]] = {}


def _verdict(bundle: Path) -> dict[str, Any]:
    if bundle not in _REPORTS:
        _REPORTS[bundle] = to_dict(analyze([bundle / "logs"]))
    verdict: dict[str, Any] = _REPORTS[bundle]["verdict"]
    return verdict


def _truth(bundle: Path) -> dict[str, Any]:
    truth: dict[str, Any] = yaml.safe_load((bundle / "truth.yaml").read_text(encoding="utf-8"))["truth"]
    return truth


DISAGREE = [b for b in BUNDLES if _truth(b)["disagreement"]]


def test_there_are_ras_bundles() -> None:
    assert len(BUNDLES) >= 10 and DISAGREE


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_verdict_matches_the_truth(bundle: Path) -> None:
    truth = _truth(bundle)
    verdict = _verdict(bundle)
    why = verdict["reasoning"]
    assert verdict["status"] == truth["status"], why
    if truth["phase"] != "unknown":
        assert verdict["phase"] == truth["phase"], why
    assert verdict["category"] == truth["category"], why
    ranks = sorted(c["rank"] for c in verdict["culprits"] if c["kind"] == "rank")
    assert ranks == sorted(truth["culprit_ranks"]), why


@pytest.mark.parametrize("bundle", DISAGREE, ids=lambda p: p.name)
def test_disagreement_between_ras_and_the_logs_is_said(bundle: Path) -> None:
    verdict = _verdict(bundle)
    said = " ".join([verdict["reasoning"], *verdict["missing"]])
    assert "RAS" in said and "disagree" in said.lower(), said
