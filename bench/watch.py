"""What `triage watch` costs a busy job: the job's wall time bare and watched, and the watcher's own
CPU time and peak memory (docs/watch.md, "Overhead"); the target is under 2% of the job's wall time.

    python bench/watch.py --runs 3 --steps 40 [--baseline-src /tmp/base/src]

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
import resource
import statistics
import subprocess
import sys
import tempfile
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


def run(job: list[str], folder: Path | None, src: Path | None = None) -> tuple[float, float, int]:
    """(wall seconds, the watcher's own CPU seconds, its peak RSS in KiB) of one run; bare when
    `folder` is None; with `src`, the watcher is the triage found there (the baseline's)."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if src is not None:
        env["PYTHONPATH"] = str(src)
    elif folder is not None:
        env["TRIAGE_WATCH_RECORD"] = str(folder.parent / f"{folder.name}.samples.jsonl")
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


def startup(src: Path | None) -> float:
    """The watcher's CPU seconds to start and end with a job that does nothing (imports, rules)."""
    env = dict(os.environ, **({"PYTHONPATH": str(src)} if src is not None else {}))
    with tempfile.TemporaryDirectory() as folder:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "triage", "watch", "--dir", folder, "--", "true"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("/tmp/watch-bench"))
    parser.add_argument("--baseline-src", type=Path, help="a src/ folder of another triage (git archive of a base "
                        "commit): its watcher is run too, alternating, for comparison")
    args = parser.parse_args()
    job = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(args.nproc), str(JOB),
           "--steps", str(args.steps), "--step-time", "0", "--busy", "0.25"]
    variants: list[tuple[str, Path | None]] = [("this", None)]
    if args.baseline_src is not None:
        variants.append(("baseline", args.baseline_src.resolve()))
    bare: list[float] = []
    seen: dict[str, list[tuple[float, float, int]]] = {name: [] for name, _ in variants}
    for i in range(args.runs):
        bare.append(run(job, None)[0])
        for name, src in variants:
            seen[name].append(run(job, args.out / f"{name}-{i}", src))
    b = statistics.median(bare)
    print(f"busy job, {args.nproc} ranks x {args.steps} steps on {os.cpu_count()} CPUs, median of {args.runs}, "
          f"bare {b:.1f} s:")
    for name, src in variants:
        wall = statistics.median(r[0] for r in seen[name])
        cpu = statistics.median(r[1] for r in seen[name])
        start = statistics.median(startup(src) for _ in range(3))
        share = 100 * cpu / wall
        print(f"  {name:<8} watched {wall:.1f} s ({100 * (wall - b) / b:+.1f}% wall time); watcher CPU {cpu:.2f} s = "
              f"{share:.1f}% of one CPU over the run ({share / (os.cpu_count() or 1):.1f}% of the machine's), of "
              f"which {start:.2f} s starting up; peak RSS {max(r[2] for r in seen[name]) / 1024:.0f} MiB")
    stacks = sum(line.count('"stack"') for f in args.out.glob("this-*.samples.jsonl") for line in f.open())
    print(f"  stack samples taken of the busy job: {stacks} (a rank that keeps advancing is never sampled)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
