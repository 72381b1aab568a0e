"""What a fuzz case is (the generated input, the outcome of its run) and the fixtures the
input classes draw from.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SCHEMA = ROOT / "src" / "triage" / "schemas" / "report-v1.schema.json"
RULES = ROOT / "rules"


@dataclass
class Case:
    """One generated input: the CLI arguments after `analyze` (paths relative to `root`)."""

    cls: str
    index: int
    root: Path
    args: list[str]
    what: str


@dataclass
class Outcome:
    case: Case
    kind: str  # ok | clean | FAILURE
    reason: str
    seconds: float
    rss_kb: int
    rc: int | None
    stderr_tail: str = ""


# ---------------------------------------------------------------- helpers for the generators

def fixture_logs() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*/logs") if p.is_dir())


def log_files(rng: random.Random) -> list[Path]:
    """A random fixture's regular files (all of them)."""
    logs = rng.choice(fixture_logs())
    return sorted(p for p in logs.rglob("*") if p.is_file() and not p.is_symlink())


def text_file(rng: random.Random) -> Path:
    """A random plain-text file from a random fixture."""
    for _ in range(20):
        files = [p for p in log_files(rng)
                 if p.suffix not in (".gz", ".zip", ".tar", ".zst", ".tgz", ".xz", ".bz2")]
        if files:
            return rng.choice(files)
    return FIXTURES / "nccl23-oom-rank6" / "logs" / "rank-0006.log"


def copy_fixture(rng: random.Random, dest: Path) -> tuple[Path, list[Path]]:
    src = rng.choice(fixture_logs())
    out = dest / "logs"
    shutil.copytree(src, out, symlinks=True)
    files = sorted(p for p in out.rglob("*") if p.is_file() and not p.is_symlink())
    return out, files
