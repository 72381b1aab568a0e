"""How `triage analyze` scales with --jobs on this machine, on bench.py's generated job.

    python bench/scaling.py [--jobs 1,2,4,8,16] [--runs 3]

Prints, per --jobs value, the median wall and CPU time (user + system, workers included) of the
whole command, and the wall time of its phases from inside one process (the library's own timing:
start-up, reading, the job and the verdict, the report). Nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # the job generator: tests/generators/

from generators import jobgen  # noqa: E402

import bench  # noqa: E402

PHASES = r"""
import sys, time
t0 = time.perf_counter()
import triage.api as api
from triage.job import build_job
from triage.diagnose.verdict import diagnose
from triage.parse.scan import Matcher
from triage.report import render
from triage.rules import load_rules
import io
t1 = time.perf_counter()
matcher = Matcher(load_rules())
sources, events = [], []
for scanned in api._scan_all(matcher, [sys.argv[1]], jobs=int(sys.argv[2])):
    for info, found in scanned:
        sources.append(info); events.extend(found)
t2 = time.perf_counter()
job = build_job(events, sources, None); verdict = diagnose(job)
t3 = time.perf_counter()
print(f"imports {t1 - t0:.2f}  rules+read {t2 - t1:.2f}  job+verdict {t3 - t2:.2f}")
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", default="1,2,4,8,16")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    job = HERE / "out" / "job-128x8-2000"
    if not job.exists():
        jobgen.generate(job, hosts=128, gpus=8, era="2.6", fault="silent", culprit=777, noise_lines=2000,
                        layout="torchrun")
    subprocess.run(["cat", *map(str, job.rglob("*.log"))], stdout=subprocess.DEVNULL, check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    report = HERE / "out" / "scaling-report.json"
    print(f"{os.cpu_count()} CPUs")
    for jobs in (int(j) for j in args.jobs.split(",")):
        cmd = [sys.executable, "-m", "triage", "analyze", "-q", "-o", f"json={report}", "--jobs", str(jobs),
               str(job)]
        times = [bench.run_once(cmd, env) for _ in range(args.runs)]
        phases = subprocess.run([sys.executable, "-c", PHASES, str(job), str(jobs)], env=env,
                                capture_output=True, text=True, check=True).stdout.strip()
        print(f"--jobs {jobs:<3} wall {statistics.median(t.wall for t in times):5.2f} s  "
              f"CPU {statistics.median(t.cpu for t in times):5.2f} s   ({phases})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
