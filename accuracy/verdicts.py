#!/usr/bin/env python3
"""Score triage's verdicts on the scenario fixtures against their expected.yaml.

    python accuracy/verdicts.py [--json OUT] [FIXTURE_DIR ...]   # default: every tests/fixtures/*/

For each fixture: the expected status/phase/category/culprits, what triage said, the principle
that decided, and whether the culprit and the phase are right. Also flags the worst outcome: a
wrong culprit stated with confidence >= 0.7. Run it with another checkout's interpreter to compare
versions (the numbers in a closing note come from both, on the same fixtures).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from triage.api import analyze
from triage.report.json_format import to_dict

ROOT = Path(__file__).resolve().parents[1]


def _culprits(cs: list[dict[str, Any]]) -> set[tuple[str, Any]]:
    """(kind, who): a rank, a host, or a link's two ranks (expected.yaml `ranks`, a verdict's rank and peer_rank)."""
    def who(c: dict[str, Any]) -> Any:
        if c["kind"] == "link":
            return tuple(sorted(c["ranks"] if "ranks" in c else (c["rank"], c["peer_rank"])))
        return c.get("rank") if c["kind"] == "rank" else c.get("host")

    return {(c["kind"], who(c)) for c in cs}


def score(fixture: Path) -> dict[str, Any]:
    spec = yaml.safe_load((fixture / "expected.yaml").read_text(encoding="utf-8"))
    expect = spec["expect"]
    logs = fixture / "logs" if (fixture / "logs").exists() else fixture
    try:
        report = to_dict(analyze([logs], world_size=(spec.get("args") or {}).get("world_size")))
    except Exception as exc:
        return {"fixture": fixture.name, "error": f"{type(exc).__name__}: {exc}"}
    v = report["verdict"]
    want = _culprits(expect.get("culprits") or [])
    got = _culprits(v["culprits"])
    ranks_got = {w for k, w in got if k == "rank"}
    if expect["status"] == "diagnosed":
        culprit_ok = v["status"] == "diagnosed" and want <= got and (
            not ranks_got or ranks_got <= {w for k, w in want if k == "rank"} or ("host", None) in want
            or any(k == "host" for k, _ in want))
    else:
        culprit_ok = v["status"] == expect["status"]
    phase_ok = "phase" not in expect or v["phase"] == expect["phase"]
    wrong_confident = (v["status"] == "diagnosed" and not culprit_ok and v["confidence"] >= 0.7)
    return {
        "fixture": fixture.name,
        "expect": f"{expect['status']} {expect.get('phase', '-')} {sorted(map(str, want))}",
        "got": f"{v['status']} {v['phase']} {sorted(map(str, got))} {v['confidence']:.2f}",
        "by": v.get("hypothesis"),
        "culprit_ok": culprit_ok,
        "phase_ok": phase_ok,
        "wrong_confident": wrong_confident,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("fixtures", nargs="*", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    fixtures = args.fixtures or sorted(p.parent for p in (ROOT / "tests" / "fixtures").glob("*/expected.yaml"))
    rows = [score(f) for f in fixtures]
    for r in rows:
        if "error" in r:
            print(f"{r['fixture']:44} ERROR {r['error']}")
            continue
        mark = ("C" if r["culprit_ok"] else "c") + ("P" if r["phase_ok"] else "p") + ("!" if r["wrong_confident"] else " ")
        print(f"{r['fixture']:44} {mark} {r['by'] or '-':20} expect {r['expect']:40} got {r['got']}")
    ok = [r for r in rows if "error" not in r]
    both = sum(r["culprit_ok"] and r["phase_ok"] for r in ok)
    print(f"\n{len(rows)} fixtures: culprit right {sum(r['culprit_ok'] for r in ok)}, phase right "
          f"{sum(r['phase_ok'] for r in ok)}, both {both} ({100 * both / max(1, len(rows)):.0f}%), "
          f"wrong culprit with confidence >= 0.7: {sum(r['wrong_confident'] for r in ok)}, "
          f"errors {len(rows) - len(ok)}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
