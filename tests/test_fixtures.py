"""Every fixture bundle: a job's logs and the verdict triage must give on them.

Each `tests/fixtures/<name>/` (and each bundled example, `examples/<name>/`) holds `logs/` and an
`expected.yaml` in the shape of `tests/schemas/expected.schema.json`: `expect` says the status,
phase, category and culprits (rank, host or link) the verdict must have, the principle that must
decide, the principles that must lose, what the verdict must say, and the least confidence
(a pasted input may sit beside expected.yaml instead of under logs/);
`truth` and `spec` record what was injected and the generator's input. Each bundle is analysed
once per session (per worker). What only some bundles can show lives in tests of their own: the
generators' truth against the files (test_synthetic_truth.py, test_ascend_truth.py,
test_ras_truth.py), RAS against the logs (test_ras_truth.py), the msrun bundle's layout
(test_mindspore.py), principles losing to others on edited copies (test_hypotheses_lose.py).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from triage.api import analyze
from triage.report.json_format import to_dict

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SCHEMA = json.loads((ROOT / "tests" / "schemas" / "expected.schema.json").read_text(encoding="utf-8"))
BUNDLES = sorted(
    [p.parent for p in FIXTURES.glob("*/expected.yaml")] + [p.parent for p in (ROOT / "examples").glob("*/expected.yaml")]
)
# Folders under tests/fixtures/ that are inputs of other tests, not jobs with a verdict (each has a README.md).
NOT_BUNDLES = {
    "fuzz-dump-no-entries-culprit": "tests/test_fuzz_properties.py",
    "fuzz-huge-fingerprint-rank": "tests/test_fuzz_properties.py",
    "fuzz-int-digits-line": "tests/test_fuzz_properties.py",
    "fuzz-int-digits-member": "tests/test_fuzz_properties.py",
    "fuzz-world-size-zero": "tests/test_fuzz_properties.py",
    "ras-captured-nccl2.28.9": "tests/test_ras_reader.py",
    "ras-recorded": "tests/test_ras_collect.py",
}
DEFAULT_MIN_CONFIDENCE = 0.5


@cache
def _spec(bundle: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((bundle / "expected.yaml").read_text(encoding="utf-8"))
    return data


@cache
def _report(bundle: Path) -> dict[str, Any]:
    logs = bundle / "logs" if (bundle / "logs").exists() else bundle
    args = _spec(bundle).get("args") or {}
    report: dict[str, Any] = to_dict(analyze([logs], world_size=args.get("world_size")))
    return report


def _ids(bundle: Path) -> str:
    return bundle.name


# --------------------------------------------------------------------------------------------
# The contract


def test_every_folder_is_a_bundle_or_a_known_input() -> None:
    folders = {p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "__pycache__"}
    bundles = {b.name for b in BUNDLES if b.parent == FIXTURES}
    assert folders - bundles == set(NOT_BUNDLES), "a fixture folder without expected.yaml: add one"
    for name in NOT_BUNDLES:
        assert (FIXTURES / name / "README.md").is_file(), name


@pytest.mark.parametrize("bundle", BUNDLES, ids=_ids)
def test_expected_yaml_fits_the_schema(bundle: Path) -> None:
    jsonschema.validate(_spec(bundle), SCHEMA)


# --------------------------------------------------------------------------------------------
# The verdict


def _culprit_key(c: dict[str, Any]) -> tuple[str, Any]:
    if c["kind"] == "link":
        ends = c["ranks"] if "ranks" in c else [c["rank"], c["peer_rank"]]
        return ("link", frozenset(ends))
    return (c["kind"], c["rank"] if c["kind"] == "rank" else c["host"])


def _check_culprits(expect: dict[str, Any], report: dict[str, Any]) -> None:
    verdict = report["verdict"]
    why = verdict["reasoning"]
    if expect.get("culprits_exact"):
        for kind in ("rank", "host", "link"):
            got = sorted((_culprit_key(c)[1] for c in verdict["culprits"] if c["kind"] == kind), key=str)
            want = sorted((_culprit_key(c)[1] for c in expect.get("culprits", []) if c["kind"] == kind), key=str)
            assert got == want, f"{kind} culprits {got}, expected exactly {want}: {why}"
        return
    if "culprits" not in expect:
        return
    want = {_culprit_key(c) for c in expect["culprits"]}
    got = {_culprit_key(c) for c in verdict["culprits"]}
    assert want <= got, f"culprits {got}, expected {want}: {why}"
    # Extras allowed: the ranks of an expected host, or the host that holds exactly the expected
    # ranks (the node principle names both).
    host_of = {r["rank"]: r["host"] for r in report["ranks"]}
    want_hosts = {who for kind, who in want if kind == "host"}
    want_ranks = [who for kind, who in want if kind == "rank"]
    for kind, who in got - want:
        allowed = (kind == "rank" and host_of.get(who) in want_hosts) or (
            kind == "host" and want_ranks and all(host_of.get(r) == who for r in want_ranks))
        assert allowed, f"unexpected culprit {kind} {who}: {why}"


@pytest.mark.parametrize("bundle", BUNDLES, ids=_ids)
def test_verdict(bundle: Path) -> None:
    expect = _spec(bundle)["expect"]
    report = _report(bundle)
    verdict = report["verdict"]
    why = verdict["reasoning"]
    assert verdict["status"] == expect["status"], why
    for key in ("phase", "category"):
        if key in expect:
            assert verdict[key] == expect[key], f"{key}: {why}"
    _check_culprits(expect, report)
    if expect["status"] == "diagnosed":
        assert verdict["confidence"] >= expect.get("min_confidence", DEFAULT_MIN_CONFIDENCE), why
        assert all(c["evidence"] or c["kind"] == "rank" for c in verdict["culprits"]), why
    cited = [e for c in verdict["culprits"] for e in c["evidence"]]
    for want in expect.get("cites", []):
        assert any(want["source"] in e["source"] and want.get("rule", e["rule"]) == e["rule"] for e in cited), (
            f"no evidence from {want}: {[(e['source'], e['line'], e['rule']) for e in cited]}")
    missing = " ".join(verdict["missing"])
    texts = {"reasoning": why, "missing": missing, "reasoning_or_missing": f"{why} {missing}"}
    for where, fragments in (expect.get("says") or {}).items():
        for fragment in fragments:
            assert fragment in texts[where], f"{where} lacks {fragment!r}: {texts[where]}"


@pytest.mark.parametrize("bundle", [b for b in BUNDLES if "principle" in _spec(b)["expect"]], ids=_ids)
def test_the_principle_it_was_built_for_decides(bundle: Path) -> None:
    assert _report(bundle)["verdict"]["hypothesis"] == _spec(bundle)["expect"]["principle"]


@pytest.mark.parametrize("bundle", [b for b in BUNDLES if "principle_loses" in _spec(b)["expect"]], ids=_ids)
def test_a_weaker_principle_loses(bundle: Path) -> None:
    verdict = _report(bundle)["verdict"]
    for principle in _spec(bundle)["expect"]["principle_loses"]:
        assert verdict["hypothesis"] != principle
        assert principle in [h["name"] for h in verdict["hypotheses_lost"]]


# --------------------------------------------------------------------------------------------
# The bundles as a whole


def _named(prefix: str) -> list[Path]:
    return [b for b in BUNDLES if b.name.startswith(prefix)]


def test_there_are_enough_bundles() -> None:
    assert len(BUNDLES) >= 15, [b.name for b in BUNDLES]


def test_real_runs_cover_the_ground() -> None:
    """Real torchrun + gloo runs (generators/make_real.py), and inputs cut the way people share them."""
    real = [b.name for b in _named("real-")]
    partial = [b.name for b in _named("partial-")]
    assert len(real) >= 30, real
    for cut in ("culprit-files", "victim-files", "node0", "console", "paste"):
        assert any(cut in n for n in partial), cut
    phases = {_spec(b)["truth"]["phase"] for b in _named("real-") if "truth" in _spec(b)}
    assert {"comm_init", "operator_load", "execution"} <= phases


def test_every_generated_ascend_bundle_names_its_principle() -> None:
    """Each ascend-* bundle was built for one principle (generators/make_ascend.py PRINCIPLES)."""
    ascend = _named("ascend-")
    assert len(ascend) >= 14
    assert all("principle" in _spec(b)["expect"] for b in ascend), "add it to make_ascend.PRINCIPLES"


def test_there_are_ras_bundles() -> None:
    ras = _named("ras-")
    assert len(ras) >= 10 and any(_spec(b)["truth"]["disagreement"] for b in ras)


def test_every_case_of_ascend_fd_with_raw_logs_is_here() -> None:
    """ascend-fd's own test inputs (tests/fixtures/ascendfd-*): logs nobody on this project wrote."""
    assert len(_named("ascendfd-")) == 7
