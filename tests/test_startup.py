"""What a run imports and builds before and after its work: only what its command and its input need.

Each run is a real `triage` process (`triage.cli.main`, as the console script calls it) that prints
what it imported once it is done. Every promise is checked against a run that does need the thing
(a gzipped log, a flight-recorder dump, the whole command tree), so a check that could not see an
import, or a tree built the same either way, fails instead of passing.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
HANG = FIXTURES / "real-gloo-hang-rank2" / "logs"  # plain text logs, nothing else
DUMPS = FIXTURES / "fr-hang-before-rank2-dumps" / "logs"  # logs and flight-recorder pickles

# Read by an analysis only where its input holds what they read, or by other commands.
READERS = ("gzip", "pickle", "triage.parse.fr.dump", "triage.parse.fr.safe_pickle")
OTHERS = ("hashlib", "triage.rule_examples", "triage.repro.command", "rich")


def _run(args: list[str], tmp_path: Path, after: str) -> subprocess.CompletedProcess[str]:
    """`triage ARGS` in a process of its own; then `after` runs there and prints a JSON line."""
    code = ("import gc, json, sys\nfrom triage.cli import main\n"
            f"sys.argv = ['triage', *{args!r}]\n"
            "try:\n    main()\nexcept SystemExit as done:\n    code = done.code\n"
            f"{after}\n")
    env = {**os.environ, "TRIAGE_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False,
                          timeout=120)


_IMPORTED = ("print(json.dumps({'code': code, 'frozen': gc.get_freeze_count(), "
             "'modules': sorted(m for m in sys.modules if m.split('.')[0] in "
             "('gzip', 'pickle', 'hashlib', 'rich', 'regex', 'triage'))}))")


def _imported(args: list[str], tmp_path: Path) -> dict[str, Any]:
    done = _run(args, tmp_path, _IMPORTED)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_an_analysis_of_plain_logs_imports_no_reader_it_does_not_use(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    plain = _imported(["analyze", "--quiet", "-j", "1", "--fail-on", "none", "-o", f"json={out}", str(HANG)],
                      tmp_path)
    assert plain["code"] == 0
    assert json.loads(out.read_text())["verdict"]["status"] == "diagnosed"
    modules = set(plain["modules"])
    assert {"regex", "triage.api", "triage.parse.fr"} <= modules  # what it did use is seen
    assert modules.isdisjoint(READERS + OTHERS), sorted(modules & set(READERS + OTHERS))


def test_the_readers_are_imported_where_the_input_needs_them(tmp_path: Path) -> None:
    # The control for the test above: a gzipped log and flight-recorder dumps do import them.
    logs = tmp_path / "logs"
    for folder, gzipped in ((HANG, True), (DUMPS, False)):
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            target = logs / path.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            if gzipped:
                target.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
            else:
                target.write_bytes(path.read_bytes())
    assert any(p.suffix == ".gz" for p in logs.rglob("*")) and any("trace_rank" in p.name for p in logs.rglob("*"))
    read = _imported(["analyze", "--quiet", "-j", "1", "--fail-on", "none", "-o", f"json={tmp_path / 'r.json'}",
                      str(logs)], tmp_path)
    assert set(READERS) <= set(read["modules"])


def test_a_finished_run_leaves_its_objects_frozen_for_the_exit(tmp_path: Path) -> None:
    # The interpreter's collections on the way out skip frozen objects (triage.cli.main).
    out = tmp_path / "report.json"
    done = _imported(["analyze", "--quiet", "-j", "1", "--fail-on", "none", "-o", f"json={out}", str(HANG)], tmp_path)
    assert done["frozen"] > 10_000
    assert out.exists()
    # A run that fails exits as before, with nothing frozen.
    failed = _imported(["analyze", "--quiet", str(tmp_path / "missing")], tmp_path)
    assert failed["code"] == 2 and failed["frozen"] == 0


def test_help_lists_every_command_without_importing_rich_regex_or_the_model(tmp_path: Path) -> None:
    done = _run(["--help"], tmp_path, "print(json.dumps(sorted(m for m in ('rich', 'regex', 'torch', 'triage.model') "
                                      "if m in sys.modules)))")
    assert done.returncode == 0, done.stderr
    *shown, imported = done.stdout.splitlines()
    help_text = "\n".join(shown)
    for command in ("analyze", "extract", "watch", "rules", "ras", "repro"):
        assert f" {command} " in help_text, command
    assert json.loads(imported) == []


def test_a_command_alone_is_built_as_the_whole_tree_would_build_it(tmp_path: Path) -> None:
    # `triage analyze` builds the root with `analyze` alone; its help and its usage errors read as
    # they do from the whole tree (triage.cli.app, every command registered).
    whole = ("import triage.cli\ntriage.cli._register_repro()\n"
             "try:\n    triage.cli.app(prog_name='triage', args={args!r}, standalone_mode=False)\n"
             "except BaseException as exc:\n    print(triage.cli._usage_message(exc), triage.cli.help_command(exc))\n")
    env = {**os.environ, "COLUMNS": "100", "TRIAGE_CACHE_DIR": str(tmp_path / "cache")}
    for args in (["analyze", "--help"], ["rules", "list", "--help"], ["ras", "collect", "--help"],
                 ["analyze", "--bogus", "x"], ["rules", "show"]):
        alone = subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True, env=env,
                               check=False, timeout=120)
        full = subprocess.run([sys.executable, "-c", whole.format(args=args)], capture_output=True, text=True,
                              env=env, check=False, timeout=120)
        assert full.returncode == 0, full.stderr
        if "--help" in args:
            assert alone.returncode == 0 and alone.stdout == full.stdout, args
            assert "Usage: triage " + " ".join(args[:-1]) in alone.stdout
        else:
            said, _, where = full.stdout.strip().rpartition(" triage ")
            assert alone.returncode == 2, alone.stderr
            assert alone.stderr.startswith(f"triage: error: {said}"), (alone.stderr, said)
            assert f"Try 'triage {where}'" in alone.stderr
