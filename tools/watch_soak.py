"""Soak `triage watch` on healthy jobs: it must never fire (docs/watch.md, "False alarms").

    python tools/watch_soak.py --runs 50 --stall 20 --out /tmp/watch-soak

Runs real torchrun + gloo jobs on CPU (tests/generators/watch_job.py, no fault) with step times,
step counts, world sizes and pauses drawn at random (seeded), half under `triage watch -- torchrun …`
and half started on their own and watched with `triage watch --pid`, all with `--on-hang kill`. A
false alarm is a run where watch took a snapshot, printed a verdict, or the job did not exit 0.
Prints one line per run and the count; exits 1 when there was any false alarm.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "tests" / "generators" / "watch_job.py"


def one(run: int, rng: random.Random, out: Path, stall: float) -> tuple[bool, str]:
    step_time = round(rng.choice([rng.uniform(0.02, 0.3), rng.uniform(0.3, 2.0)]), 2)
    steps = rng.randint(4, 8)
    pause = round(rng.uniform(0, stall * 0.4), 1) if rng.random() < 0.4 else 0.0
    nproc = rng.choice([2, 3, 4])
    attach = run % 2 == 1
    job = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc), str(JOB),
           "--steps", str(steps), "--step-time", str(step_time)]
    if pause:
        job += ["--fault", "pause", "--at", str(rng.randint(1, steps - 1)), "--pause", str(pause)]
    folder = out / f"run-{run:03d}"
    watch = [sys.executable, "-m", "triage", "watch", "--stall", str(stall), "--on-hang", "kill",
             "--dir", str(folder), "-q", "-o", f"json={folder / 'verdict.json'}"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    began = time.monotonic()
    if attach:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "job.log", "wb") as log:
            started = subprocess.Popen(job, stdout=log, stderr=subprocess.STDOUT, env=env)
        done = subprocess.run([*watch, "--pid", str(started.pid)], capture_output=True, text=True, env=env,
                              timeout=600)
        job_code = started.wait(timeout=600)
    else:
        done = subprocess.run([*watch, "--", *job], capture_output=True, text=True, env=env, timeout=600)
        job_code = done.returncode
    snapshots = list(folder.glob("snapshot-*"))
    alarm = bool(snapshots) or done.returncode != 0 or job_code != 0 or (folder / "verdict.json").exists()
    what = (f"run {run:3d} {'--pid' if attach else 'cmd  '} ranks {nproc} steps {steps} step {step_time:5.2f} s "
            f"pause {pause:4.1f} s: {time.monotonic() - began:5.1f} s, watch exit {done.returncode}, job exit "
            f"{job_code}, {'FALSE ALARM' if alarm else 'quiet'}")
    if alarm:
        what += " — " + done.stderr.strip().splitlines()[-1:][0] if done.stderr.strip() else ""
    return alarm, what


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--stall", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("/tmp/watch-soak"))
    args = parser.parse_args()
    rng = random.Random(args.seed)  # noqa: S311 - run shapes, not secrets
    alarms = 0
    for run in range(args.runs):
        alarm, line = one(run, rng, args.out, args.stall)
        alarms += alarm
        print(line, flush=True)
    print(f"{alarms} false alarms in {args.runs} healthy runs (stall {args.stall:.0f} s)", flush=True)
    return 1 if alarms else 0


if __name__ == "__main__":
    sys.exit(main())
