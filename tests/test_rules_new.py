"""`triage rules new --from-line`: a line no rule knows becomes a valid rule, and then it is known.

Real invocations (typer's CliRunner) and real files in tmp_path: the drafted file must load as a
user rule (schema included), fire on its own examples, and make `analyze --rules DIR` explain the
line and the same message from other ranks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from triage.cli import UserError, app
from triage.rules import load_rule, load_rules
from triage.unexplained import example_problems

RUNNER = CliRunner()

# Lines no built-in rule knows, in each format that marks errors; and the same message as another
# rank, host or run writes it.
LINES = {
    "nccl-warn": (
        "gpu-node-01:4402:4590 [2] transport/net_foo.cc:412 NCCL WARN NET/Foo : frobnicator lost sync "
        "with peer 10.42.0.3<55552> after 7 retries",
        "[2025-02-03 04:05:06] trn-b-117:99:100 [7] transport/net_foo.cc:415 NCCL WARN NET/Foo : "
        "frobnicator lost sync with peer 10.9.8.7<40001> after 12 retries",
    ),
    "c10-error": (
        "[rank3]:[E709 17:05:38.162555850 Frob.cpp:12] [PG ID 0 PG GUID 0(default_pg) Rank 3] frobnicator "
        "stalled for 1500 ms on stream 0x7f3a2c001000",
        "[default1]:[rank9]:[E1121 00:30:13.392242200 Frob.cpp:14] [PG ID 2 PG GUID 5(tp) Rank 1] frobnicator "
        "stalled for 2 ms on stream 0x55aa",
    ),
    "cann-error": (
        "[ERROR] HCCL(31337,python):2025-03-04-10:11:05.123.456 [frob_manager.cc:42][31337][ExecStage]"
        "Frobnication of the notify table failed, errNo[0x0000000005000099], code EI0099, deviceId[1]",
        "[ERROR] HCCL(8,train):2026-01-01-00:00:00.000.001 [frob_manager.cc:47][9][ExecStage]"
        "Frobnication of the notify table failed, errNo[0x0000000005000099], code EI0099, deviceId[7]",
    ),
    "python-exception": (  # the last line of a traceback (job_with writes the traceback above it)
        "[rank3]: triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
        "262144, Hardware limit: 232448",
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, "
        "Hardware limit: 65536",
    ),
    "terminate": (
        "[default0]:terminate called after throwing an instance of 'c10::Error'",
        "terminate called after throwing an instance of 'c10::Error'",
    ),
    "exit-status": (
        "launcher: worker 3 on node07 exited with exit code 134",
        "launcher: worker 12 on node11 exited with exit code 1",
    ),
}


def cli(*args: str | Path) -> Any:
    return RUNNER.invoke(app, [str(a) for a in args])


def job_with(folder: Path, lines: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for rank, line in enumerate(lines):
        prefix = m[0] if (m := re.match(r"\[rank\d+\]: ", line)) else ""
        traceback = (f"{prefix}Traceback (most recent call last):\n{prefix}  File \"k.py\", line 9, in f\n"
                     if "runtime.errors" in line else "")
        (folder / f"rank{rank}.log").write_text(f"step 1 loss 2.3\n{traceback}{line}\n", encoding="utf-8")
    return folder


def unexplained_of(job: Path, rules: Path | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    args: list[str | Path] = ["analyze", "--format", "json", job]
    if rules is not None:
        args += ["--rules", rules]
    result = cli(*args)
    report = json.loads(result.stdout)
    return report["unexplained"], report


@pytest.mark.parametrize("marker", sorted(LINES))
def test_a_drafted_rule_explains_the_line_and_the_same_message_elsewhere(marker: str, tmp_path: Path) -> None:
    line, other = LINES[marker]
    job = job_with(tmp_path / "job", [line, other])
    before, _ = unexplained_of(job)
    assert [u["marker"] for u in before] == [marker], "the line must be unexplained to begin with"
    assert before[0]["count"] == 2, "both lines fold into one signature"

    rules = tmp_path / "my-rules"
    result = cli("rules", "new", "--from-line", line, "--out", rules)
    assert result.exit_code == 0, result.output
    [path] = rules.glob("*.yaml")
    assert result.stdout.strip() == str(path)

    rule = load_rule(path)  # a user rule: the schema and every check apply
    assert example_problems(rule) == []
    data = yaml.safe_load(path.read_text())
    assert data["kind"] == "error" and data["phase"] == "any" and data["severity"] == "error"
    assert data["examples"]["match"] == [{"line": line}]
    [near] = data["examples"]["nomatch"]
    assert any(literal in near for literal in data["prefilter"]), "the near miss reaches the regex"
    assert "generated" in data["explain"]["meaning"].lower()
    assert "edit" in data["explain"]["next_steps"].lower()
    assert rule.pattern.groupindex == {}, "no named groups: nothing to register as a field"

    after, report = unexplained_of(job, rules)
    assert after == [], "the line and the same message from another rank are now explained"
    fired = {r["first_event"]["rule"] for r in report["ranks"] if r["first_event"]}
    assert fired == {rule.id}


def test_the_prefilter_is_the_longest_stable_literal(tmp_path: Path) -> None:
    line = LINES["nccl-warn"][0]
    cli("rules", "new", "--from-line", line, "--out", tmp_path)
    [path] = tmp_path.glob("*.yaml")
    data = yaml.safe_load(path.read_text())
    assert data["prefilter"] == ["NET/Foo : frobnicator lost sync with peer"]
    assert data["id"] == "nccl-net-foo-frobnicator-lost-sync" == path.stem
    assert data["family"] == "nccl"
    assert data["examples"]["nomatch"] == [line.replace("NCCL WARN", "NCCL INFO")]


def test_id_and_family_can_be_given(tmp_path: Path) -> None:
    result = cli("rules", "new", "--from-line", LINES["exit-status"][0], "--out", tmp_path,
                 "--id", "site-launcher-worker-exit", "--family", "slurm")
    assert result.exit_code == 0, result.output
    path = tmp_path / "site-launcher-worker-exit.yaml"
    rule = load_rule(path)
    assert (rule.id, rule.family) == ("site-launcher-worker-exit", "slurm")
    assert load_rules([tmp_path])[-1].id == rule.id


def test_it_refuses_to_overwrite_unless_forced(tmp_path: Path) -> None:
    line = LINES["terminate"][0]
    first = cli("rules", "new", "--from-line", line, "--out", tmp_path, "--id", "my-terminate")
    assert first.exit_code == 0, first.output
    path = tmp_path / "my-terminate.yaml"
    path.write_text(path.read_text() + "# my edits\n")
    again = cli("rules", "new", "--from-line", line, "--out", tmp_path, "--id", "my-terminate")
    assert isinstance(again.exception, UserError)
    assert "exists" in str(again.exception) and "--force" in str(again.exception)
    assert path.read_text().endswith("# my edits\n"), "the existing file is untouched"
    forced = cli("rules", "new", "--from-line", line, "--out", tmp_path, "--id", "my-terminate", "--force")
    assert forced.exit_code == 0, forced.output
    assert not path.read_text().endswith("# my edits\n")


@pytest.mark.parametrize(("args", "message"), [
    (["--id", "Not Kebab"], "kebab-case"),
    (["--id", "python-exception"], "already used"),
    (["--family", "cobol"], "--family must be one of"),
])
def test_bad_options_are_refused(args: list[str], message: str, tmp_path: Path) -> None:
    result = cli("rules", "new", "--from-line", LINES["terminate"][0], "--out", tmp_path, *args)
    assert isinstance(result.exception, UserError)
    assert message in str(result.exception)
    assert list(tmp_path.iterdir()) == []


def test_a_line_without_a_stable_literal_is_refused(tmp_path: Path) -> None:
    result = cli("rules", "new", "--from-line", "[rank1]: 12 34 0x56 7.8", "--out", tmp_path)
    assert isinstance(result.exception, UserError)
    assert "literal" in str(result.exception)


def test_a_line_a_built_in_rule_knows_gets_a_note(tmp_path: Path) -> None:
    result = cli("rules", "new", "--from-line", "Killed", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    assert "python-shell-killed already matches this line" in result.stderr
