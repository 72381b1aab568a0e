"""Every synthetic fixture states what its generator really did.

`tests/generators/make_synthetic.py` writes each fixture's `expected.yaml` from its Spec,
by hand; `generators/jobgen` knows what it generated (its Truth: phase, category, culprit, the
process group of a sub-group hang, the files it wrote).  This test recomputes that Truth with
`jobgen.plan()` (the job's plan only: nothing is rendered or written, so even the 1,024-rank job
is cheap) and checks the committed `expected.yaml` against it.  Where an expectation deliberately
says less than the truth, or something else, the reason is written down below.
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from generators import jobgen
from generators import make_synthetic as msf

SPECS = {s.name: s for s in msf.SPECS}

# (fixture, key of the truth) that its expect leaves unchecked, and why.
UNCHECKED: dict[tuple[str, str], str] = {
    ("nccl26-missing-log-rank5", "category"): (
        "the culprit's own log was never collected: the bundle shows that rank 5 did not reach the "
        "SeqNum, not whether it hung or died, so hung_process is not readable from it"
    ),
    ("nccl23-desync-rank2", "category"): (
        "the desync reports say rank 2 did not join the collective, not why; the test of this "
        "fixture is that the tool's own desync report wins over the silent-rank principle"
    ),
    ("nccl24-store-rank13", "category"): (
        "a typo'd MASTER_ADDR shows only as a connect timeout to 10.42.1.1: config_mismatch (the "
        "truth) and network_fault are both honest readings of the logs"
    ),
    ("nccl24-first-collective-rank12", "category"): (
        "the peers see 'Connection refused' from rank 12's endpoint: network_fault (the truth) or "
        "a process not listening are both consistent with the logs"
    ),
}

# Fixtures whose expected status is not the truth's "diagnosed", and why.
INCONCLUSIVE: dict[str, str] = {
    "nccl24-only-host0-inconclusive": (
        "only gpu-node-01 was collected (only_hosts=[0]); culprit rank 13 is on gpu-node-02, "
        "whose ranks 8-15 left no logs, so the bundle can say where the culprit is, not who"
    ),
}

COMPRESSED = (".gz", ".bz2", ".xz")


def _truth(spec: msf.Spec) -> jobgen.Truth:
    return jobgen.plan(seed=spec.seed, only_hosts=spec.only_hosts, **spec.gen)


def _committed(spec: msf.Spec) -> dict[str, Any]:
    path = spec.root / spec.name / "expected.yaml"
    assert path.is_file(), f"{path} missing: run {msf.MADE_BY} {spec.name}"
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def _committed_files(spec: msf.Spec) -> set[str]:
    """The log files the committed fixture holds, as generate() named them."""
    logs = spec.root / spec.name / "logs"
    if spec.post.startswith("tar:"):
        top = spec.post[4:].split(".")[0]
        with tarfile.open(logs / spec.post[4:]) as tar:
            return {
                m.name.split("/", 1)[1]
                for m in tar.getmembers()
                if m.isfile() and m.name.startswith(f"{top}/")
            }
    names = {p.relative_to(logs).as_posix() for p in logs.rglob("*") if p.is_file()}
    if spec.post == "compress-mixed":
        names = {next((n[: -len(x)] for x in COMPRESSED if n.endswith(x)), n) for n in names}
    return names


@pytest.mark.parametrize("name", list(SPECS))
def test_expected_yaml_matches_the_generators_truth(name: str) -> None:
    spec = SPECS[name]
    data = _committed(spec)
    expect = data["expect"]
    # the committed file is the one the spec writes (the rest of this test reads spec.expect)
    assert expect == spec.expect, f"{name}: committed expected.yaml differs from its Spec"
    assert data["description"] == spec.description
    truth = _truth(spec)

    if truth.fault == "none":
        assert expect == {"status": "no_failure"}, "a clean run expects no_failure and nothing else"
        return
    if name in INCONCLUSIVE:
        assert expect["status"] == "inconclusive"
        # the recorded reason holds: the culprit's host was not collected ...
        assert spec.only_hosts is not None
        host = (truth.culprit_rank or 0) // truth.gpus
        assert host not in spec.only_hosts, "the culprit's logs are there: why inconclusive?"
        # ... and the expectation asks the verdict to name the ranks that are missing
        missing = [r for r in range(truth.world_size) if r // truth.gpus not in spec.only_hosts]
        assert truth.culprit_rank in missing
        assert set(expect["says"]["missing"]) <= {str(r) for r in missing}
        assert {"phase", "category", "culprits"}.isdisjoint(expect), "inconclusive names nothing"
        return

    assert expect["status"] == "diagnosed"
    for key in ("phase", "category"):
        want = getattr(truth, key)
        if key in expect:
            assert expect[key] == want, f"{name}: {key} {expect[key]!r}, generator says {want!r}"
        else:
            assert (name, key) in UNCHECKED, f"{name}: expect lacks {key} ({want!r}); say why"
    if truth.fault == "ib":
        culprits = [{"kind": "host", "host": truth.culprit_host}]
    else:
        culprits = [{"kind": "rank", "rank": truth.culprit_rank}]
    assert expect["culprits"] == culprits, f"{name}: the generator's culprit is {culprits}"
    said = " ".join((expect.get("says") or {}).get("reasoning", []))
    if truth.group_desc is not None:  # the verdict must name the group and its collective
        assert f"process group {truth.group_desc}" in said, f"{name}: the hang is in a sub-group"
        assert "ALLREDUCE SeqNum" in said, f"{name}: the hang is in the group's all-reduce"
    else:
        assert "process group" not in said, f"{name}: the generator's hang is not in a sub-group"


@pytest.mark.parametrize("name", list(SPECS))
def test_committed_logs_are_the_files_the_generator_writes(name: str) -> None:
    """Ties the truth to the committed bytes' layout (missing logs, uncollected hosts, …)."""
    spec = SPECS[name]
    assert _committed_files(spec) == set(_truth(spec).files)


