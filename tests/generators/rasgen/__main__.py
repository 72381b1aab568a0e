"""python -m generators.rasgen --demo: print one dump of each format (see the package's docstring)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from generators import rasgen

from .files import file_name, render
from .jobs import processes, world
from .model import Snapshot
from .monitor import monitor_line


def demo() -> dict[str, str]:
    """One dump per format for a 2 x 2 job whose process of rank 3 died."""
    procs = processes(["10.1.0.1", "10.1.0.2"], gpus=2, seed=3)
    w = world(procs, 0x6D4A1F0E22C3B5A7, Broadcast=3, AllReduce=4100)
    dead = frozenset({procs[3].pid})
    out = {}
    for version, fmt in (("2.25.1", "text"), ("2.26.2", "text"), ("2.28.9", "json")):
        snap = Snapshot(
            time=1_767_225_600.25, version=version, processes=procs, comms=[w], dead=dead
        )
        out[f"{version} {fmt} {file_name(snap, fmt)}"] = render(snap, fmt)
    out["2.29.7 monitor"] = monitor_line(1_767_225_590.0, "PEER_DEAD", procs[3])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=rasgen.__doc__.split("\n\n")[0])
    ap.add_argument("--demo", action="store_true", help="print one dump of each format")
    args = ap.parse_args(argv)
    if not args.demo:
        ap.print_help()
        return 0
    for what, text in demo().items():
        sys.stdout.write(f"----- {what}\n{text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
