#!/usr/bin/env python3
"""Calibration: how often the culprit a verdict names is right, by the confidence it states.

    python accuracy/calibration.py [--jobs N] [--md OUT.md] [--json OUT.json]
                                   [--real-world-json FILE] [--heldout-json FILE]

Over every fixture bundle (tests/fixtures/*/, examples/*/) and the real-world corpus with its
held-out set (accuracy/real_world/), each verdict that names a culprit (any status) is put in a band
of its confidence and judged against the truth:

- a fixture's truth is what was injected (`truth.rank`, a generator's `culprit_ranks`), or, where the
  bundle records none, its `expect`; a job that did not fail has no culprit;
- a real-world case's truth is `truth.culprit` of its truth.yaml (none where the job did not fail or
  the culprit is not known);
- right: the verdict's ranks (both ends of a link) are exactly the true ranks (a verdict naming only
  hosts: the host the expectation names). Any culprit named where the truth has none is wrong.

Verdicts that name no culprit are counted apart (a miss where the input shows the culprit: a fixture
expected diagnosed, a knowable real-world cut). The table says,
for each band, how many verdicts named a culprit and how many of those were right; what the
thresholds in diagnose/verdict.py mean for it (below 0.5: inconclusive; from 0.75: stated as sure) is
read off the rows below and above them. --real-world-json / --heldout-json reuse the JSON that
`real_world/score.py --json` wrote on the same checkout instead of running the cases again.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(HERE / "real_world")]

from score import analyze as run_case  # noqa: E402 (accuracy/real_world/score.py, by path)
from verdicts import _culprits  # noqa: E402 (accuracy/verdicts.py, by path)

BANDS = [(0.0, 0.5), (0.5, 0.6), (0.6, 0.7), (0.7, 0.75), (0.75, 0.8), (0.8, 0.85), (0.85, 0.9), (0.9, 0.95),
         (0.95, 1.0001)]
INCONCLUSIVE_BELOW, SURE_FROM = 0.5, 0.75  # diagnose/verdict.py's thresholds, as this table judges them


def _ranks(v: dict[str, Any]) -> set[int]:
    """The ranks a verdict names: its rank culprits and both ends of its link culprits."""
    ends = [c.get(k) for c in v["culprits"] if c["kind"] == "link" for k in ("rank", "peer_rank")]
    return {c["rank"] for c in v["culprits"] if c["kind"] == "rank" and c.get("rank") is not None} | {
        r for r in ends if r is not None}


def fixture_row(bundle: Path) -> dict[str, Any]:
    from triage.api import analyze
    from triage.report.json_format import to_dict

    spec = yaml.safe_load((bundle / "expected.yaml").read_text(encoding="utf-8"))
    expect, truth = spec["expect"], spec.get("truth") or {}
    logs = bundle / "logs" if (bundle / "logs").exists() else bundle
    try:
        v = to_dict(analyze([logs], world_size=(spec.get("args") or {}).get("world_size")))["verdict"]
    except Exception as exc:  # a crash is a row of its own, never a band
        return {"set": "fixtures", "case": bundle.name, "error": f"{type(exc).__name__}: {exc}"}
    if "culprit_ranks" in truth:
        want: set[int] | None = set(truth["culprit_ranks"])
    elif "rank" in truth or truth.get("fault") == "none":
        want = set() if truth.get("rank") is None else {truth["rank"]}
    elif expect["status"] != "diagnosed":
        want = set()
    else:
        want = None  # judged by the expectation (hosts, links)
    named = bool(v["culprits"])
    if want is not None:
        right = named and bool(want) and _ranks(v) == want
    else:
        exp, got = _culprits(expect.get("culprits") or []), _culprits(v["culprits"])
        exp_ranks = {w for k, w in exp if k == "rank"} | {r for k, w in exp if k == "link" for r in w}
        right = named and exp <= got and (not _ranks(v) or _ranks(v) <= exp_ranks or any(k == "host" for k, _ in exp))
    return {"set": "fixtures", "case": bundle.name, "confidence": v["confidence"], "status": v["status"],
            "named": named, "right": right, "knowable": expect["status"] == "diagnosed"}


def real_world_row(set_name: str, r: dict[str, Any]) -> dict[str, Any]:
    truth = r.get("truth") or r.get("spec", {}).get("truth") or {}
    if "error" in r:
        return {"set": set_name, "case": r["case"], "error": r["error"]}
    v = r["verdict"]
    want = {truth["culprit"]["rank"]} if truth.get("failed") and truth.get("culprit") else set()
    named = bool(v["culprits"])
    return {"set": set_name, "case": r["case"], "confidence": v["confidence"], "status": v["status"],
            "named": named, "right": named and bool(want) and _ranks(v) == want,
            "knowable": bool(want) and truth.get("knowable", True)}


def real_world_rows(set_name: str, reuse: Path | None, jobs: int) -> list[dict[str, Any]]:
    if reuse is not None:
        return [real_world_row(set_name, r) for r in json.loads(reuse.read_text(encoding="utf-8"))]
    where = HERE / "real_world" / ("heldout/cases" if set_name == "heldout" else "cases")
    triage = shlex.split(str(ROOT / ".venv" / "bin" / "triage"))
    cases = sorted(p.parent for p in where.glob("*/truth.yaml"))
    with ThreadPoolExecutor(jobs) as ex:
        return [real_world_row(set_name, r) for r in ex.map(lambda c: run_case(c, triage), cases)]


def wilson_low(right: int, n: int, z: float = 1.96) -> float:
    """The lower end of the 95% Wilson interval of right/n (0 for no verdicts)."""
    if n == 0:
        return 0.0
    p = right / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n)


def table(rows: list[dict[str, Any]]) -> list[str]:
    sets = ["fixtures", "real-world", "heldout"]
    named = [r for r in rows if "error" not in r and r["named"]]
    out = ["| confidence | " + " | ".join(f"{s}: right/named" for s in sets) + " | all: right/named | % right | "
           "95% low |", "|---|" + "---|" * (len(sets) + 3)]
    for lo, hi in BANDS:
        band = [r for r in named if lo <= r["confidence"] < hi]
        cells = []
        for s in sets:
            b = [r for r in band if r["set"] == s]
            cells.append(f"{sum(r['right'] for r in b)}/{len(b)}")
        right = sum(r["right"] for r in band)
        pct = f"{100 * right / len(band):.0f}%" if band else "-"
        label = f"[{lo:.2f}, {min(hi, 1.0):.2f}{']' if hi > 1 else ')'}"
        out.append(f"| {label} | " + " | ".join(cells) + f" | {right}/{len(band)} | {pct} | "
                   f"{100 * wilson_low(right, len(band)):.0f}% |")
    return out


def summary(rows: list[dict[str, Any]]) -> list[str]:
    ok = [r for r in rows if "error" not in r]
    named = [r for r in ok if r["named"]]
    below = [r for r in named if r["confidence"] < INCONCLUSIVE_BELOW]
    middle = [r for r in named if INCONCLUSIVE_BELOW <= r["confidence"] < SURE_FROM]
    sure = [r for r in named if r["confidence"] >= SURE_FROM]

    def rate(rs: list[dict[str, Any]]) -> str:
        right = sum(r["right"] for r in rs)
        return f"{right}/{len(rs)} right ({100 * right / max(1, len(rs)):.0f}%, 95% low {100 * wilson_low(right, len(rs)):.0f}%)"

    missed = [r for r in ok if not r["named"] and r["knowable"]]
    wrong_sure = sorted(f"{r['set']}:{r['case']} ({r['confidence']:.2f})" for r in sure if not r["right"])
    lines = [f"- verdicts: {len(ok)} ({sum(r['set'] == s for r in ok for s in ['fixtures'])} fixtures, "
             f"{sum(r['set'] == 'real-world' for r in ok)} real-world, {sum(r['set'] == 'heldout' for r in ok)} "
             f"held-out); errors (no report): {len(rows) - len(ok)}"
             + (f" ({', '.join(r['set'] + ':' + r['case'] for r in rows if 'error' in r)})" if len(rows) > len(ok) else ""),
             f"- named a culprit below {INCONCLUSIVE_BELOW} (inconclusive): {rate(below)}",
             f"- named at [{INCONCLUSIVE_BELOW}, {SURE_FROM}): {rate(middle)}",
             f"- named at {SURE_FROM} or more (sure): {rate(sure)}",
             f"- named no culprit where the input shows one (a fixture expected diagnosed, a knowable real-world "
             f"cut): {len(missed)}" + (f" ({', '.join(r['set'] + ':' + r['case'] for r in missed)})" if missed else ""),
             f"- wrong at {SURE_FROM} or more: " + (", ".join(wrong_sure) if wrong_sure else "none")]
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--md", type=Path, help="write the table and summary here (markdown)")
    ap.add_argument("--json", type=Path, help="write every row here")
    ap.add_argument("--real-world-json", type=Path)
    ap.add_argument("--heldout-json", type=Path)
    args = ap.parse_args(argv)
    bundles = sorted([p.parent for p in (ROOT / "tests" / "fixtures").glob("*/expected.yaml")]
                     + [p.parent for p in (ROOT / "examples").glob("*/expected.yaml")])
    rows = [fixture_row(b) for b in bundles]
    rows += real_world_rows("real-world", args.real_world_json, args.jobs)
    rows += real_world_rows("heldout", args.heldout_json, args.jobs)
    head = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                          text=True).stdout.strip()
    text = [f"checkout {head or '?'}", "", *table(rows), "", *summary(rows)]
    print("\n".join(text))
    if args.md:
        args.md.write_text("\n".join(text) + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
