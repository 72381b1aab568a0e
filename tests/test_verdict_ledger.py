"""The verdict read from per-member evidence (issue 24): what clears a rank, what agreeing sources cite,
what a conflict says, and that a principle which raises cannot end the run.

The bundles are real runs (tests/fixtures/*/expected.yaml says how each was made); test_fixtures.py
checks their verdicts, this file checks how the verdict got there.
"""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from triage.api import analyze
from triage.diagnose import verdict as verdict_stage
from triage.diagnose.isolation import PrincipleFailed
from triage.model import PrincipleFailure, Stance, Status
from triage.report import FORMATS, render

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
SCHEMA = json.loads((ROOT / "src" / "triage" / "schemas" / "report-v1.schema.json").read_text())


def _broken(name: str) -> tuple[object, ...]:
    """The registry with principle `name` replaced by one that raises."""
    def boom(*_: object) -> None:
        raise KeyError("pop from an empty set")
    return tuple(dataclasses.replace(p, run=boom) if p.name == name else p for p in verdict_stage.PRINCIPLES)


def test_a_principle_that_raises_is_named_and_the_others_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    # fr-hang-before-rank2: silent-rank names rank 2 from the logs, the dumps name it too (fr-stalled-rank).
    monkeypatch.setattr(verdict_stage, "PRINCIPLES", _broken("silent-rank"))
    with pytest.warns(PrincipleFailed, match="silent-rank"):
        report = analyze([FIX / "fr-hang-before-rank2" / "logs"], jobs=1)
    v = report.verdict
    assert v.failed == [PrincipleFailure(principle="silent-rank", error="KeyError: 'pop from an empty set'")]
    assert v.status is Status.DIAGNOSED and [c.rank for c in v.culprits] == [2]
    assert v.hypothesis == "fr-stalled-rank" and "may be incomplete" in v.reasoning
    for fmt in FORMATS:  # every format says which principle failed, and why
        out = io.StringIO()
        render(report, fmt, out, color=False)
        assert "silent-rank" in out.getvalue() and "pop from an empty set" in out.getvalue(), fmt
        if fmt == "json":
            doc = json.loads(out.getvalue())
            jsonschema.validate(doc, SCHEMA)
            assert doc["verdict"]["failed_principles"] == [
                {"principle": "silent-rank", "error": "KeyError: 'pop from an empty set'"}]


def test_the_suite_fails_on_a_principle_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    # pyproject.toml turns PrincipleFailed into an error: a failure no test expects fails that test.
    monkeypatch.setattr(verdict_stage, "PRINCIPLES", _broken("fr-dumps"))
    with pytest.raises(PrincipleFailed, match="fr-dumps"):
        analyze([FIX / "fr-hang-before-rank2-dumps" / "logs"], jobs=1)


def test_dumps_of_two_ranks_missing_at_one_collective_name_both() -> None:
    # Case 5's shape: the default group's dumps all end at one collective and two ranks left none
    # (here a world of 6 given for a 4-rank job): `_quiet` popped one shared set per rank (KeyError).
    v = analyze([FIX / "fr-p2p-hang-rank2-dumps" / "logs"], jobs=1, world_size=6).verdict
    assert v.hypothesis == "fr-no-dump" and [c.rank for c in v.culprits] == [4, 5]
    assert all("stopped at collective 32" in c.reason for c in v.culprits)


def test_a_dump_that_shows_a_rank_waiting_narrows_silent_rank() -> None:
    # Case 1: rank 2's pair all-reduce had a 30-minute timeout, so it never logged one; its dump shows
    # the op in flight while rank 3 was behind. silent-rank named {2, 3}; the dumps clear rank 2.
    v = analyze([FIX / "fr-subgroup-long-rank3" / "logs"], jobs=1).verdict
    assert [c.rank for c in v.culprits] == [3] and v.confidence > 0.8
    assert "clears rank 2" in v.reasoning and "agrees with the fr-stalled-rank evidence" in v.reasoning
    cleared = [m for m in v.ledger if m.rank == 2 and m.stance is Stance.AGAINST and m.clears]
    assert cleared and cleared[0].source == "fr-dumps" and cleared[0].citation is not None
    assert cleared[0].citation.source.endswith("comm_lib_trace_rank_2")
    assert any(m.rank == 2 and m.stance is Stance.FOR and m.source == "silent-rank" for m in v.ledger)
    # Both sources are cited for rank 3: its log lines and its dump's entry.
    cited = {Path(ev.source).name for ev in v.culprits[0].evidence}
    assert "comm_lib_trace_rank_3" in cited and cited - {"comm_lib_trace_rank_3"}


