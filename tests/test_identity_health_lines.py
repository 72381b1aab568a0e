"""triage.health's failure line names its writer (`triage-health rank 3: check FAILED: …`): the line
is that rank's, and so is its file where the file has one writer. The line goes through Python
logging, so it has no `[rankN]:` prefix: in torchrun's `--log-dir` files it is often the only line
that says whose file it is."""

from __future__ import annotations

from pathlib import Path

from triage.api import analyze
from triage.report.json_format import to_dict

FIXTURES = Path(__file__).parent / "fixtures"
HOW = "triage.health's line names its writer"


def _health(rank: int, missing: int = 2) -> str:
    return (f"2026-11-25 16:49:14,788 ERROR triage.health: 2026-11-25T16:49:14.788Z triage-health rank {rank}: "
            f"check FAILED: missing rank {missing} in group 0 (ranks 0-3), call 1, tag default, at arrival "
            f"after 3.007 s: rank {missing} did not reach the check within the 3 s deadline\n")


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_every_rank_of_a_two_node_health_run_has_its_log() -> None:
    # A real run: two agents, rank 2 never calls the check; rank 3's file holds only the health line.
    report = analyze([FIXTURES / "health-2node-never-rank2" / "logs"], jobs=1)
    ranks = to_dict(report)["ranks"]
    assert [(r["rank"], r["has_log"], r["role"]) for r in ranks] == [
        (0, True, "victim"), (1, True, "victim"), (2, True, "culprit"), (3, True, "victim")]
    stderr = {(s.name.split("/")[-5], s.identity.local_rank): s.identity
              for s in report.sources if s.name.endswith("stderr.log")}
    assert {where: i.rank for where, i in stderr.items()} == {
        ("node0", 0): 0, ("node0", 1): 1, ("node1", 0): 2, ("node1", 1): 3}
    assert stderr[("node1", 1)].learnt_from["rank"] == HOW
    assert "base" in stderr[("node1", 0)].learnt_from["rank"]  # rank 3's file gave node1's rank base
    assert [c.rank for c in report.verdict.culprits] == [2]
    assert all(not s.conflicts for s in report.sources)


def test_a_single_nodes_files_are_named_by_their_lines_not_assumed(tmp_path: Path) -> None:
    # The shape of tests/test_health.py's job: one node, no `[rankN]:` line anywhere.
    files = {f"none_ab12/attempt_0/{r}/stderr.log": _health(r) for r in (0, 1, 3)}
    files["none_ab12/attempt_0/2/stderr.log"] = "UserWarning: Failed to initialize NumPy\n"
    report = analyze([_write(tmp_path, files)], jobs=1)
    by_local = {s.identity.local_rank: s for s in report.sources}
    assert {lr: s.identity.rank for lr, s in by_local.items()} == {0: 0, 1: 1, 2: 2, 3: 3}
    assert all(by_local[lr].identity.learnt_from["rank"] == HOW for lr in (0, 1, 3))
    assert not any("single node" in note for s in report.sources for note in s.notes)
    assert all(r["has_log"] for r in to_dict(report)["ranks"])


def test_health_lines_of_several_ranks_in_one_file_keep_their_own_writers(tmp_path: Path) -> None:
    # Every rank's stderr gathered in one file (`2>&1 | tee job.log`): each line is its writer's,
    # and the file is none of theirs.
    text = "".join(_health(r) for r in (0, 1, 3))
    report = analyze([_write(tmp_path, {"job.log": text})], jobs=1)
    (source,) = report.sources
    assert source.identity.rank is None
    lines = sorted((e.identity.rank, e.identity.learnt_from.get("rank")) for e in report.events
                   if e.rule_id == "repro-health-check-missing")
    assert lines == [(0, HOW), (1, HOW), (3, HOW)]


def test_a_rank_prefix_of_the_file_wins_and_the_disagreement_is_said(tmp_path: Path) -> None:
    text = ("[rank1]:[W1125 16:44:31.259234862 socket.cpp:469] [c10d] waitForInput: poll for socket "
            "SocketImpl(fd=3) returned 0, likely a timeout\n") * 3 + _health(0)
    report = analyze([_write(tmp_path, {"a/stderr.log": text})], jobs=1)
    (source,) = report.sources
    assert source.identity.rank == 1
    assert any("triage.health" in c for c in source.conflicts)
