"""Regenerate the NCCL RAS scenario bundles with generators/rasgen (and generators/jobgen for logs).

Each bundle is ``tests/fixtures/ras-<name>/logs/…`` (RAS snapshots under ``logs/ras/``, named as
``triage ras collect`` names them: ``ras-<UTC time STATUS was sent>Z.txt|.json``; for some, the
per-rank PyTorch/NCCL logs of the same job, written by jobgen with the same hosts, pids and GPUs)
plus ``expected.yaml`` (tests/schemas/expected.schema.json): the story (``description``), the
verdict a report must give (``expect``, derived from the truth), the generator inputs (``spec``)
and the truth (``truth``: status, phase, category, culprit global ranks, the processes RAS names,
whether RAS and the logs disagree, the formats in the bundle, and the facts the truth test checks
against the files).  The bundles and their builders live in generators/ras_bundles.  From ``tests/``
(or with ``PYTHONPATH=tests`` from the repository root):

    python -m generators.make_ras            # rewrite every bundle
    python -m generators.make_ras NAME ...   # only these
    python -m generators.make_ras --check    # regenerate in a temp dir, compare
    python -m generators.make_ras --list     # names, sizes, truths
"""

from __future__ import annotations

import filecmp
import tempfile
from pathlib import Path
from typing import Any

import yaml

from generators import bundle_cli
from generators.ras_bundles import BY_NAME, SCENARIOS, Built, Scenario

REPO = Path(__file__).resolve().parents[2]

FIXTURES = REPO / "tests" / "fixtures"
MADE_BY = "tests/generators/make_ras.py"

__all__ = ["BY_NAME", "FIXTURES", "MADE_BY", "SCENARIOS", "Built", "Scenario", "differences", "main", "write"]


# --------------------------------------------------------------------------------------------
# Writing, checking


def expect_of(truth: dict[str, Any]) -> dict[str, Any]:
    """The verdict a report must give: the truth's status, phase (when known), category and culprits;
    where RAS and the logs disagree, the verdict must say so."""
    out: dict[str, Any] = {"status": truth["status"]}
    if truth["phase"] != "unknown":
        out["phase"] = truth["phase"]
    out["category"] = truth["category"]
    out["culprits"] = [{"kind": "rank", "rank": r} for r in truth["culprit_ranks"]]
    out["culprits_exact"] = True
    if truth["disagreement"]:
        out["says"] = {"reasoning_or_missing": ["RAS", "disagree"]}
    return out


def expected_yaml(s: Scenario, built: Built) -> str:
    data = {"description": s.description, "made_by": MADE_BY, "expect": expect_of(built.truth), "spec": s.spec,
            "truth": built.truth}
    return yaml.safe_dump(data, sort_keys=False, width=110, allow_unicode=True)


def bundle_texts(s: Scenario) -> dict[str, str]:
    """Relative path (under the bundle folder) -> content, built in memory."""
    built = s.build(**s.spec)
    out = {f"logs/{k}": v for k, v in built.files.items()}
    out["expected.yaml"] = expected_yaml(s, built)
    return out


def write(s: Scenario, root: Path = FIXTURES) -> int:
    return bundle_cli.write_texts(root / s.name, bundle_texts(s))


def differences(s: Scenario) -> list[str]:
    """What differs between the committed bundle and a fresh build written to a temp dir."""
    have = FIXTURES / s.name
    if not have.is_dir():
        return ["not generated yet"]
    with tempfile.TemporaryDirectory() as tmp:
        write(s, Path(tmp))
        fresh = Path(tmp) / s.name
        a = {p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()}
        b = {p.relative_to(have).as_posix() for p in have.rglob("*") if p.is_file()}
        diffs = [f"missing {x}" for x in sorted(a - b)] + [f"extra {x}" for x in sorted(b - a)]
        diffs += [f"differs {x}" for x in sorted(a & b)
                  if not filecmp.cmp(fresh / x, have / x, shallow=False)]
    return diffs


def _describe(s: Scenario) -> str:
    d = FIXTURES / s.name
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) if d.exists() else 0
    t = yaml.safe_load((d / "expected.yaml").read_text(encoding="utf-8"))["truth"] if d.exists() else {}
    return (f"{size / 1e3:8.1f} kB  {t.get('status', '-'):12} {t.get('phase', '-'):9} "
            f"{t.get('category', '-'):15} culprits={t.get('culprit_ranks')} "
            f"disagree={t.get('disagreement')} {','.join(t.get('formats', []))}")


def main(argv: list[str] | None = None) -> int:
    return bundle_cli.run(__doc__ or "", argv, BY_NAME, write=write,
                          differences=differences, describe=_describe, width=32)


if __name__ == "__main__":
    raise SystemExit(main())

