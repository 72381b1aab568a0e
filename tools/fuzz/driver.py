"""Fuzz driver for `triage analyze`: mutated fixtures and hostile files, run one subprocess each.

    python -m tools.fuzz --minutes 8 --seed 1 --out /tmp/fuzz
    python -m tools.fuzz --count 200 --seed 7 --out /tmp/fuzz --classes archives,odd_names

The command line: cases generated (class by class, in turn) and run on --jobs threads until
--minutes or --count is reached or Ctrl-C; failures saved under --out as they come; then the
figures (report.py). The outcomes and the limits: __init__.py.
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .cases import Case
from .classes import CLASSES
from .report import Tally, print_summary
from .runner import TIME_LIMIT, run_case, save_failure


def make_case(cls: str, index: int, seed: int, base: Path) -> Case:
    rng = random.Random(f"{seed}:{cls}:{index}")  # noqa: S311 (reproducible, not secret)
    root = Path(tempfile.mkdtemp(prefix=f"{cls}-{index}-", dir=base))
    args, what = CLASSES[cls](rng, root)
    return Case(cls, index, root, args, what)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=2.0, help="stop starting cases after this long")
    ap.add_argument("--count", type=int, default=0, help="stop after this many cases (0: no limit)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("tools/out/fuzz"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=TIME_LIMIT)
    ap.add_argument("--classes", default="", help="comma-separated subset of: " + ", ".join(CLASSES))
    ns = ap.parse_args(argv)
    classes = [c for c in ns.classes.split(",") if c] or list(CLASSES)
    unknown = [c for c in classes if c not in CLASSES]
    if unknown:
        ap.error(f"unknown classes {unknown}")
    ns.out.mkdir(parents=True, exist_ok=True)
    tallies = {c: Tally() for c in classes}
    deadline = time.monotonic() + ns.minutes * 60
    failures: list[Path] = []
    lock = threading.Lock()
    started = time.monotonic()

    with tempfile.TemporaryDirectory(prefix="triage-fuzz-") as tmp:
        base = Path(tmp)

        def one(i: int) -> None:
            cls = classes[i % len(classes)]
            try:
                case = make_case(cls, i // len(classes), ns.seed, base)
            except Exception as exc:
                print(f"  generator {cls} failed: {exc!r}", file=sys.stderr)
                return
            o = run_case(case, ns.timeout)
            with lock:
                t = tallies[cls]
                t.tried += 1
                t.rss_kb = max(t.rss_kb, o.rss_kb)
                if o.seconds > t.slowest:
                    t.slowest, t.slowest_case = o.seconds, case.what
                if o.kind == "ok":
                    t.ok += 1
                elif o.kind == "clean":
                    t.clean += 1
                    if o.reason.startswith("multi-line"):
                        t.multiline += 1
                        t.multiline_example = t.multiline_example or f"{case.what}: {o.reason}"
                else:
                    t.failures += 1
                    t.reasons.append(o.reason)
                    dest = save_failure(o, ns.out, len(failures) + 1)
                    failures.append(dest)
                    print(f"FAILURE {cls}#{case.index}: {o.reason[:160]} -> {dest}", flush=True)
            shutil.rmtree(case.root, ignore_errors=True)

        i = 0
        # Ctrl-C or SIGTERM: start no more cases, let those running end, print the figures so far.
        stop = threading.Event()
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        with ThreadPoolExecutor(ns.jobs) as pool:
            pending: set[object] = set()
            while not stop.is_set() and time.monotonic() < deadline and (not ns.count or i < ns.count):
                while len(pending) >= ns.jobs * 2:
                    done = {f for f in pending if f.done()}  # type: ignore[attr-defined]
                    pending -= done
                    if not done:
                        time.sleep(0.02)
                pending.add(pool.submit(one, i))
                i += 1
            for f in pending:
                f.result()  # type: ignore[attr-defined]

    print_summary(tallies, failures, seed=ns.seed, seconds=time.monotonic() - started, jobs=ns.jobs,
                  timeout=ns.timeout, stopped=stop.is_set())
    return 1 if failures else 0

