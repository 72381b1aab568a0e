"""The command line as a user meets it: real invocations, exit codes, bad input, output hygiene."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from triage import exitcodes
from triage.rules import builtin_rules_dir

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
HANG = FIXTURES / "real-gloo-hang-rank2" / "logs"
CLEAN = FIXTURES / "real-gloo-clean" / "logs"
INCONCLUSIVE = FIXTURES / "nccl24-only-host0-inconclusive" / "logs"
SCHEMA = ROOT / "src" / "triage" / "schemas" / "report-v1.schema.json"
TIMEOUT_LINE = ("[rank{r}]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
                "collective operation timeout: WorkNCCL(SeqNum=20585, OpType=ALLREDUCE, NumelIn=1259621, "
                "NumelOut=1259621, Timeout(ms)=600000) ran for 600000 milliseconds before timing out.\n")


def triage(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "triage", *map(str, args)],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True, text=True, timeout=120, check=False,
    )


def assert_no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr + result.stdout


def silent_rank3_job(folder: Path) -> Path:
    """Eight per-rank logs where rank 3 stops writing and the other seven time out."""
    folder.mkdir(parents=True, exist_ok=True)
    for r in range(8):
        text = f"[rank{r}]:[I709 16:55:00.100 train.py:88] step 100 loss 2.31\n"
        if r != 3:
            text += TIMEOUT_LINE.format(r=r)
        (folder / f"rank{r}.log").write_text(text)
    return folder


# --- exit codes ---------------------------------------------------------------------------

def test_exit_1_when_a_failure_is_diagnosed() -> None:
    result = triage("analyze", HANG)
    assert result.returncode == exitcodes.DIAGNOSED, result.stderr
    assert "rank 2" in result.stdout


def test_exit_0_when_nothing_failed() -> None:
    result = triage("analyze", CLEAN)
    assert result.returncode == exitcodes.NO_FAILURE, result.stdout
    assert "NO FAILURE" in result.stdout


def test_exit_3_when_inconclusive() -> None:
    result = triage("analyze", INCONCLUSIVE)
    assert result.returncode == exitcodes.INCONCLUSIVE, result.stdout
    assert "INCONCLUSIVE" in result.stdout


def test_exit_zero_flag_keeps_errors_at_2(tmp_path: Path) -> None:
    assert triage("analyze", "--exit-zero", HANG).returncode == 0
    assert triage("analyze", "--exit-zero", tmp_path / "nope").returncode == 2


@pytest.mark.parametrize("args", [("analyze",), ("analyze", "x", "--format", "yaml"),
                                  ("analyze", "x", "--bogus"), ("nosuchcommand",),
                                  ("analyze", "x", "--world-size", "0")])
def test_usage_errors_exit_2_in_one_line(args: tuple[str, ...]) -> None:
    result = triage(*args)
    assert result.returncode == exitcodes.USAGE_OR_INPUT_ERROR
    assert_no_traceback(result)
    assert result.stderr.strip().startswith("triage: error:")


def test_no_arguments_prints_help_and_exits_2() -> None:
    result = triage()
    assert result.returncode == 2
    assert "analyze" in result.stdout


# --- bad input ----------------------------------------------------------------------------

def test_missing_path(tmp_path: Path) -> None:
    result = triage("analyze", tmp_path / "does-not-exist")
    assert result.returncode == 2
    assert_no_traceback(result)
    assert "does-not-exist: no such file or folder" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_empty_folder(tmp_path: Path) -> None:
    result = triage("analyze", tmp_path)
    assert result.returncode == 2
    assert "folder holds no files" in result.stderr
    assert_no_traceback(result)


def test_binary_file_alone_is_an_input_error(tmp_path: Path) -> None:
    blob = tmp_path / "core.1234"
    blob.write_bytes(bytes(range(256)) * 64)
    result = triage("analyze", blob)
    assert result.returncode == 2
    assert "binary data" in result.stderr
    assert_no_traceback(result)


def test_bad_files_among_good_ones_are_reported_and_the_rest_analysed(tmp_path: Path) -> None:
    job = silent_rank3_job(tmp_path / "job")
    (job / "core.bin").write_bytes(b"\x7fELF\x00\x00" * 500)
    (job / "rank9.log.gz").write_bytes(b"\x1f\x8b\x08\x00 this gzip is cut short")
    (job / "latin1.log").write_bytes(b"caf\xe9 au lait \xff\xfe step 3\n")
    result = triage("analyze", "--format", "json", job)
    assert_no_traceback(result)
    assert result.returncode == exitcodes.DIAGNOSED, result.stderr
    report = json.loads(result.stdout)
    assert [c["rank"] for c in report["verdict"]["culprits"]] == [3]
    errors = {Path(e["source"]).name: e["reason"] for e in report["errors"]}
    assert errors["core.bin"] == "binary data, not a text log"
    assert "rank9.log.gz" in errors
    notes = {Path(s["name"]).name: s["notes"] for s in report["sources"]}
    assert any("UTF-8" in n for n in notes["latin1.log"])


def test_unreadable_file_is_reported(tmp_path: Path) -> None:
    job = silent_rank3_job(tmp_path / "job")
    locked = job / "rank0.log"
    locked.chmod(0)
    try:
        if locked.open("rb"):  # root reads anything: then the case cannot be made here
            pytest.skip("running as root: permissions do not stop reads")
    except PermissionError:
        pass
    result = triage("analyze", "--format", "json", job)
    assert_no_traceback(result)
    report = json.loads(result.stdout)
    assert any("permission" in e["reason"] for e in report["errors"])


def test_stdin_is_read(tmp_path: Path) -> None:
    text = "".join(TIMEOUT_LINE.format(r=r) for r in (0, 1, 2))
    result = triage("analyze", "-", "--world-size", "4", "--format", "json", stdin=text.encode())
    assert result.returncode == exitcodes.DIAGNOSED, result.stderr
    report = json.loads(result.stdout)
    assert [c["rank"] for c in report["verdict"]["culprits"]] == [3]


def test_inputs_are_never_modified(tmp_path: Path) -> None:
    job = silent_rank3_job(tmp_path / "job")
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in job.rglob("*")}
    triage("analyze", job)
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in job.rglob("*")}
    assert before == after


# --- output -------------------------------------------------------------------------------

def test_json_report_follows_the_shipped_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    for logs in (HANG, CLEAN, INCONCLUSIVE):
        result = triage("analyze", "--format", "json", logs)
        report = json.loads(result.stdout)
        jsonschema.validate(report, schema)
        assert report["schema_version"] == 1


def test_log_text_is_printed_literally(tmp_path: Path) -> None:
    job = silent_rank3_job(tmp_path / "job")
    (job / "rank3.log").write_text("[rank3]:[I709 16:55:00.100 train.py:88] [/bold] [red]step[/] 100\n")
    result = triage("analyze", job)
    assert_no_traceback(result)
    assert "[rank3]:[I709 16:55:00.100 train.py:88] [/bold] [red]step[/] 100" in result.stdout
    assert "[rank0]:[E709" in result.stdout


def test_output_file(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = triage("analyze", "--format", "json", "--output", out, HANG)
    assert result.returncode == 1
    assert result.stdout == ""
    assert json.loads(out.read_text())["verdict"]["status"] == "diagnosed"


def test_importing_the_cli_does_not_import_torch() -> None:
    code = "import sys, triage.cli; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_an_analysis_written_to_a_file_reads_its_options_without_pydantic(tmp_path: Path) -> None:
    # Typer builds a pydantic validator per option value; triage.cli_values reads text, lists of
    # text and whole numbers itself. What an analysis does not use (rich, PyYAML once the cache holds
    # the rules and the policy, the RAS collector) is not imported either.
    out = tmp_path / "report.json"
    args = ["triage", "analyze", "--quiet", "-j", "2", "-n", "16", "--fail-on", "none", "-o", f"json={out}",
            "-o", f"junit={tmp_path / 'r.xml'}", str(HANG)]
    code = ("import sys; from triage.cli import main\n"
            f"sys.argv = {args!r}\n"
            "try:\n    main()\nexcept SystemExit as done:\n    code = done.code\n"
            "heavy = sorted(m for m in ('pydantic', 'rich', 'yaml', 'triage.ras.collect') if m in sys.modules)\n"
            "print(code, heavy)")
    env = {**os.environ, "TRIAGE_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert first.stdout.split()[0] == "0", first.stderr  # --fail-on none: the verdict exits 0
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert again.stdout.strip() == "0 []", again.stderr
    assert json.loads(out.read_text())["verdict"]["status"] == "diagnosed"
    assert (tmp_path / "r.xml").exists()


# --- rules --------------------------------------------------------------------------------

def test_rules_list_and_explain() -> None:
    listed = triage("rules", "list")
    assert listed.returncode == 0
    assert "pytorch-watchdog-timeout" in listed.stdout
    explained = triage("rules", "explain", "pytorch-watchdog-timeout")
    assert explained.returncode == 0
    assert "Next steps" in explained.stdout
    assert triage("rules", "explain", "no-such-rule").returncode == 2


def test_user_rules_are_validated_like_builtin_ones(tmp_path: Path) -> None:
    (tmp_path / "my-rule.yaml").write_text("id: my-rule\ntitle: x\n")
    result = triage("analyze", "--rules", tmp_path, HANG)
    assert result.returncode == 2
    assert "my-rule.yaml" in result.stderr
    assert "missing key" in result.stderr
    assert_no_traceback(result)


def test_a_user_rule_fires_and_a_runaway_regex_is_cut_short(tmp_path: Path) -> None:
    rules = tmp_path / "rules" / "python"
    rules.mkdir(parents=True)
    source = (builtin_rules_dir() / "pytorch" / "pytorch-watchdog-timeout.yaml").read_text()
    # A pattern with catastrophic backtracking on a long line of 'a's: it must not hang triage.
    runaway = source.replace("id: pytorch-watchdog-timeout", "id: my-runaway").replace(
        "family: pytorch", "family: python").replace(
        "regex: '", "regex: '(?:(a+)+b)|").replace(
        'prefilter: ["Watchdog caught collective operation timeout"]', 'prefilter: ["aaaa"]')
    runaway = runaway.replace("  nomatch:\n", '  nomatch:\n    - "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac"\n', 1)
    (rules / "my-runaway.yaml").write_text(runaway)
    job = silent_rank3_job(tmp_path / "job")
    (job / "rank3.log").write_text("a" * 5000 + "c\n")
    result = triage("analyze", "--rules", tmp_path / "rules", "--format", "json", job)
    assert_no_traceback(result)
    assert result.returncode == exitcodes.DIAGNOSED, result.stderr


# --- archives and compression, end to end -------------------------------------------------

def test_archive_and_compressed_members(tmp_path: Path) -> None:
    job = silent_rank3_job(tmp_path / "job")
    for name in ("rank0.log", "rank1.log"):
        path = job / name
        (job / (name + ".gz")).write_bytes(gzip.compress(path.read_bytes()))
        path.unlink()
    archive = shutil.make_archive(str(tmp_path / "bundle"), "gztar", root_dir=tmp_path, base_dir="job")
    result = triage("analyze", "--format", "json", archive)
    assert result.returncode == exitcodes.DIAGNOSED, result.stderr
    report = json.loads(result.stdout)
    assert [c["rank"] for c in report["verdict"]["culprits"]] == [3]
    names = [s["name"] for s in report["sources"]]
    assert any(n.endswith("!job/rank0.log.gz") for n in names)
    assert not (tmp_path / "job" / "rank0.log").exists()  # nothing was extracted
