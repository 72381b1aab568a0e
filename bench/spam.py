"""How `triage analyze` reads a crash loop (one error line printed over and over), against grep.

    python bench/spam.py [--sizes 10000,100000,1000000] [--shapes identical,timestamped] [--runs 3]

A rank in a crash loop prints one line thousands to millions of times. For each shape, size and
form, one rank's log of that many copies of a PyTorch watchdog error line is written under
bench/out/spam/, plain and gzipped. The shapes:

  identical     the same line, byte for byte (`[rank0]:[E ProcessGroupNCCL.cpp:1414] …`)
  timestamped   each copy in its own c10 envelope, its time advancing (`[rank0]:[E1125
                10:00:01.123456789 ProcessGroupNCCL.cpp:1414] …`, 1,000,000 copies from 10:00:01
                to 10:12:40): what a real crash loop prints

In the same run each file is read by

  grep -c        `grep -c -F LINE-LITERAL` on the plain file, `gzip -dc | grep -c -F` on the .gz
  triage         `triage analyze --quiet --jobs 1 -o json=FILE` on the folder holding the file

It prints, per shape, size and form: the wall and CPU time of each (median of --runs), triage's
ratio to grep, triage's CPU time per line read (and net of start-up: flat from 10,000 to 1,000,000
lines when reading is linear), its peak memory (VmHWM of the triage process itself, read as it
exits: a child forked from this driver would report the driver's RSS as its floor; flat when the
copies are folded), how many lines it read, and how many events it kept for them (the copies are
folded into one; `counted` is that event's count where it is a rank's first failure event in the
JSON report, `-` where the line is a consequence, as this one), with the first and last time the
folded event spans. A gzipped crash loop inflates about 258 times, below the decompression-bomb
bound (triage.ingest.open.MAX_RATIO): it is read whole. Writes bench/out/spam/results.json.
Nothing here is a test.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import Timing, run_once  # noqa: E402

LINE = ("[rank0]:[E ProcessGroupNCCL.cpp:1414] [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group "
        "watchdog thread terminated with exception: NCCL error: remote process exited or there was a "
        "network error\n")
LITERAL = "watchdog thread terminated"
SHAPES = ("identical", "timestamped")
# Runs triage's CLI and, as the process exits, writes its own peak RSS (VmHWM, KiB) to argv[1].
_WITH_PEAK = """
import atexit, sys
out = sys.argv.pop(1)
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            open(out, "w").write(line.split()[1])
atexit.register(peak)
sys.argv[0] = "triage"
from triage.cli import main
main()
"""


def write_spam(folder: Path, lines: int, gz: bool, shape: str = "identical") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("rank0.log.gz" if gz else "rank0.log")
    if not path.exists():
        with (gzip.open(path, "wt", compresslevel=6) if gz else path.open("w")) as out:
            for at in range(0, lines, 10_000):
                count = min(10_000, lines - at)
                out.write(LINE * count if shape == "identical" else "".join(_stamped(i) for i in range(at, at + count)))
    return path


def _stamped(i: int) -> str:
    """The i-th copy in its c10 envelope: 760 us after the one before, from 10:00:01."""
    ns = 36_001 * 10**9 + i * 760_000
    s = ns // 10**9
    return f"[rank0]:[E1125 {s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}.{ns % 10**9:09d} {LINE[len('[rank0]:[E '):]}"


def measure(triage: list[str], folder: Path, report: Path, runs: int) -> tuple[Timing, float]:
    """Median wall and CPU time of triage on `folder`, and its largest peak RSS in MB."""
    timings, peaks = [], []
    peak_file = report.with_suffix(".hwm")
    for _ in range(runs):
        timings.append(run_once([*triage, str(peak_file), "analyze", "--quiet", "--jobs", "1",
                                 "-o", f"json={report}", str(folder)]))
        peaks.append(int(peak_file.read_text()) / 1024)
    return median(timings), max(peaks)


def median(timings: list[Timing]) -> Timing:
    return Timing(statistics.median(t.wall for t in timings), statistics.median(t.cpu for t in timings),
                  max(t.peak_mb for t in timings), timings[-1].returncode)


def _events(folder: Path, report: Path) -> list[dict[str, Any]]:
    """The events triage read from the folder, from its extract (count, time and last time)."""
    extract = report.with_suffix(".extract.jsonl")
    run_once([sys.executable, "-m", "triage", "extract", "-o", str(extract), str(folder)])
    events: list[dict[str, Any]] = []
    if extract.exists():
        for line in extract.read_text().splitlines():
            doc = json.loads(line)
            events += [{"count": 1, **e} for e in doc.get("events", [])] if isinstance(doc, dict) else []
    return events


def _clock(when: object) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(when)) if isinstance(when, (int, float)) else "-"


def _count(count: int | None) -> str:
    return "-" if count is None else f"{count:,}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    shapes = [s for s in args.shapes.split(",") if s]
    if unknown := set(shapes) - set(SHAPES):
        ap.error(f"unknown shape(s): {', '.join(sorted(unknown))}; known: {', '.join(SHAPES)}")
    out = HERE / "out" / "spam"
    out.mkdir(parents=True, exist_ok=True)
    triage = [sys.executable, "-c", _WITH_PEAK]
    run_once([*triage, str(out / "warm.hwm"), "--help"])  # writes the bytecode cache
    # Start-up and the report cost the same at every size: timed on one line, and taken off the
    # per-line figure (`us/line` net), which is then flat when reading is linear.
    base, _ = measure(triage, write_spam(out / "1", 1, False).parent, out / "report-1.json", args.runs)
    rows = []
    for shape, lines, gz in itertools.product(shapes, sizes, (False, True)):
        folder = out / f"{shape}-{lines}{'-gz' if gz else ''}"
        path = write_spam(folder, lines, gz, shape)
        shutil.copyfileobj(path.open("rb"), open("/dev/null", "wb"))  # noqa: SIM115 (warm the cache)
        grep_cmd = (["sh", "-c", f"gzip -dc '{path}' | grep -c -F '{LITERAL}'"] if gz
                    else ["grep", "-c", "-F", LITERAL, str(path)])
        grep = median([run_once(grep_cmd, stdout=out / "grep.out") for _ in range(args.runs)])
        report = out / f"report-{folder.name}.json"
        took, peak = measure(triage, folder, report, args.runs)
        doc = json.loads(report.read_text())
        source = doc["sources"][0] if doc["sources"] else {}
        first = next((r["first_event"] for r in doc["ranks"] if r.get("first_event")), None) or {}
        read = max(source.get("lines") or 0, 1)  # per line read: a bound may stop a .gz early
        folded = [e for e in _events(folder, report) if e["count"] > 1]
        rows.append({
            "shape": shape, "lines": lines, "gzip": gz, "bytes": path.stat().st_size,
            "grep_wall_s": round(grep.wall, 3), "grep_cpu_s": round(grep.cpu, 3),
            "triage_wall_s": round(took.wall, 3), "triage_cpu_s": round(took.cpu, 3),
            "wall_vs_grep": round(took.wall / max(grep.wall, 1e-3), 1),
            "cpu_us_per_line": round(took.cpu / read * 1e6, 2),
            "net_cpu_us_per_line": round(max(took.cpu - base.cpu, 0) / read * 1e6, 2),
            "peak_mb": round(peak, 1),
            "lines_read": source.get("lines"),
            "folded_count": first.get("count", 1) if first else None,  # a consequence is no first event
            "events": source.get("events"), "verdict": doc["verdict"]["status"],
            "span": [folded[0].get("time"), folded[0].get("last_time")] if folded else None,
            "notes": source.get("notes", []),
        })
        row = rows[-1]
        print(f"  {shape:11s} {lines:>9,} {'gz   ' if gz else 'plain'}: grep {grep.wall:.2f} s, triage "
              f"{took.wall:.2f} s", file=sys.stderr)
    print(f"\n{'shape':11s} {'lines':>9s} {'form':5s} {'grep s':>7s} {'triage s':>9s} {'ratio':>6s} {'CPU us/line':>11s} {'net':>6s} "
          f"{'peak MB':>8s} {'read':>9s} {'counted':>9s} {'events':>6s}  verdict")
    for row in rows:
        print(f"{row['shape']:11s} {row['lines']:>9,} {'gz' if row['gzip'] else 'plain':5s} {row['grep_wall_s']:7.2f} "
              f"{row['triage_wall_s']:9.2f} {row['wall_vs_grep']:5.1f}x {row['cpu_us_per_line']:11.2f} {row['net_cpu_us_per_line']:6.2f} "
              f"{row['peak_mb']:8.1f} {row['lines_read'] or 0:>9,} {_count(row['folded_count']):>9s} "
              f"{row['events'] or 0:>6}  {row['verdict']}"
              + (f"  ({_clock(row['span'][0])} to {_clock(row['span'][1])})" if row["span"] and row["span"][1] else ""))
        for note in row["notes"]:
            print(f"{'':16s}note: {note}")
    print(f"\nstart-up (one line): {base.wall:.2f} s wall, {base.cpu:.2f} s CPU")
    (out / "results.json").write_text(json.dumps({"runs": args.runs, "startup_cpu_s": round(base.cpu, 3),
                                                  "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
