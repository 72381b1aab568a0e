"""`triage rules show` / `rules test`, and the help text of every command: real invocations.

Each test runs `python -m triage` in a subprocess, as a user would: exit codes, stdout and stderr
are the ones a shell sees (usage errors included, which only `triage.cli.main` formats).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from triage.rules import builtin_rules_dir

RULE = builtin_rules_dir() / "nccl" / "nccl-socket-closed-by-peer.yaml"


def triage(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "triage", *map(str, args)],
                          capture_output=True, text=True, timeout=120, check=False)


def no_traceback(result: subprocess.CompletedProcess[str]) -> bool:
    return "Traceback" not in result.stdout + result.stderr


def user_rule(folder: Path, **change: Any) -> Path:
    """A copy of a built-in rule as a user rule `my-closed-by-peer`, with `change` applied."""
    data = yaml.safe_load(RULE.read_text(encoding="utf-8"))
    data["id"] = "my-closed-by-peer"
    data.update(change)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "my-closed-by-peer.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=1 << 16), encoding="utf-8")
    return path


# --- rules show ---------------------------------------------------------------------------------

def test_show_gives_the_explanation_examples_fields_references_and_file() -> None:
    result = triage("rules", "show", "nccl-socket-closed-by-peer")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("nccl-socket-closed-by-peer — NCCL socket closed by the remote peer")
    for part in ("Meaning:", "Causes:", "Next steps:", "References:",
                 "https://github.com/NVIDIA/nccl/blob/master/src/misc/socket.cc",
                 f"file {RULE}", "Matches (and the fields it gives):", "Does not match:",
                 "peer_host=node07  peer_port=46754", "(no fields)"):
        assert part in out, part


def test_explain_still_works_as_an_alias_of_show() -> None:
    shown, explained = triage("rules", "show", "pytorch-watchdog-timeout"), triage(
        "rules", "explain", "pytorch-watchdog-timeout")
    assert explained.returncode == 0
    assert explained.stdout == shown.stdout


def test_show_an_unknown_id_exits_2_and_suggests_close_ids() -> None:
    result = triage("rules", "show", "nccl-socket-closed")
    assert result.returncode == 2
    assert "no rule 'nccl-socket-closed'; did you mean nccl-socket-closed-by-peer" in result.stderr
    assert result.stdout == "" and no_traceback(result)


def test_show_reads_a_user_rule_folder(tmp_path: Path) -> None:
    path = user_rule(tmp_path / "mine")
    result = triage("rules", "show", "my-closed-by-peer", "--rules", tmp_path / "mine")
    assert result.returncode == 0, result.stderr
    assert f"file {path}" in result.stdout


# --- rules test ---------------------------------------------------------------------------------

def test_the_builtin_rules_all_pass() -> None:
    result = triage("rules", "test")
    assert result.returncode == 0, result.stdout[-2000:]
    assert "FAIL" not in result.stdout
    assert result.stdout.strip().splitlines()[-1].startswith("all pass: ")


def test_a_good_user_folder_passes(tmp_path: Path) -> None:
    user_rule(tmp_path)
    result = triage("rules", "test", tmp_path)
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip() == f"all pass: 1 rule files, 10 examples in {tmp_path}"


def test_a_match_example_that_does_not_match_fails_with_its_rule_file_and_example(tmp_path: Path) -> None:
    data = yaml.safe_load(RULE.read_text(encoding="utf-8"))
    bad_line = "Connection closed by remote peer, said nobody"  # holds the literal; the regex wants more
    path = user_rule(tmp_path, examples={"match": [*data["examples"]["match"], bad_line],
                                         "nomatch": data["examples"]["nomatch"]})
    result = triage("rules", "test", tmp_path)
    assert result.returncode == 1
    fails = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert fails == [f"FAIL my-closed-by-peer {path} match[6]: did not fire on {bad_line!r}"]
    assert result.stdout.strip().splitlines()[-1].startswith("1 failed in 1 of 1 rule files, 11 examples")
    assert no_traceback(result)


def test_a_field_that_differs_is_named_with_both_values(tmp_path: Path) -> None:
    data = yaml.safe_load(RULE.read_text(encoding="utf-8"))
    first = dict(data["examples"]["match"][0], fields={"peer_host": "node08", "peer_port": "46754"})
    user_rule(tmp_path, examples={"match": [first], "nomatch": data["examples"]["nomatch"]})
    result = triage("rules", "test", tmp_path)
    assert result.returncode == 1
    assert "match[0]: field peer_host: expected 'node08', got 'node07'" in result.stdout


def test_a_nomatch_example_that_fires_and_a_broken_convention_fail(tmp_path: Path) -> None:
    data = yaml.safe_load(RULE.read_text(encoding="utf-8"))
    fired = data["examples"]["match"][0]["line"]
    user_rule(tmp_path, examples={"match": data["examples"]["match"], "nomatch": [fired]},
              prefilter=["Connection closed by remote peer"], message="closed by {peer_adress}")
    result = triage("rules", "test", tmp_path)
    assert result.returncode == 1
    assert "nomatch[0]: fired on a line it must not match" in result.stdout
    assert "rule: message field {peer_adress} is not captured" in result.stdout


def test_an_unregistered_field_is_refused_as_the_project_test_refuses_it(tmp_path: Path) -> None:
    data = yaml.safe_load(RULE.read_text(encoding="utf-8"))
    user_rule(tmp_path, regex=data["regex"].replace("peer_port", "peer_prot"),
              examples={"match": [data["examples"]["match"][4]["line"]], "nomatch": data["examples"]["nomatch"]})
    result = triage("rules", "test", tmp_path)
    assert result.returncode == 1
    assert "named group 'peer_prot' is not a field triage reads" in result.stdout


@pytest.mark.parametrize("text", ["id: [unclosed\n", "a: &x 1\nb: *x\n"], ids=["syntax", "alias"])
def test_a_file_that_is_not_readable_yaml_exits_2_without_a_traceback(tmp_path: Path, text: str) -> None:
    user_rule(tmp_path)
    (tmp_path / "broken.yaml").write_text(text, encoding="utf-8")
    result = triage("rules", "test", tmp_path)
    assert result.returncode == 2
    assert f"triage: error: {tmp_path / 'broken.yaml'}: cannot read rule" in result.stderr
    assert no_traceback(result)


def test_a_dir_that_is_not_a_folder_exits_2(tmp_path: Path) -> None:
    result = triage("rules", "test", tmp_path / "missing")
    assert result.returncode == 2
    assert "not a folder of rules" in result.stderr and no_traceback(result)


def test_a_rule_drafted_by_rules_new_passes_rules_test(tmp_path: Path) -> None:
    line = "node03:4411:4620 [1] NCCL WARN Frobnicator lost its widget on device 3"
    drafted = triage("rules", "new", "--from-line", line, "--out", tmp_path)
    assert drafted.returncode == 0, drafted.stderr
    result = triage("rules", "test", tmp_path)
    assert result.returncode == 0, result.stdout


# --- help text ----------------------------------------------------------------------------------

COMMANDS = [("analyze",), ("repro",), ("rules", "list"), ("rules", "show"), ("rules", "new"),
            ("rules", "test"), ("ras", "collect")]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_names_values_plainly(command: tuple[str, ...]) -> None:
    result = triage(*command, "--help")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith(f"Usage: triage {' '.join(command)} ")
    for typer_style in ("<list[", "<str>", "<int", "<float>", "<path>", "<list[Path]>", "{paths}", "{rule_id}"):
        assert typer_style not in out, typer_style


def test_analyze_help_shows_paths_and_numbers_as_such() -> None:
    out = triage("analyze", "--help").stdout
    assert "Usage: triage analyze [OPTIONS] PATH..." in out
    assert "-n, --world-size N " in out and "[N>=1]" in out
    assert "--rules PATH " in out


def test_a_port_range_is_written_with_its_value_name() -> None:
    assert "[default: 28028; 1<=N<=65535]" in triage("ras", "collect", "--help").stdout


def test_repro_help_lists_exit_codes_that_fit_repro() -> None:
    out = " ".join(triage("repro", "--help").stdout.split())
    assert "invalid rule" not in out
    assert "2 usage error (bad option, PyTorch missing" in out and "130 interrupted" in out


@pytest.mark.parametrize(("args", "hint"), [
    (("analyze",), "triage analyze --help"),
    (("analyze", "x", "--world-size", "0"), "triage analyze --help"),
    (("rules", "show"), "triage rules show --help"),
])
def test_a_usage_error_points_at_the_sub_command_help(args: tuple[str, ...], hint: str) -> None:
    result = triage(*args)
    assert result.returncode == 2
    assert f"Try '{hint}'." in result.stderr
    assert no_traceback(result)


def test_a_missing_argument_is_named_as_help_shows_it() -> None:
    assert "Missing argument 'PATH...'" in triage("analyze").stderr


def test_a_regex_that_runs_past_the_time_limit_is_named(tmp_path: Path) -> None:
    data = yaml.safe_load(RULE.read_text(encoding="utf-8"))
    slow = "Connection closed by remote peer x" + "a" * 40 + "b"  # (a|aa)+ backtracks exponentially
    user_rule(tmp_path, regex=r"Connection closed by remote peer x(?:a|aa)+y", message="closed", info_fields=[],
              examples={"match": [slow], "nomatch": data["examples"]["nomatch"]})
    result = triage("rules", "test", tmp_path)
    assert result.returncode == 1
    assert "match[0]: the regex took over 50 ms on" in result.stdout
