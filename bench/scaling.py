"""How `triage analyze` scales with --jobs on this machine, on bench.py's generated job.

    python bench/scaling.py [--jobs 1,2,4,8,16] [--runs 3]
    python bench/scaling.py --break-even [--hosts 1,2,4,8,16,32] [--runs 3]

Prints, per --jobs value, the median wall and CPU time (user + system, workers included) of the
whole command, and the wall time of its phases from inside one process (the library's own timing:
start-up, reading, the job and the verdict, the report).

--break-even: jobs of growing size (hosts x 8 ranks, bench.py's shape), each read by one process
and by one per usable CPU with the size threshold lifted (`PARALLEL_MIN_BYTES` = 0, so the workers
are forked whatever the size): the size from which the workers pay in wall time, against
`PARALLEL_MIN_BYTES`, the size from which `analyze` forks them by itself. Nothing here is a test.
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


# The whole `analyze` command, with the size below which it reads on one process lifted.
FORCED = r"""
import sys
import triage.api
from triage.cli import main
triage.api.PARALLEL_MIN_BYTES = 0
sys.argv = ["triage", *sys.argv[1:]]
main()
"""


def break_even(hosts: list[int], runs: int, env: dict[str, str]) -> None:
    import triage.api

    cpus = triage.api.usable_cpus()
    workers = min(cpus, triage.api.MAX_JOBS)
    threshold = triage.api.PARALLEL_MIN_BYTES / 2**20
    print(f"{cpus} usable CPUs; workers forked from {threshold:.0f} MiB (PARALLEL_MIN_BYTES)")
    print(f"{'hosts':>5s} {'files':>6s} {'MiB':>7s} {'wall, 1 process':>16s} {f'wall, {workers} processes':>20s} "
          f"{'ratio':>6s} {'CPU, 1':>7s} {f'CPU, {workers}':>7s}")
    if workers < 2:
        print("one usable CPU: nothing to compare")
        return
    report = HERE / "out" / "scaling-report.json"
    for count in hosts:
        job = HERE / "out" / f"job-{count}x8-2000"
        if not job.exists():
            jobgen.generate(job, hosts=count, gpus=8, era="2.6", fault="silent", culprit=min(777, count * 8 - 1),
                            noise_lines=2000, layout="torchrun")
        files = [str(p) for p in job.rglob("*") if p.is_file()]
        subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        size = sum(Path(f).stat().st_size for f in files) / 2**20
        args = ["analyze", "-q", "-o", f"json={report}", str(job)]
        serial = [sys.executable, "-m", "triage", *args, "--jobs", "1"]
        forked = [sys.executable, "-c", FORCED, *args, "--jobs", str(workers)]
        one, many = [], []
        for _ in range(runs):  # alternated, so a change in the machine's load touches both
            one.append(bench.run_once(serial, env))
            many.append(bench.run_once(forked, env))
        wall_one, wall_many = (statistics.median(t.wall for t in ts) for ts in (one, many))
        cpu_one, cpu_many = (statistics.median(t.cpu for t in ts) for ts in (one, many))
        print(f"{count:5d} {len(files):6d} {size:7.1f} {wall_one:15.2f}s {wall_many:19.2f}s "
              f"{wall_many / wall_one:6.2f} {cpu_one:7.2f} {cpu_many:7.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", default="1,2,4,8,16")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--break-even", action="store_true", help="the input size from which workers pay")
    ap.add_argument("--hosts", default="1,2,4,8,16,32", help="job sizes for --break-even (x 8 ranks)")
    args = ap.parse_args()
    if args.break_even:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        break_even([int(h) for h in args.hosts.split(",")], args.runs, env)
        return 0
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