def test_its_near_miss_keeps_the_partner_that_really_stalled() -> None:
    v = analyze([FIX / "fr-subgroup-long-partner-rank2" / "logs"], jobs=1).verdict
    assert [c.rank for c in v.culprits] == [2]
    assert not any(m.rank == 2 and m.clears for m in v.ledger)


def test_a_conflict_no_fact_settles_is_inconclusive_with_both_readings(tmp_path: Path) -> None:
    # fr-hang-before-rank2's logs with the dumps of ranks 0 and 2 swapped: the dumps clear rank 2 (the
    # logs' silent rank) and name rank 0, whose log reports the wait itself.
    dest = tmp_path / "logs"
    shutil.copytree(FIX / "fr-hang-before-rank2" / "logs", dest)
    fr = dest / "node01" / "fr"
    (fr / "comm_lib_trace_rank_0").rename(fr / "tmp")
    (fr / "comm_lib_trace_rank_2").rename(fr / "comm_lib_trace_rank_0")
    (fr / "tmp").rename(fr / "comm_lib_trace_rank_2")
    v = analyze([dest], jobs=1).verdict
    assert v.status is Status.INCONCLUSIVE and not v.culprits
    assert "The sources disagree" in v.reasoning and "What would settle it" in v.reasoning
    assert "rank 0 reported the wait itself" in v.reasoning and "rank 2 waited in ALL_REDUCE" in v.reasoning
    assert {h.name for h in v.lost} >= {"fr-stalled-rank", "silent-rank"}


def test_a_rank_of_another_world_is_named_and_the_rank_it_waits_for_is_cleared() -> None:
    # Case 3: rank 2 launched with WORLD_SIZE=5 waits for a rank 4 that no other rank's world holds.
    v = analyze([FIX / "real-shell-world-size-rank2" / "logs"], jobs=1).verdict
    assert (v.hypothesis, [c.rank for c in v.culprits], v.category.value) == ("world-mismatch", [2], "config_mismatch")
    assert any(m.rank == 4 and m.clears and m.source == "world-mismatch" for m in v.ledger)
    assert any(h.name == "named-by-tool" and [c.rank for c in h.culprits] == [4] for h in v.lost)


def test_every_world_the_same_names_the_rank_that_never_started() -> None:
    # Its near-miss: WORLD_SIZE=5 everywhere, rank 4 never started; rank 0, the store's host, waited
    # for the fifth client itself, so the others' "rank 0 never published its address" clears it.
    v = analyze([FIX / "real-shell-missing-rank4" / "logs"], jobs=1).verdict
    assert [c.rank for c in v.culprits] == [4] and v.hypothesis != "world-mismatch"
    assert any(m.rank == 0 and m.clears and "store clients" in m.fact for m in v.ledger)


def test_a_clean_run_with_dumps_is_no_failure_and_a_p2p_hang_is_not() -> None:
    # Case 4: a clean run's logs and end-of-run dumps (two ranks caught inside the last barrier the
    # other two completed). Its near-miss: gloo dumps of a P2P hang look complete, but pg_status counts
    # ops the entries do not hold (its sends and recvs).
    v = analyze([FIX / "fr-clean" / "logs"], jobs=1).verdict
    assert v.status is Status.NO_FAILURE and "show the work completed" in v.reasoning
    p2p = analyze([FIX / "fr-p2p-hang-rank2-dumps" / "logs"], jobs=1).verdict
    assert p2p.status is Status.INCONCLUSIVE and "send or recv" in p2p.reasoning