def test_the_allow_lists_are_current() -> None:
    for (name, key), why in UNCHECKED.items():
        assert name in SPECS and why, name
        assert key not in SPECS[name].expect, f"{name} now checks {key}: drop it from UNCHECKED"
    for name, why in INCONCLUSIVE.items():
        assert name in SPECS and why, name
        assert SPECS[name].expect["status"] == "inconclusive"
    stated = {n for n, s in SPECS.items() if s.expect.get("status") == "inconclusive"}
    assert stated == set(INCONCLUSIVE), "every inconclusive spec needs a reason"


def test_every_generated_fixture_has_a_spec() -> None:
    made = {
        p.parent.name
        for root in (msf.FIXTURES, msf.EXAMPLES)
        for p in root.glob("*/expected.yaml")
        if yaml.safe_load(p.read_text(encoding="utf-8")).get("made_by") == msf.MADE_BY
    }
    assert made == set(SPECS), "fixtures made by the script without a Spec, or vice versa"


def test_plan_is_what_generate_returns(tmp_path: Path) -> None:
    """plan() (used above) must agree with generate() apart from what writing measures."""
    spec = SPECS["nccl25-subgroup-hang-rank2"]
    got = jobgen.generate(tmp_path / "job", seed=spec.seed, **spec.gen)
    want = _truth(spec)
    for field in ("out_dir", "lines", "bytes"):
        setattr(got, field, getattr(want, field))
    assert got == want


@pytest.mark.parametrize(
    "name", [n for n, s in SPECS.items() if s.gen["fault"] == "subgroup" and not s.post]
)
def test_subgroup_fixture_lines_carry_the_group(name: str) -> None:
    """The tp peers time out in the tp group at its SeqNum; the rest in the default PG."""
    spec = SPECS[name]
    truth = _truth(spec)
    assert truth.group_ranks is not None and truth.culprit_rank in truth.group_ranks
    logs = spec.root / spec.name / "logs"
    tp = len(truth.group_ranks)

    def text_of(rank: int) -> str:
        if truth.layout == "per-rank":
            return (logs / f"rank-{rank:04d}.log").read_text(encoding="utf-8")
        host = jobgen.host_name(rank // truth.gpus, truth.hosts)
        return (logs / host / "attempt_0" / str(rank % truth.gpus) / "stderr.log").read_text(
            encoding="utf-8"
        )

    for r in range(truth.world_size):
        text = text_of(r)
        if r == truth.culprit_rank:
            assert "Watchdog caught" not in text
        elif r in truth.group_ranks:
            assert f"[PG ID 1 PG GUID {truth.group_guid}(tp) Rank {r % tp}]" in text
            assert f"WorkNCCL(SeqNum={truth.group_seq}, OpType={truth.group_op}," in text
            assert "(default_pg)" not in text.split("Watchdog caught", 1)[1]
        else:
            assert f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]" in text
            assert f"WorkNCCL(SeqNum={truth.seq}, OpType=ALLREDUCE," in text
