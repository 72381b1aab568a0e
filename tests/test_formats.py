"""Every output format: golden files, schema validity (JUnit XSD, SARIF 2.1.0), escaping, the CLI.

Golden files live in tests/data/formats/<fixture>.<format>; after a deliberate change of a format,
regenerate them with `TRIAGE_UPDATE_GOLDEN=1 pytest tests/test_formats.py` and review the diff.
The schemas are vendored in tests/schemas/ (sources in tests/schemas/README.md).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import xmlschema
from typer.testing import CliRunner

from triage import __version__, exitcodes
from triage.api import analyze
from triage.cli import _register_repro, app
from triage.report import FORMATS, REGISTRY, render
from triage.report.github import command, escape_data, escape_property
from triage.report.views import build

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "formats"
SCHEMAS = ROOT / "tests" / "schemas"
FIXTURES = {  # name -> logs, relative to the repository root (the paths the reports print)
    "nccl24-silent-rank11": "tests/fixtures/nccl24-silent-rank11/logs",
    "real-gpu-nccl2289-job-crash-rank2": "tests/fixtures/real-gpu-nccl2289-job-crash-rank2/logs",
    "job-2x8-hang": "examples/job-2x8-hang/logs",
    "nccl24-archive-silent-rank2": "tests/fixtures/nccl24-archive-silent-rank2/logs",  # archive!member
}
EXTENSION = {"terminal": "txt", "json": "json", "markdown": "md", "github": "txt", "junit": "xml",
             "sarif": "sarif", "html": "html"}
HANG = FIXTURES["job-2x8-hang"]


@pytest.fixture(scope="module")
def reports() -> dict[str, object]:
    cwd = Path.cwd()
    os.chdir(ROOT)  # sources named relative to the repository, as a CI job names them
    try:
        return {name: analyze([path]) for name, path in FIXTURES.items()}
    finally:
        os.chdir(cwd)


def _rendered(report: object, fmt: str) -> str:
    out = io.StringIO()
    render(report, fmt, out, color=False)  # type: ignore[arg-type]
    return out.getvalue().replace(__version__, "VERSION")


@pytest.fixture(scope="module")
def junit_schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd"))


@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema)


# --- golden files ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("fixture", FIXTURES)
def test_golden(reports: dict[str, object], fixture: str, fmt: str) -> None:
    text = _rendered(reports[fixture], fmt)
    golden = GOLDEN / f"{fixture}.{fmt}.{EXTENSION[fmt]}"
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8"), f"{golden} differs (TRIAGE_UPDATE_GOLDEN=1 rewrites it)"


# --- validity ------------------------------------------------------------------------------------

@pytest.mark.parametrize("fixture", FIXTURES)
def test_junit_is_valid_and_fails_culprit_and_victims(reports: dict[str, object], fixture: str,
                                                      junit_schema: xmlschema.XMLSchema) -> None:
    text = _rendered(reports[fixture], "junit")
    junit_schema.validate(text)
    view = build(reports[fixture])  # type: ignore[arg-type]
    failing = {r.rank for r in view.ranks if r.role in ("culprit", "failed", "victim")}
    for rank in failing:
        assert f'<testcase name="rank {rank}"' in text
    assert text.count("<failure") == (len(failing) if view.ranks else text.count("<failure"))


@pytest.mark.parametrize("fixture", FIXTURES)
def test_sarif_is_valid_with_rules_and_results(reports: dict[str, object], fixture: str,
                                               sarif_validator: jsonschema.Draft4Validator) -> None:
    doc = json.loads(_rendered(reports[fixture], "sarif"))
    sarif_validator.validate(doc)
    run = doc["runs"][0]
    rule_ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert all(result["ruleId"] in rule_ids for result in run["results"])
    assert len(run["results"]) == len(build(reports[fixture]).findings)  # type: ignore[arg-type]


USER_RULE = """\
id: site-frobnicator-lost-sync
title: The site's frobnicator lost sync with its switch
family: python
kind: error
phase: execution
severity: error
prefilter: ["frobnicator lost sync"]
regex: 'frobnicator lost sync on device (?P<device>\\d+)'
message: "frobnicator lost sync on device {device}"
explain:
  meaning: >-
    Our frobnicator dropped its link to the top-of-rack switch; the rank that prints it cannot send.
  next_steps: >-
    Reseat the frobnicator cable of that node and page the site team.
references:
  - https://wiki.example.org/frobnicator