def test_dumps_alone_cannot_take_a_failed_work_for_a_finished_one() -> None:
    # gloo counts a failed work as completed: in the dumps of ranks 0 and 1 of a size mismatch (no
    # --world-size, so the world reads as {0, 1}), rank 1 "completed" the all-reduce rank 0 still has
    # in flight. Without the ranks' logs that is no evidence the job finished.
    v = analyze([FIX / "fr-shape-rank3-dumps-no-culprit" / "logs"], jobs=1).verdict
    assert v.status is Status.INCONCLUSIVE
    clean = analyze([FIX / "fr-clean-dumps" / "logs"], jobs=1).verdict  # the same shape, a clean run
    assert clean.status is Status.INCONCLUSIVE


def test_the_ledger_is_in_the_json_report() -> None:
    report = analyze([FIX / "fr-subgroup-long-rank3" / "logs"], jobs=1)
    out = io.StringIO()
    render(report, "json", out)
    doc = json.loads(out.getvalue())
    jsonschema.validate(doc, SCHEMA)
    ledger = doc["verdict"]["ledger"]
    assert {(m["rank"], m["stance"]) for m in ledger} >= {(2, "against"), (2, "for"), (3, "for")}
    assert all(m["citation"] for m in ledger if m["rank"] in (2, 3))
    assert doc["verdict"]["failed_principles"] == []


def test_two_ras_snapshots_of_one_incident_keep_the_rank_the_first_placed() -> None:
    # Case 2: NCCL's RAS guide, INCOMPLETE then (60 s later, a file of its own) DEAD. The DEAD snapshot has
    # no table of communicators; the earlier one placed the missing communicator rank 21 in the job.
    v = analyze([FIX / "ras-guide-incomplete-then-dead-rank21" / "logs"], jobs=1).verdict
    assert [(c.kind, c.rank) for c in v.culprits] == [("rank", 21)] and v.phase.value == "execution"
    assert "after it had stopped answering" in v.culprits[0].reason


def test_an_unresponsive_process_that_answers_again_is_no_failure() -> None:
    # Its near-miss: INCOMPLETE, then a snapshot in which the one communicator runs without an error.
    v = analyze([FIX / "ras-guide-incomplete-then-healthy" / "logs"], jobs=1).verdict
    assert v.status is Status.NO_FAILURE and "transient" in v.reasoning
    # The first snapshot alone is still a lead on rank 21.
    first = sorted((FIX / "ras-guide-incomplete-then-healthy" / "logs").iterdir())[0]
    alone = analyze([first], jobs=1).verdict
    assert alone.status is not Status.NO_FAILURE


def test_ranks_ended_by_a_mismatch_they_report_are_no_silent_stop() -> None:
    # Case 5's bundle with its logs: ranks 0 and 1 were ended by gloo's size check (both log it) and left
    # no dump. "Left no dump" (a hang, 0.55) is a reading of absence that their own lines contradict.
    v = analyze([FIX / "fr-shape-early-rank1" / "logs"], jobs=1).verdict
    assert v.status is Status.INCONCLUSIVE and v.category.value == "collective_mismatch"
    assert "do not say which rank was odd" in v.reasoning and "What would settle it" in v.reasoning


def test_ras_missing_then_dead_without_a_timeout_is_a_process_that_died(tmp_path: Path) -> None:
    # The guide's two snapshots say the process stopped: RAS timed out waiting on it, then declared it
    # dead. A killed process closes its connections (a real SIGKILL under NCCL 2.28.9 shows as missing
    # data and no timeout): the same two snapshots without the TIMEOUT block are a crash.
    guide = FIX / "ras-guide-incomplete-then-dead-rank21" / "logs"
    stopped = analyze([guide]).verdict
    assert (stopped.category.value, [c.rank for c in stopped.culprits]) == ("hung_process", [21])
    for src in guide.iterdir():
        text = src.read_text(encoding="utf-8")
        cut = text.replace("TIMEOUT\n  Encountered 2 communication timeouts while gathering communicator data\n", "")
        (tmp_path / src.name).write_text(cut, encoding="utf-8")
    assert "communication timeouts" in "".join(p.read_text() for p in guide.iterdir())
    assert "communication timeouts" not in "".join(p.read_text() for p in tmp_path.iterdir())
    died = analyze([tmp_path]).verdict
    assert (died.category.value, [c.rank for c in died.culprits]) == ("crashed_process", [21])
