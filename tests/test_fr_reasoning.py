"""Flight-recorder dumps reasoned over (issue 19 part B): the progress model, the fr-dumps principle,
cross-rank configuration, and every format carrying the evidence. Bundles: tests/fixtures/fr-*,
config-*; docs/flight-recorder.md."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from triage.api import analyze
from triage.job.progress import build_progress
from triage.model import Event, Evidence, Identity, Kind, Phase, Status
from triage.report import json_format
from triage.report.views import build

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
SCHEMA = json.loads((ROOT / "src" / "triage" / "schemas" / "report-v1.schema.json").read_text(encoding="utf-8"))
NAME = "comm_lib_trace_rank_"


def _copy_dumps(src: str, dest: Path, ranks: dict[int, int]) -> Path:
    """The dumps of a bundle, each renamed from one rank's file name to another's."""
    dest.mkdir(parents=True, exist_ok=True)
    for old, new in ranks.items():
        shutil.copy(FIX / src / "logs" / f"{NAME}{old}", dest / f"{NAME}{new}")
    return dest


@pytest.mark.parametrize("odd_as", [0, 3, 1, 2])
def test_a_mismatch_names_the_odd_rank_by_majority_wherever_its_file_sorts(tmp_path: Path, odd_as: int) -> None:
    # fr-op-rank0: rank 0 broadcasts where ranks 1-3 all_reduce. Give the odd dump rank `odd_as`'s name.
    others = [r for r in range(4) if r != odd_as]
    mapping = {0: odd_as, **dict(zip([1, 2, 3], others, strict=True))}
    verdict = analyze([_copy_dumps("fr-op-rank0-dumps", tmp_path / "d", mapping)], jobs=1).verdict
    assert verdict.status is Status.DIAGNOSED and verdict.hypothesis == "fr-mismatch"
    assert [c.rank for c in verdict.culprits] == [odd_as]
    assert "broadcast" in verdict.culprits[0].reason and "by majority" in verdict.reasoning


def test_the_stalled_rank_is_named_with_its_last_stack_and_how_long_it_was_quiet() -> None:
    report = analyze([FIX / "fr-hang-before-rank2-dumps" / "logs"], jobs=1)
    v = report.verdict
    assert (v.hypothesis, [c.rank for c in v.culprits], v.phase) == ("fr-stalled-rank", [2], Phase.EXECUTION)
    reason = v.culprits[0].reason
    assert "nothing in flight" in reason and "fr_job.py:152" in reason and "timeout 5 s" in reason
    ev = v.culprits[0].evidence[0]
    assert ev.source.endswith(f"{NAME}2") and ev.line == 20 and "gloo:all_reduce #20" in ev.text  # dump:entry


def test_a_missing_dump_is_the_prime_suspect_and_reported_missing() -> None:
    v = analyze([FIX / "fr-hang-before-rank2-dumps-no-culprit" / "logs"], jobs=1).verdict
    assert (v.hypothesis, [c.rank for c in v.culprits]) == ("fr-no-dump", [2])
    assert any("flight-recorder dump of rank 2 is missing" in m for m in v.missing)


def test_the_first_group_to_stall_leads_and_the_cascade_is_said() -> None:
    v = analyze([FIX / "fr-subgroup-hang-rank3-dumps" / "logs"], jobs=1).verdict
    assert [c.rank for c in v.culprits] == [3] and "group pair1" in v.reasoning
    assert "stalled first; after it: default_pg" in v.reasoning


def test_enqueued_everywhere_is_a_gpu_or_network_lead_with_what_would_tell() -> None:
    v = analyze([FIX / "fr-hang-inside-rank1-dumps" / "logs"], jobs=1).verdict
    assert v.status is Status.INCONCLUSIVE and not v.culprits
    assert "GPU side" in v.reasoning and "TORCH_NCCL_ENABLE_TIMING" in v.reasoning


def test_a_p2p_hang_is_said_to_be_invisible_in_gloo_dumps() -> None:
    v = analyze([FIX / "fr-p2p-hang-rank2-dumps" / "logs"], jobs=1).verdict
    assert v.status is Status.INCONCLUSIVE and "send or recv" in v.reasoning
    with_logs = analyze([FIX / "fr-p2p-hang-rank2" / "logs"], jobs=1).verdict
    assert [c.rank for c in with_logs.culprits] == [2] and "send or recv" in with_logs.reasoning


def test_dumps_and_logs_agree_in_one_verdict() -> None:
    v = analyze([FIX / "fr-hang-before-rank2" / "logs"], jobs=1).verdict
    assert [c.rank for c in v.culprits] == [2] and "fr-stalled-rank" in v.reasoning  # "It agrees with …"
    shape = analyze([FIX / "fr-shape-rank3" / "logs"], jobs=1).verdict  # the logs alone could not tell
    assert (shape.hypothesis, [c.rank for c in shape.culprits]) == ("fr-mismatch", [3])


def test_a_staged_disagreement_between_dumps_and_logs_is_said(tmp_path: Path) -> None:
    # The logs of fr-hang-before-rank2, with the dumps of ranks 0 and 2 swapped: the dumps now say rank 0.
    dest = tmp_path / "logs"
    shutil.copytree(FIX / "fr-hang-before-rank2" / "logs", dest)
    fr = dest / "node01" / "fr"
    (fr / f"{NAME}0").rename(fr / "tmp")
    (fr / f"{NAME}2").rename(fr / f"{NAME}0")
    (fr / "tmp").rename(fr / f"{NAME}2")
    v = analyze([dest], jobs=1).verdict
    assert "flight-recorder dumps disagree" in v.reasoning or any(
        h.name == "fr-stalled-rank" and [c.rank for c in h.culprits] == [0] for h in v.lost)
    said = v.reasoning + " ".join(h.reasoning for h in v.lost)
    assert "disagree" in said


def test_a_wrapped_ring_buffer_is_noticed() -> None:
    ident = Identity(rank=0)
    dump = Event("fr-dump", Kind.INFO, Phase.UNKNOWN, "info", "", ident, Evidence("d0", 0, ""),
                 fields={"fr_first_record": "1500", "fr_file_rank": "0"}, family="fr")
    group = Event("fr-group", Kind.INFO, Phase.UNKNOWN, "info", "", ident, Evidence("d0", 0, ""),
                  fields={"fr_pg": "0", "fr_pg_desc": "default_pg", "fr_last_enqueued": "3500",
                          "fr_last_completed": "3500", "fr_first_seq": "1501", "fr_last_seq": "3500"}, family="fr")
    prog = build_progress([group, dump], {})
    member = prog.groups["pg:0"].by_rank[0]
    assert member.wrapped and member.idle and not member.waiting


def test_config_minority_shows_in_json_and_report() -> None:
    for bundle, key, odd in (("config-nccl-version-rank2", "nccl", [2]),
                             ("config-socket-ifname-rank3", "env:NCCL_SOCKET_IFNAME", [3])):
        report = analyze([FIX / bundle / "logs"], jobs=1)
        doc = json_format.to_dict(report)
        jsonschema.validate(doc, SCHEMA)
        item = next(i for i in doc["config"] if i["key"] == key)
        assert item["minority"] == odd
        assert [c.rank for c in report.verdict.culprits] == [2]  # the hang is still rank 2's
        assert "Configuration differs across ranks" in report.verdict.reasoning
        assert any(key in line for line in build(report).config)


def test_a_config_minority_is_named_when_the_job_failed_at_init(tmp_path: Path) -> None:
    # nccl24-store-rank13 (rank 13 never reaches the store): rank 13's log also shows another NCCL version.
    dest = tmp_path / "logs"
    shutil.copytree(FIX / "nccl24-store-rank13" / "logs", dest)
    for log in sorted(dest.glob("rank-*.log")):
        rank = int(log.stem.split("-")[1])
        text = log.read_text(encoding="utf-8").splitlines(keepends=True)
        version = "2.20.5" if rank == 13 else "2.21.5"
        text.insert(1, f"node:{1000 + rank}:{1000 + rank} [0] NCCL INFO NCCL version {version}+cuda12.4\n")
        log.write_text("".join(text), encoding="utf-8")
    v = analyze([dest], jobs=1).verdict
    assert [c.rank for c in v.culprits] == [13] and v.phase is Phase.COMM_INIT
    named = [h for h in [v, *v.lost] if getattr(h, "hypothesis", getattr(h, "name", None)) == "config-minority"]
    assert named or "config-minority" in v.reasoning


@pytest.mark.parametrize("fmt", ["terminal", "json", "markdown", "github", "junit", "sarif", "html"])
def test_every_format_carries_the_fr_evidence(fmt: str) -> None:
    from triage.report import formatter

    report = analyze([FIX / "fr-hang-before-rank2-dumps" / "logs"], jobs=1)
    out = io.StringIO()
    formatter(fmt).write(build(report), out, color=False)
    text = out.getvalue()
    assert f"{NAME}2" in text and ("20" in text)
    if fmt in ("terminal", "markdown", "github", "junit", "sarif", "html"):
        assert "never enqueued ALL_REDUCE #21" in text.replace("\\", "")
    if fmt == "json":
        doc = json.loads(text)
        jsonschema.validate(doc, SCHEMA)
        group = doc["progress"][0]
        assert group["key"] == "pg:0" and any(m["rank"] == 2 and m["idle"] for m in group["members"])


def test_a_hang_without_dumps_names_the_fr_settings() -> None:
    v = analyze([FIX / "real-gpu-nccl2289-job-hang-rank2" / "logs"], jobs=1).verdict
    assert any("TORCH_NCCL_DUMP_ON_TIMEOUT" in a and "TORCH_FR_DUMP_TEMP_FILE" in a for a in v.advice)