examples:
  match:
    - line: "2026-11-21 10:00:05,000 ERROR site: frobnicator lost sync on device 2"
      fields: {device: "2"}
  nomatch:
    - "2026-11-21 10:00:05,000 INFO site: frobnicator in sync on device 2"
"""


def test_sarif_documents_a_user_rule_as_the_analysis_loaded_it(
        tmp_path: Path, sarif_validator: jsonschema.Draft4Validator) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "site-frobnicator-lost-sync.yaml").write_text(USER_RULE, encoding="utf-8")
    job = tmp_path / "job"
    job.mkdir()
    for rank in range(4):
        lines = [f"2026-11-21 10:00:0{rank},456 INFO train: rank {rank}/4 step 10 loss 2.31"]
        if rank == 2:
            lines.append("2026-11-21 10:00:05,000 ERROR site: frobnicator lost sync on device 2")
        (job / f"rank{rank}.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, stdout, _ = _cli("analyze", "--rules", str(rules), "--format", "sarif", str(job))
    assert code == exitcodes.DIAGNOSED
    doc = json.loads(stdout)
    sarif_validator.validate(doc)
    run = doc["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["site-frobnicator-lost-sync"]
    [rule] = [r for r in run["tool"]["driver"]["rules"] if r["id"] == "site-frobnicator-lost-sync"]
    assert rule["shortDescription"]["text"] == "The site's frobnicator lost sync with its switch"
    assert rule["fullDescription"]["text"].startswith("Our frobnicator dropped its link")
    assert rule["help"]["text"] == "Reseat the frobnicator cable of that node and page the site team."
    assert rule["helpUri"] == "https://wiki.example.org/frobnicator"


def test_json_keeps_its_schema_and_names_the_rule(reports: dict[str, object]) -> None:
    schema = json.loads((ROOT / "src" / "triage" / "schemas" / "report-v1.schema.json").read_text())
    doc = json.loads(_rendered(reports["job-2x8-hang"], "json"))
    jsonschema.Draft202012Validator(schema).validate(doc)
    rules = {e["rule"] for c in doc["verdict"]["culprits"] for e in c["evidence"]}
    assert "pytorch-watchdog-timeout" in rules


@pytest.mark.parametrize("fmt", FORMATS)
def test_error_documents_are_valid(fmt: str, junit_schema: xmlschema.XMLSchema,
                                   sarif_validator: jsonschema.Draft4Validator) -> None:
    out = io.StringIO()
    REGISTRY[fmt].write_error("no readable log among the inputs (x: 50% <bad>)", "1.0", out)
    text = out.getvalue()
    assert "no readable log" in text
    if fmt == "junit":
        junit_schema.validate(text)
        assert "<error" in text
    elif fmt == "sarif":
        doc = json.loads(text)
        sarif_validator.validate(doc)
        assert doc["runs"][0]["invocations"][0]["executionSuccessful"] is False
    elif fmt == "json":
        schema = json.loads((ROOT / "src" / "triage" / "schemas" / "report-v1.schema.json").read_text())
        jsonschema.Draft202012Validator(schema).validate(json.loads(text))


# --- escaping --------------------------------------------------------------------------------------

def test_github_escapes_data_and_properties() -> None:
    assert escape_data("50%\r\nnext") == "50%25%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    line = command("error", "boom\n::warning::injected", file="logs/a,b:c.log", line=3, title="x: y")
    assert line.count("\n") == 0
    assert line == "::error file=logs/a%2Cb%3Ac.log,line=3,title=x%3A y::boom%0A::warning::injected"


def test_github_folds_are_inert_and_archives_are_followable(reports: dict[str, object]) -> None:
    text = _rendered(reports["nccl24-archive-silent-rank2"], "github")
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if line.startswith("::stop-commands::"):
            token = line.split("::")[2]
            assert f"::{token}::" in lines[start:]
    archive = [line for line in lines if "job-logs.tar.gz" in line and line.startswith("::")]
    assert archive, text
    assert all(",line=" not in line for line in archive)  # the line number is the member's
    assert all(" in tests/fixtures/nccl24-archive-silent-rank2/logs/job-logs.tar.gz" in line for line in archive)


def test_markdown_keeps_log_text_in_code(reports: dict[str, object]) -> None:
    text = _rendered(reports["job-2x8-hang"], "markdown")
    assert "[rank0]:[E708" in text  # literal, inside a fence
    assert "rank 11 (gpu-node-02)" in text


# --- the CLI -------------------------------------------------------------------------------------

def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    _register_repro()
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def _triage(*args: str) -> int:
    """The real entry point (`main`): its error handling turns bad input into exit code 2."""
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True,
                          timeout=120, check=False).returncode


@pytest.mark.parametrize("fmt", FORMATS)
def test_analyze_reaches_every_format(fmt: str, tmp_path: Path) -> None:
    target = tmp_path / f"report.{EXTENSION[fmt]}"
    code, stdout, _ = _cli("analyze", str(ROOT / HANG), "--format", fmt, "--output", f"{fmt}={target}")
    assert code == exitcodes.DIAGNOSED
    assert "rank 11" in stdout
    assert "rank 11" in target.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", FORMATS)
def test_repro_accepts_every_format(fmt: str, tmp_path: Path) -> None:
    """repro parses --format/--output for every name (it stops at the world size before any rank runs)."""
    code, stdout, stderr = _cli("repro", "--backend", "gloo", "--world-size", "1", "--format", fmt,
                                "--output", f"{fmt}={tmp_path / 'r'}")
    assert code == exitcodes.USAGE_OR_INPUT_ERROR
    assert "--world-size must be at least 2" in stdout + stderr
    code, stdout, stderr = _cli("repro", "--world-size", "1", "--format", "nope")
    assert "--format must be one of" in stdout + stderr


def test_several_outputs_in_one_run(tmp_path: Path) -> None:
    code, stdout, _ = _cli("analyze", str(ROOT / HANG), "-q", "-o", f"json={tmp_path / 't.json'}",
                           "-o", f"junit={tmp_path / 't.xml'}", "-o", f"sarif={tmp_path / 't.sarif'}")
    assert code == exitcodes.DIAGNOSED
    assert stdout == ""  # --quiet with files: nothing on stdout
    assert json.loads((tmp_path / "t.json").read_text())["verdict"]["status"] == "diagnosed"
    assert (tmp_path / "t.xml").read_text().startswith("<?xml")
    assert json.loads((tmp_path / "t.sarif").read_text())["version"] == "2.1.0"


def test_bare_output_path_still_takes_the_format(tmp_path: Path) -> None:
    code, stdout, _ = _cli("analyze", str(ROOT / HANG), "-f", "json", "-o", str(tmp_path / "r.json"))
    assert code == exitcodes.DIAGNOSED and stdout == ""
    assert json.loads((tmp_path / "r.json").read_text())["verdict"]["status"] == "diagnosed"


def test_bad_input_still_writes_every_output(tmp_path: Path) -> None:
    outs = {fmt: tmp_path / f"out.{EXTENSION[fmt]}" for fmt in FORMATS}
    args = [arg for fmt, path in outs.items() for arg in ("-o", f"{fmt}={path}")]
    assert _triage("analyze", str(tmp_path / "missing"), "--fail-on", "diagnosed", *args) == \
        exitcodes.USAGE_OR_INPUT_ERROR
    for path in outs.values():
        assert "no readable log" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize(("fail_on", "expected"), [
    ("diagnosed,inconclusive", exitcodes.DIAGNOSED), ("inconclusive", exitcodes.NO_FAILURE),
    ("none", exitcodes.NO_FAILURE), ("diagnosed", exitcodes.DIAGNOSED),
])
def test_fail_on(fail_on: str, expected: int) -> None:
    code, _, _ = _cli("analyze", str(ROOT / HANG), "-q", "-f", "json", "--fail-on", fail_on)
    assert code == expected


def test_fail_on_rejects_unknown_statuses(tmp_path: Path) -> None:
    out = tmp_path / "t.xml"
    assert _triage("analyze", str(ROOT / HANG), "--fail-on", "bogus", "-o", f"junit={out}") == \
        exitcodes.USAGE_OR_INPUT_ERROR
    assert "--fail-on takes" in out.read_text(encoding="utf-8")


def test_simulated_github_actions_run(tmp_path: Path) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(ROOT),
           "CI": "true"}
    code, stdout, _ = _cli("analyze", str(ROOT / HANG), "--format", "github", env=env)
    assert code == exitcodes.DIAGNOSED
    first = stdout.splitlines()[0]
    assert first.startswith("::error title=triage%3A DIAGNOSED%3A rank 11 (gpu-node-02)")
    assert f"::error file={HANG}/gpu-node-02/attempt_0/3/stderr.log,line=277," in stdout  # workspace-relative
    assert "::group::" in stdout and "::endgroup::" in stdout
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n")  # appended, not overwritten
    assert "**Culprit:** rank 11 (gpu-node-02)" in text
