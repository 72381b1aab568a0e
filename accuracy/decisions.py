#!/usr/bin/env python3
"""The decision (triage.decision, the built-in policy) on the real-world corpus and on the hardware
bundles: what each kind of fault gets, and whether it is the right thing to do.

    python accuracy/decisions.py [--policy FILE] [--json OUT]

Part 1, accuracy/real_world/cases/ and heldout/cases/ (every cut of real runs; see real_world/README.md):
a table of (injected fault, verdict category) -> action, with counts. Checked, where the cut shows the
failure and can name its culprit (truth.yaml: failure_visible, knowable):
  code fault     (exception, assert, abort, exit code, segfault, MemoryError/OOM, collective or
                  configuration mismatch)       -> stop: rerunning fails the same way
  killed         (SIGKILL from outside)        -> requeue, no node excluded
  hang           (hang, sleep, straggler)      -> requeue with the flight-recorder settings
  no failure                                   -> none
and in every case: no node excluded (the corpus holds no hardware fault: every exclusion would drain
a healthy node). A cut that cannot name the culprit may get investigate.
Part 2, the bundles in tests/fixtures/ whose truth is a device or network fault (the corpus has none):
requeue-excluding, and the nodes excluded are the culprits' (a rank's node, a named host, both ends
of a link); but stop where the device error is one a kernel causes (illegal memory access,
device-side assert: rerunning elsewhere drains healthy nodes one by one), and investigate where the
verdict is inconclusive. Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "real_world"))

from score import expand  # noqa: E402  (the crash-loop expansion the score uses)

from triage.api import analyze  # noqa: E402
from triage.decision import default_policy, load_policy  # noqa: E402
from triage.model import Report, Status  # noqa: E402

SETS = {"corpus": HERE / "real_world" / "cases", "heldout": HERE / "real_world" / "heldout" / "cases"}
CODE = {"exception", "assert", "abort", "exit", "segfault", "memoryerror", "oom", "op", "shape", "wrong-port",
        "crash"}
HANG = {"hang", "sleep", "straggler", "late"}
KILLED = {"sigkill", "kill", "killed"}
# Runs of the corpus whose truth.yaml records no injected fault (GPU runs, RAS captures): what was done.
RUN_FAULT = {"gpu-crash-r2": "crash", "gpu-kill-r2": "kill", "gpu-repro-kill-r1": "kill",
             "gpu-hang-r2": "hang", "gpu-ras-hang-r2": "hang", "gpu-repro-hang-r2": "hang"}
EXPECT = {"code": "stop", "killed": "requeue", "hang": "requeue", "none": "none"}
# CUDA errors that a kernel or its inputs cause far more often than the GPU: a device_error verdict on
# one of these is a code fault (stop), not a node to drain (the policy's device-fault-in-code row).
KERNEL_CUDA_ERRORS = re.compile("illegal memory access|device-side assert|misaligned address|illegal instruction")


def fault_of(case: str, spec: dict[str, Any]) -> str:
    injected = (spec.get("injected") or {}).get("fault")
    run = case.split("--")[0]
    fault = injected or RUN_FAULT.get(run) or ("kill" if "killed" in case or ("-dead" in case and "ras-captured" in case)
                                               else "straggler" if "straggler" in case
                                               else "hang" if "hang" in case else None)
    if fault is None:
        category = (spec.get("truth") or {}).get("category")
        fault = {"collective_mismatch": "op", "hung_process": "hang", "crashed_process": "crash"}.get(category or "",
                                                                                                     "none")
    return fault


def kind_of(fault: str) -> str:
    return ("code" if fault in CODE else "killed" if fault in KILLED else "hang" if fault in HANG
            else "none" if fault in ("none", "clean") else "other")


def corpus(policy_file: Path | None) -> tuple[list[dict[str, Any]], list[str]]:
    policy = load_policy(policy_file) if policy_file else None
    rows, misses = [], []
    for set_name, folder in SETS.items():
        for case in sorted(p for p in folder.iterdir() if (p / "truth.yaml").exists()):
            spec = yaml.safe_load((case / "truth.yaml").read_text(encoding="utf-8"))
            truth = spec["truth"]
            with tempfile.TemporaryDirectory(prefix="rw-") as tmp:
                inputs = expand(case, spec["generate"], Path(tmp)) if spec.get("generate") else case / "input"
                report = analyze([inputs], jobs=1, policy=policy)
            decision = report.decision
            assert decision is not None
            fault = fault_of(case.name, spec)
            kind = kind_of(fault) if truth.get("failed") else "none"
            visible = not truth.get("failed") or (truth.get("failure_visible", True) and truth.get("knowable", True))
            row = {"set": set_name, "case": case.name, "fault": fault, "kind": kind,
                   "category": report.verdict.category.value, "status": report.verdict.status.value,
                   "action": decision.action, "policy_row": decision.rule, "hosts": decision.hosts,
                   "checked": visible}
            rows.append(row)
            # Below the confidence bar the policy hands the job to a person, whatever the truth.
            expected = "investigate" if row["status"] == "inconclusive" else EXPECT.get(kind)
            row["expected"] = expected
            if decision.hosts or decision.exclude:
                misses.append(f"{case.name}: {kind} fault, but {decision.action} excludes {decision.hosts}")
            elif visible and expected and decision.action != expected:
                misses.append(f"{case.name}: {kind} fault ({fault}, verdict {row['status']} {row['category']}): "
                              f"{decision.action} by {decision.rule}, expected {expected}")
            elif visible and kind == "hang" and decision.action == "requeue" and not decision.env:
                misses.append(f"{case.name}: a requeued hang without the flight-recorder settings")
    return rows, misses


def hardware(policy_file: Path | None) -> tuple[list[dict[str, Any]], list[str]]:
    policy = load_policy(policy_file) if policy_file else None
    rows, misses = [], []
    for bundle in sorted((ROOT / "tests" / "fixtures").iterdir()):
        expected_file = bundle / "expected.yaml"
        if not expected_file.exists():
            continue
        expected = yaml.safe_load(expected_file.read_text(encoding="utf-8"))
        expect = expected.get("expect") or {}
        if expect.get("category") not in ("device_error", "network_fault"):
            continue
        inputs = [str(p) for p in sorted(bundle.iterdir()) if p.name not in ("expected.yaml", "README.md")]
        report = analyze(inputs, world_size=(expected.get("args") or {}).get("world_size"), jobs=1, policy=policy)
        decision = report.decision
        assert decision is not None
        want = _culprit_nodes(expect.get("culprits") or [], report)
        row = {"case": bundle.name, "category": expect["category"], "verdict": report.verdict.category.value,
               "status": report.verdict.status.value, "action": decision.action, "policy_row": decision.rule,
               "hosts": decision.hosts, "want": sorted(want), "ranks": decision.ranks}
        texts = " ".join(ev.text for c in report.verdict.culprits for ev in c.evidence)
        row["expected"] = ("investigate" if report.verdict.status is not Status.DIAGNOSED
                           else "stop" if KERNEL_CUDA_ERRORS.search(texts) else "requeue-excluding")
        rows.append(row)
        if decision.action != row["expected"]:
            misses.append(f"{bundle.name}: a {expect['category']} bundle gets {decision.action} by {decision.rule} "
                          f"(verdict {row['status']} {row['verdict']}), expected {row['expected']}")
        elif decision.action == "requeue-excluding" and set(decision.hosts) != want:
            misses.append(f"{bundle.name}: excludes {decision.hosts}, the culprits' nodes are {sorted(want)}")
    return rows, misses


def _culprit_nodes(culprits: list[dict[str, Any]], report: Report) -> set[str]:
    """The nodes of the expected culprits: a host as named, a rank's (or a link's ranks') node in the job."""
    nodes: set[str] = set()
    for c in culprits:
        ranks = c.get("ranks") or ([c["rank"]] if c.get("rank") is not None else [])
        if c.get("host"):
            nodes.add(c["host"])
        for r in ranks:
            state = report.ranks.get(r)
            if state is not None and state.host:
                nodes.add(state.host)
    return nodes


