"""Regenerate the synthetic whole-job fixtures with generators/jobgen.

Each fixture is ``tests/fixtures/<name>/logs/…`` plus ``tests/fixtures/<name>/expected.yaml``
(tests/schemas/expected.schema.json); the README showcase lives in ``examples/job-2x8-hang/`` (its
README.md is hand-written and is left alone); the fixtures are listed in
generators/synthetic_specs.py.  Everything is seeded, so a rerun reproduces the committed bytes
exactly. From ``tests/`` (or with ``PYTHONPATH=tests`` from the repository root):

    python -m generators.make_synthetic            # rewrite every fixture
    python -m generators.make_synthetic NAME ...   # only these
    python -m generators.make_synthetic --check    # regenerate in a temp dir and
                                                   # compare with what is committed
    python -m generators.make_synthetic --list     # names and sizes
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from generators import jobgen
from generators.synthetic_specs import (
    EXAMPLES,
    FIXTURES,
    LOSES,
    PRINCIPLES,
    REPO,
    SPECS,
    Spec,
    rank,
)

MADE_BY = "tests/generators/make_synthetic.py"

__all__ = ["EXAMPLES", "FIXTURES", "LOSES", "MADE_BY", "PRINCIPLES", "SPECS", "Spec", "build", "expected_yaml", "main", "rank"]


def _flow(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6)
    return text.removesuffix("\n...\n").strip()  # a lone scalar ends its document


def expected_yaml(spec: Spec) -> str:
    ex = spec.expect
    desc = yaml.safe_dump({"description": spec.description}, width=10**6).strip()
    lines = [
        desc,
        f"made_by: {MADE_BY}",
        f"args: {yaml.safe_dump(spec.args, default_flow_style=True).strip()}",
        "expect:",
    ]
    lines += [f"  {key}: {ex[key]}" for key in ("status", "phase", "category") if key in ex]
    if "culprits" in ex:
        lines.append("  culprits:")
        for c in ex["culprits"]:
            inner = ", ".join(f"{k}: {v}" for k, v in c.items())
            lines.append(f"    - {{{inner}}}")
    lines += [f"  {key}: {_flow(ex[key])}" for key in ("principle", "principle_loses") if key in ex]
    if "says" in ex:
        lines.append("  says:")
        lines += [f"    {where}: {_flow(texts)}" for where, texts in ex["says"].items()]
    text = "\n".join(lines) + "\n"
    data = yaml.safe_load(text)
    want = {"description": spec.description, "made_by": MADE_BY, "args": spec.args, "expect": ex}
    assert data == want, f"{spec.name}: expected.yaml does not round-trip"
    return text


def build(spec: Spec, dest: Path) -> None:
    """Write spec's fixture into dest (the fixture folder: logs/ + expected.yaml)."""
    logs = dest / "logs"
    if logs.exists():
        shutil.rmtree(logs)
    kwargs = dict(spec.gen)
    if spec.post.startswith("tar:"):
        with tempfile.TemporaryDirectory() as tmp:
            top = Path(tmp) / spec.post[4:].split(".")[0]
            truth = jobgen.generate(top, seed=spec.seed, only_hosts=spec.only_hosts, **kwargs)
            logs.mkdir(parents=True)
            jobgen.make_tar_gz(tmp, logs / spec.post[4:], mtime=truth.end_epoch)
    else:
        jobgen.generate(logs, seed=spec.seed, only_hosts=spec.only_hosts, **kwargs)
    if spec.post == "compress-mixed":
        kinds = ["gz", "bz2", "xz", "", "gz-as-log", "gz", "bz2", "xz"]
        for i, path in enumerate(sorted(logs.glob("rank-*.log"))):
            kind = kinds[i % len(kinds)]
            if kind == "gz-as-log":
                jobgen.compress_file(path, "gz", rename_to=path.name)
            elif kind:
                jobgen.compress_file(path, kind)
    (dest / "expected.yaml").write_text(expected_yaml(spec), encoding="utf-8")


def tree_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def same_tree(a: Path, b: Path) -> list[str]:
    diffs: list[str] = []
    fa = {p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file()}
    fb = {p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()}
    diffs += [f"missing {x}" for x in sorted(fb - fa)]
    diffs += [f"extra {x}" for x in sorted(fa - fb)]
    diffs += [
        f"differs {x}" for x in sorted(fa & fb) if not filecmp.cmp(a / x, b / x, shallow=False)
    ]
    return diffs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="fixture names (default: all)")
    ap.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temp dir and compare with the committed files",
    )
    ap.add_argument("--list", action="store_true", help="list fixtures and their sizes")
    args = ap.parse_args(argv)
    specs = [s for s in SPECS if not args.names or s.name in args.names]
    unknown = set(args.names) - {s.name for s in SPECS}
    if unknown:
        print(f"unknown fixture(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    if args.list:
        for s in specs:
            d = s.root / s.name
            size = tree_size(d) if d.exists() else 0
            print(f"{s.name:36} {size / 1e3:9.1f} kB  {d.relative_to(REPO)}")
        return 0
    bad = 0
    for s in specs:
        target = s.root / s.name
        if args.check:
            with tempfile.TemporaryDirectory() as tmp:
                fresh = Path(tmp) / s.name
                build(s, fresh)
                if (target / "logs").is_dir() and (target / "expected.yaml").is_file():
                    diffs = same_tree(target / "logs", fresh / "logs")
                    if not filecmp.cmp(target / "expected.yaml", fresh / "expected.yaml", False):
                        diffs.append("differs expected.yaml")
                else:
                    diffs = ["not generated yet"]
                status = "ok" if not diffs else "; ".join(diffs[:5])
                bad += bool(diffs)
                print(f"{s.name:36} {status}")
        else:
            target.mkdir(parents=True, exist_ok=True)
            build(s, target)
            print(f"{s.name:36} {tree_size(target) / 1e3:9.1f} kB  {target.relative_to(REPO)}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
