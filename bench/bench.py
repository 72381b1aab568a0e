"""Measure how fast `triage analyze` reads a large job, against grep over the same files.

    python bench/bench.py [--hosts 128] [--gpus 8] [--noise-lines 2000] [--runs 3]

Generates (once, under bench/out/) a job of hosts x gpus ranks with NCCL_DEBUG=INFO-style noise and
one silent rank, then times, in the same run and on the same files (page cache warm for all):
  - `grep -c -F -f LITERALS` : grep looking for every rule's prefilter literal (the same
    first-pass work triage does, done by a tool written in C);
  - `grep -c 'Watchdog caught'`: grep looking for one string (the floor: reading the bytes);
  - `triage analyze --format json` : the whole pipeline, verdict included.
It prints MB/s for each and the ratios, checks that triage named the silent rank, and writes the
figures to bench/out/results.json. Nothing here is a test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import jobgen  # noqa: E402

from triage.rules import load_rules  # noqa: E402


def timed(cmd: list[str], runs: int) -> tuple[float, subprocess.CompletedProcess[str]]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
    assert result is not None
    return statistics.median(times), result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=128)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--noise-lines", type=int, default=2000)
    ap.add_argument("--culprit", type=int, default=777)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    job = HERE / "out" / f"job-{args.hosts}x{args.gpus}-{args.noise_lines}"
    if not job.exists():
        print(f"generating {job} …", file=sys.stderr)
        jobgen.generate(job, hosts=args.hosts, gpus=args.gpus, era="2.6", fault="silent",
                        culprit=args.culprit, noise_lines=args.noise_lines, layout="torchrun")
    files = sorted(str(p) for p in job.rglob("*") if p.is_file())
    size_mb = sum(Path(f).stat().st_size for f in files) / 1e6
    lines = sum(1 for f in files for _ in open(f, "rb"))  # noqa: SIM115
    literals = HERE / "out" / "literals.txt"
    literals.write_text("\n".join(sorted({lit for r in load_rules() for lit in r.prefilter})) + "\n")

    # Warm the page cache so every contender reads from memory.
    subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)
    grep_all, _ = timed(["grep", "-c", "-F", "-f", str(literals), *files], args.runs)
    grep_one, _ = timed(["grep", "-c", "Watchdog caught", *files], args.runs)
    triage_s, result = timed([sys.executable, "-m", "triage", "analyze", "--format", "json",
                              str(job)], args.runs)
    report = json.loads(result.stdout)
    culprits = [c["rank"] for c in report["verdict"]["culprits"] if c["kind"] == "rank"]
    figures = {
        "job": {"ranks": args.hosts * args.gpus, "files": len(files), "megabytes": round(size_mb, 1),
                "lines": lines},
        "cpus": os.cpu_count(),
        "seconds": {"grep_literals": round(grep_all, 3), "grep_one_string": round(grep_one, 3),
                    "triage": round(triage_s, 3)},
        "MB_per_s": {"grep_literals": round(size_mb / grep_all), "grep_one_string": round(size_mb / grep_one),
                     "triage": round(size_mb / triage_s)},
        "triage_vs_grep_literals": round(grep_all / triage_s, 3),
        "triage_vs_grep_one_string": round(grep_one / triage_s, 3),
        "verdict": {"status": report["verdict"]["status"], "culprits": culprits,
                    "expected": [args.culprit]},
        "literals": len(literals.read_text().splitlines()),
    }
    (HERE / "out" / "results.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return 0 if culprits == [args.culprit] else 1


if __name__ == "__main__":
    sys.exit(main())
