"""The fuzz run's figures: a tally per input class and the closing table."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .runner import MEMORY_LIMIT


@dataclass
class Tally:
    tried: int = 0
    ok: int = 0
    clean: int = 0
    failures: int = 0
    slowest: float = 0.0
    slowest_case: str = ""
    rss_kb: int = 0
    multiline: int = 0
    multiline_example: str = ""
    reasons: list[str] = field(default_factory=list)


def print_summary(tallies: dict[str, Tally], failures: list[Path], *, seed: int, seconds: float,
                  jobs: int, timeout: float, stopped: bool) -> None:
    """One row per class (tried, ok, clean errors, failures, slowest case, peak RSS), the total, the
    slowest case, clean errors that span several lines, and where each failure was saved."""
    total = Tally()
    header = f"{'class':<18}{'tried':>6}{'ok':>6}{'clean':>7}{'FAIL':>6}{'slowest s':>11}{'peak RSS MB':>13}"
    print(f"\n{'stopped early: ' if stopped else ''}seed {seed}, {seconds:.0f} s, {jobs} workers, "
          f"limits {timeout:g} s / {MEMORY_LIMIT >> 20} MB address space")
    print(header)
    print("-" * len(header))
    for c, t in tallies.items():
        print(f"{c:<18}{t.tried:>6}{t.ok:>6}{t.clean:>7}{t.failures:>6}{t.slowest:>11.2f}{t.rss_kb // 1024:>13}")
        total.tried += t.tried
        total.ok += t.ok
        total.clean += t.clean
        total.failures += t.failures
        total.rss_kb = max(total.rss_kb, t.rss_kb)
        if t.slowest > total.slowest:
            total.slowest, total.slowest_case = t.slowest, f"{c}: {t.slowest_case}"
    print("-" * len(header))
    print(f"{'total':<18}{total.tried:>6}{total.ok:>6}{total.clean:>7}{total.failures:>6}"
          f"{total.slowest:>11.2f}{total.rss_kb // 1024:>13}")
    print(f"slowest case: {total.slowest_case}")
    for c, t in tallies.items():
        if t.multiline:
            print(f"{c}: {t.multiline} clean errors span several lines, e.g. {t.multiline_example[:300]}")
    for path in failures:
        print(f"failure saved: {path}")
