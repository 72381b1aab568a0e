#!/usr/bin/env python3
"""PyTorch's own `fr_trace` against triage, on the flight-recorder dumps of tests/fixtures/fr-*.

Only dumps this repository made itself are given to fr_trace (tests/generators/make_fr.py runs real
torchrun + gloo jobs with injected faults): fr_trace loads them with `pickle.load`, which runs any
code a dump carries. Each `fr-*-dumps*` bundle (dumps alone; dumps without the culprit's) is read by

- `python -m torch.distributed.flight_recorder.fr_trace -p comm_lib_trace_rank_ <dir>` from the
  installed torch (with `--allow-incomplete-ranks` where a dump is missing, `-j` for the JSON form),
  whose output is searched for the ranks it names;
- `triage.api.analyze` on the same folder (with the bundle's `args`).

A culprit is right when the one rank named is the injected one (`truth.rank` of expected.yaml).
Prints a markdown table (docs/flight-recorder.md holds its output). Usage, from the repository root:

    .venv/bin/python accuracy/fr_trace_compare.py > /tmp/fr_trace_table.md
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
TIMEOUT_S = 300
_NOISE = ("NumPy", "_conversion_method_template", "tabulate is not installed")
_RANKS = re.compile(r"\branks?\s*[:=]?\s*\[?([\d, ]+)\]?", re.IGNORECASE)


def fr_trace(folder: Path, incomplete: bool, json_form: bool) -> tuple[str, set[int]]:
    """What fr_trace said: a one-line outcome, and the ranks its output names as missing or odd."""
    cmd = [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", "-p", "comm_lib_trace_rank_"]
    cmd += ["--allow-incomplete-ranks"] if incomplete else []
    cmd += ["-j"] if json_form else []
    try:
        run = subprocess.run([*cmd, str(folder)], capture_output=True, text=True, timeout=TIMEOUT_S,
                             cwd=ROOT)
    except subprocess.TimeoutExpired:
        return f"no answer in {TIMEOUT_S} s", set()
    lines = [ln for ln in (run.stdout + run.stderr).splitlines() if ln.strip() and not any(n in ln for n in _NOISE)]
    if run.returncode != 0:
        last = next((ln for ln in reversed(lines) if re.match(r"\w+(Error|Exception)", ln.strip())), lines[-1] if lines
                    else "")
        return f"exit {run.returncode}: {last.strip()[:90]}", set()
    named: set[int] = set()
    for line in lines:
        if "missing" in line.lower() or "mismatch" in line.lower() or "culprit" in line.lower():
            for m in _RANKS.finditer(line):
                named |= {int(x) for x in re.findall(r"\d+", m.group(1))}
    outcome = f"{len(lines)} lines" + (f", names {sorted(named)}" if named else ", names no rank")
    return outcome, named


def triage(folder: Path, args: dict[str, object]) -> tuple[str, set[int]]:
    from triage.api import analyze

    world = args.get("world_size")
    verdict = analyze([folder], world_size=world if isinstance(world, int) else None, jobs=1).verdict
    ranks = {c.rank for c in verdict.culprits if c.rank is not None}
    shown = (f"{verdict.status.value}, {verdict.phase.value}, {verdict.category.value}, "
             f"{verdict.hypothesis or '-'} {verdict.confidence:.2f}")
    return (shown + (f", rank {', '.join(map(str, sorted(ranks)))}" if ranks else "")), ranks


def right(named: set[int], truth: int) -> str:
    if named == {truth}:
        return "yes"
    return "partly" if truth in named else "no"


def main() -> int:
    rows = ["| bundle | truth | fr_trace | right | triage | right |", "|---|---|---|---|---|---|"]
    score = {"fr_trace": 0, "triage": 0}
    bundles = sorted(p for p in FIXTURES.glob("fr-*-dumps*") if p.is_dir())
    for bundle in bundles:
        spec = yaml.safe_load((bundle / "expected.yaml").read_text(encoding="utf-8"))
        truth = spec["truth"]
        logs = bundle / "logs"
        json_form = any(p.suffix == ".json" for p in logs.iterdir())
        incomplete = len(truth.get("dumps_of", [])) < 4
        said, named = fr_trace(logs, incomplete, json_form)
        verdict, ranks = triage(logs, spec.get("args") or {})
        a, b = right(named, truth["rank"]), right(ranks, truth["rank"])
        score["fr_trace"] += a == "yes"
        score["triage"] += b == "yes"
        flags = " (`--allow-incomplete-ranks`)" if incomplete else ""
        rows.append(f"| {bundle.name} | {truth['fault']}, rank {truth['rank']} | {said}{flags} | {a} | {verdict} | {b} |")
    rows.append(f"| **culprit right** | | | **{score['fr_trace']} of {len(bundles)}** | | "
                f"**{score['triage']} of {len(bundles)}** |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
