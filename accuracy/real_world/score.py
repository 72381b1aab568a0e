#!/usr/bin/env python3
"""Score triage on the real-world corpus (accuracy/real_world/cases/*/): input as a user hands it over,
truth.yaml with what is known.

    python accuracy/real_world/score.py [--jobs N] [--json OUT] [--triage CMD] [--set heldout] [CASE_DIR ...]

--set heldout scores the held-out set (heldout/cases/, made after the corpus's misses were fixed;
see heldout/runs.py) instead of the corpus in cases/.

Each case runs `triage analyze --format json` on its input/ folder (crash-loop cases are expanded
first into a temporary copy, from the line and count their truth.yaml records).  Judged:

  healthy   a failed job reported NO FAILURE (the worst miss after a confident wrong culprit)
  culprit   knowable cut: the truth rank named (and no other rank);
            cut that cannot name it (truth.knowable false): no culprit named with confidence >= 0.5,
            or exactly the true culprit; job that did not fail: no culprit named with confidence >= 0.5
  phase     knowable cut: the verdict's phase equals the truth's (no phase in truth: any)
  wrong!    a culprit other than the truth named with confidence >= 0.7

Totals: failed jobs reported healthy, wrong culprits at >= 0.7, and culprit-and-phase right out of
the knowable cases (issue 18's done-when counts those).  Deterministic: cases are scored in name
order, each in its own process, and the table is printed in name order.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CASES = HERE / "cases"

TS = [  # timestamps a crash loop advances: glog-style, python logging, ISO
    (re.compile(r"(?P<p>[IWEF]\d{4} )(?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)\.(?P<f>\d{6})"), 6),
    (re.compile(r"(?P<p>\d{4}-\d\d-\d\d[ T])(?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d),(?P<f>\d{3})"), 3),
]


def advance(line: str, ms: int) -> str:
    for rx, digits in TS:
        m = rx.search(line)
        if not m:
            continue
        us = ((int(m["h"]) * 60 + int(m["m"])) * 60 + int(m["s"])) * 1_000_000 + int(m["f"]) * 10 ** (6 - digits)
        us = (us + ms * 1000) % (86400 * 1_000_000)
        h, rest = divmod(us, 3600 * 1_000_000)
        mi, rest = divmod(rest, 60 * 1_000_000)
        s, f = divmod(rest, 1_000_000)
        new = f"{m['p']}{h:02d}:{mi:02d}:{s:02d}{'.' if digits == 6 else ','}{f // 10 ** (6 - digits):0{digits}d}"
        return line[:m.start()] + new + line[m.end():]
    return line


def expand(case: Path, gen: dict, tmp: Path) -> Path:
    """The crash loop: the base file, then its recorded line repeated with advancing timestamps."""
    inp = tmp / "input"
    shutil.copytree(case / "input", inp)
    with (inp / gen["file"]).open("a", encoding="utf-8") as out:
        for i in range(1, gen["repeat"] + 1):
            out.write(advance(gen["line"], i * gen["step_ms"]) + "\n")
    return inp


def analyze(case: Path, triage: list[str]) -> dict[str, Any]:
    spec = yaml.safe_load((case / "truth.yaml").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="rw-") as tmp:
        inp = expand(case, spec["generate"], Path(tmp)) if spec.get("generate") else case / "input"
        t0 = time.monotonic()
        try:
            p = subprocess.run([*triage, "analyze", "--format", "json", "-j", "1", str(inp)],
                               capture_output=True, text=True, timeout=300)
            out, err = p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            out, err = "", "timed out after 300 s"
        secs = time.monotonic() - t0
    try:
        report = json.loads(out)
    except json.JSONDecodeError:
        return {"case": case.name, "spec": spec, "error": (err.strip().splitlines() or ["no output"])[-1],
                "seconds": secs}
    return {"case": case.name, "spec": spec, "verdict": report["verdict"], "seconds": secs}


def judge(r: dict[str, Any]) -> dict[str, Any]:
    t = r["spec"]["truth"]
    if "error" in r:
        return {**r, "culprit_ok": False, "phase_ok": False, "healthy": False, "wrong": False, "got": "ERROR"}
    v = r["verdict"]
    ranks = {c.get("rank") for c in v["culprits"] if c.get("rank") is not None}
    hosts = {c.get("host") for c in v["culprits"] if c["kind"] == "host"}
    named = v["status"] == "diagnosed" and bool(v["culprits"]) and v["confidence"] >= 0.5
    want = t["culprit"]["rank"] if t.get("culprit") else None
    exact = named and want is not None and ranks == {want}
    if not t.get("failure_visible", True):
        culprit_ok = not named or exact
    elif not t["failed"] or want is None:
        culprit_ok = not named
    elif t["knowable"]:
        culprit_ok = exact
    else:
        culprit_ok = not named or exact
    # A cut that says nothing of where the job stood (truth.phase_knowable false): "unknown" is right too.
    phase_ok = (not t.get("phase")) or v["phase"] == t["phase"] or (
        t.get("phase_knowable") is False and v["phase"] == "unknown")
    wrong = v["status"] == "diagnosed" and v["confidence"] >= 0.7 and bool(v["culprits"]) and not exact
    who = ",".join(map(str, sorted(ranks))) + ("" if not hosts else " host " + ",".join(map(str, hosts)))
    got = f"{v['status'][:5]} {v['phase']} [{who}] {v['confidence']:.2f} {v.get('hypothesis') or '-'}"
    return {**r, "culprit_ok": culprit_ok, "phase_ok": phase_ok, "wrong": wrong,
            "healthy": t["failed"] and t.get("failure_visible", True) and v["status"] == "no_failure", "got": got}


def truth_str(t: dict[str, Any]) -> str:
    if not t["failed"]:
        return "no failure"
    if not t.get("failure_visible", True):
        return "failure not shown by cut"
    who = f"r{t['culprit']['rank']}" if t.get("culprit") else "none"
    return f"{who} {t.get('phase') or '-'}" + ("" if t["knowable"] else " (inconcl. ok)")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*", type=Path)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--triage", default=str(ROOT / ".venv" / "bin" / "triage"))
    ap.add_argument("--set", default="", help="another set of cases: SET/cases/ (e.g. heldout); default cases/")
    args = ap.parse_args(argv)
    where = HERE / args.set / "cases" if args.set else CASES
    cases = sorted(args.cases or [p.parent for p in where.glob("*/truth.yaml")])
    triage = shlex.split(args.triage)
    with ThreadPoolExecutor(args.jobs) as ex:
        rows = [judge(r) for r in ex.map(lambda c: analyze(c, triage), cases)]
    head = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                          text=True).stdout.strip()
    print(f"triage: {args.triage} (checkout {head or '?'})")
    print(f"{'case':52} {'truth':30} {'verdict':50} C P")
    for r in rows:
        t = r["spec"]["truth"]
        mark = ("C" if r["culprit_ok"] else "c") + " " + ("P" if r["phase_ok"] else "p")
        flag = " HEALTHY!" if r["healthy"] else (" WRONG>=0.7!" if r["wrong"] else "")
        got = r["got"] if "error" not in r else f"ERROR {r['error'][:60]}"
        print(f"{r['case']:52} {truth_str(t):30} {got:50} {mark}{flag}")
    known = [r for r in rows if r["spec"]["truth"]["failed"] and r["spec"]["truth"]["knowable"]]
    unknown = [r for r in rows if r["spec"]["truth"]["failed"] and not r["spec"]["truth"]["knowable"]]
    unseen = [r for r in unknown if not r["spec"]["truth"].get("failure_visible", True)]
    healthy_jobs = [r for r in rows if not r["spec"]["truth"]["failed"]]
    both = sum(r["culprit_ok"] and r["phase_ok"] for r in known)
    print(f"\n{len(rows)} cases ({sum(r['seconds'] for r in rows):.0f} s of analysis): "
          f"{len(known)} with a knowable culprit, {len(unknown)} where the cut cannot name it, "
          f"{len(healthy_jobs)} jobs that did not fail; {len(unseen)} cuts of failed jobs show no failure at all")
    print(f"  failed jobs reported healthy:            {sum(r['healthy'] for r in rows)}")
    print(f"  wrong culprit stated at confidence >=0.7: {sum(r['wrong'] for r in rows)}")
    print(f"  knowable: culprit right {sum(r['culprit_ok'] for r in known)}, phase right "
          f"{sum(r['phase_ok'] for r in known)}, both {both} of {len(known)} "
          f"({100 * both / max(1, len(known)):.0f}%)")
    print(f"  cannot be known from the cut: inconclusive (or the true culprit) "
          f"{sum(r['culprit_ok'] for r in unknown)} of {len(unknown)}")
    print(f"  jobs that did not fail: no culprit named {sum(r['culprit_ok'] for r in healthy_jobs)} "
          f"of {len(healthy_jobs)}")
    print(f"  errors: {sum('error' in r for r in rows)}")
    print("\nby source / cut: cases, knowable both-right/knowable, cannot-know right/cannot-know")
    groups: dict[str, list] = {}
    for r in rows:
        src = r["spec"].get("source", "")
        fam = ("ras-guide" if src.startswith("NCCL RAS guide") else "ras-captured" if "RAS output" in src
               else "gpu-nccl" if src.startswith("real run on an H100") else "gloo-run")
        kind = (r["spec"].get("cut") or {}).get("kind") or r["case"].split("--")[-1]
        kind = re.sub(r"\d+q?$", "", kind)
        for key in (f"source {fam}", f"cut {kind}"):
            groups.setdefault(key, []).append(r)
    for key in sorted(groups):
        g = groups[key]
        k = [r for r in g if r["spec"]["truth"]["failed"] and r["spec"]["truth"]["knowable"]]
        u = [r for r in g if r not in k]
        print(f"  {key:28} {len(g):4}   {sum(r['culprit_ok'] and r['phase_ok'] for r in k):3}/{len(k):<3}"
              f"   {sum(r['culprit_ok'] for r in u):3}/{len(u):<3}")
    if args.json:
        args.json.write_text(json.dumps([{k: v for k, v in r.items() if k != "spec"} | {"truth": r["spec"]["truth"]}
                                         for r in rows], indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