def table(rows: list[dict[str, Any]]) -> list[str]:
    counts = Counter((r["kind"], r["fault"], r["category"], r["action"]) for r in rows)
    out = [f"{'fault kind':<10} {'injected':<12} {'verdict category':<20} {'action':<18} cases",
           "-" * 70]
    out += [f"{k:<10} {f:<12} {c:<20} {a:<18} {n}" for (k, f, c, a), n in sorted(counts.items())]
    by_action = Counter(r["action"] for r in rows)
    out += ["-" * 70, "actions: " + ", ".join(f"{a} {n}" for a, n in sorted(by_action.items()))]
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--policy", type=Path, help="a policy file in place of the built-in one")
    ap.add_argument("--json", type=Path, help="also write every case's decision here")
    args = ap.parse_args(argv)
    print(f"policy: {args.policy or default_policy().source}")
    rows, misses = corpus(args.policy)
    print(f"\n== real-world corpus and held-out set: {len(rows)} cases "
          f"({sum(r['checked'] for r in rows)} whose cut shows the failure and can name its culprit)")
    print("\n".join(table(rows)))
    for kind, action in EXPECT.items():
        checked = [r for r in rows if r["checked"] and r["kind"] == kind and r["status"] != "inconclusive"]
        right = sum(r["action"] == action for r in checked)
        print(f"{kind:<7} -> {action:<11} {right} of {len(checked)}")
    unsure = [r for r in rows if r["checked"] and r["status"] == "inconclusive"]
    print(f"{'inconclusive':<7} -> investigate {sum(r['action'] == 'investigate' for r in unsure)} of {len(unsure)}")
    print(f"nodes excluded in the corpus (none is a hardware fault): {sum(bool(r['hosts']) for r in rows)}")
    hw_rows, hw_misses = hardware(args.policy)
    print(f"\n== device and network fault bundles (tests/fixtures): {len(hw_rows)}")
    for r in hw_rows:
        print(f"{r['case']:<40} {r['category']:<14} -> {r['action']:<18} {','.join(r['hosts']) or '-':<28} "
              f"culprits' nodes {','.join(r['want']) or '-'}")
    excluding = [r for r in hw_rows if r["expected"] == "requeue-excluding"]
    right = sum(r["action"] == "requeue-excluding" and sorted(r["hosts"]) == r["want"] for r in excluding)
    print(f"requeue-excluding exactly the culprits' nodes: {right} of {len(excluding)}; "
          f"kernel-caused CUDA errors stopped: {sum(r['action'] == 'stop' for r in hw_rows if r['expected'] == 'stop')} "
          f"of {sum(r['expected'] == 'stop' for r in hw_rows)}; inconclusive verdicts investigated: "
          f"{sum(r['action'] == 'investigate' for r in hw_rows if r['expected'] == 'investigate')} of "
          f"{sum(r['expected'] == 'investigate' for r in hw_rows)}")
    everything = misses + hw_misses
    print("\n" + ("misses:\n  " + "\n  ".join(everything) if everything else "no misses"))
    if args.json:
        args.json.write_text(json.dumps({"corpus": rows, "hardware": hw_rows, "misses": everything}, indent=1) + "\n",
                             encoding="utf-8")
    return 1 if everything else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
