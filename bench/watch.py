"""What `triage watch` costs a busy job: the job's wall time bare and watched, and the watcher's own
CPU time and peak memory (docs/watch.md, "Overhead"); the target is under 2% of the job's wall time.

    python bench/watch.py --runs 3 --steps 40

The job is CPU-bound (tests/generators/watch_job.py with a matmul per step on every rank, so the
watcher competes with it for the same cores) and prints a step line per rank per step; watch runs it
in command mode at its defaults: following and judging every line, sampling every rank's /proc
every 2 s (and its stack only while a rank stops advancing). Bare and watched runs alternate; the
medians are reported. On a shared machine the wall times are noisy; the watcher's CPU time over the
job's wall time is the cost it adds whatever else runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "tests" / "generators" / "watch_job.py"


def _usage(pid: int) -> tuple[float, int]:
    """(CPU seconds, peak RSS in KiB) of a live process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return -1.0, -1
    cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    hwm = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)
    return cpu, hwm


def run(job: list[str], folder: Path | None) -> tuple[float, float, int]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = job if folder is None else [sys.executable, "-m", "triage", "watch", "--dir", str(folder), "--", *job]
    began = time.monotonic()
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    cpu, hwm = 0.0, 0
    while process.poll() is None:
        if folder is not None:
            now_cpu, now_hwm = _usage(process.pid)
            if now_cpu >= 0:
                cpu, hwm = now_cpu, max(hwm, now_hwm)
        time.sleep(0.2)
    return time.monotonic() - began, cpu, hwm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("/tmp/watch-bench"))
    args = parser.parse_args()
    job = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(args.nproc), str(JOB),
           "--steps", str(args.steps), "--step-time", "0", "--busy", "0.25"]
    bare, watched, cpus, hwms = [], [], [], []
    for i in range(args.runs):
        bare.append(run(job, None)[0])
        wall, cpu, hwm = run(job, args.out / f"run-{i}")
        watched.append(wall)
        cpus.append(cpu)
        hwms.append(hwm)
    b, w = statistics.median(bare), statistics.median(watched)
    cpu = statistics.median(cpus)
    print(f"busy job, {args.nproc} ranks x {args.steps} steps on {os.cpu_count()} CPUs, median of {args.runs}:")
    print(f"  bare {b:.1f} s, watched {w:.1f} s: {100 * (w - b) / b:+.1f}% wall time")
    share = 100 * cpu / w
    print(f"  watcher CPU {cpu:.2f} s ({share:.1f}% of one CPU over the run, {share / (os.cpu_count() or 1):.1f}% of "
          f"the machine's), peak RSS {max(hwms) / 1024:.0f} MiB")
    print(f"  target: the watcher's CPU under 2% of the job's wall time: {'met' if share < 2 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
