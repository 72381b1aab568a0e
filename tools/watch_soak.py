"""Soak and time `triage watch` on real jobs (docs/watch.md, "False alarms" and "Time to a verdict").

    python tools/watch_soak.py healthy --runs 5 --stall 0 --stall 20 --out /tmp/watch-soak
    python tools/watch_soak.py hangs --out /tmp/watch-hangs

`healthy`: real torchrun + gloo jobs on CPU (tests/generators/watch_job.py), and the same job under
a plain shell launcher (tests/generators/watch_launcher.sh), with the pauses a watcher must not
take for a hang, cycled: every rank evaluating alone (25 s, twice), rank 0 writing a checkpoint
for 40 s while the others wait in a barrier, steps that lengthen (x1.35 a step from 1 s), every
rank sleeping 25 s, and a healthy job with an evaluation pause attached with `--pid` whose output
is a pipe (`torchrun … | tee`). All under `--on-hang kill`, at each `--stall` given (0: the
default). A false alarm is a hang verdict (a snapshot) or a kill (the job not exiting 0).

`hangs`: one job per hang kind at the defaults with `--on-hang kill`: idle culprits (a sleep, a
threading lock, a file lock, a C call holding the GIL; one under the shell launcher), a spinning
culprit under watch, and watch attached to a job whose culprit already spins. The time to the
verdict is from the fault's start (the job prints it) to the verdict file's write; the budget is
60 s for an idle culprit, 150 s for a spinning one. Each run's samples are recorded
(TRIAGE_WATCH_RECORD) beside it.

Prints one line per run and a summary; exits 1 on a false alarm, a hang missed or named wrong, or a
verdict over its budget. Up to --parallel runs at once (the jobs' pauses are wall-clock bounded).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "tests" / "generators" / "watch_job.py"
LAUNCHER = ROOT / "tests" / "generators" / "watch_launcher.sh"
LIMIT_S = 600
BUDGET_S = {"idle": 60.0, "spinning": 150.0}


@dataclass
class Run:
    name: str
    job: list[str]  # watch_job.py's arguments
    nproc: int = 3
    launcher: str = "torchrun"  # or "shell"
    attach: str = ""  # "", "pipe" (attach to a healthy job whose output is a pipe), "hung" (attach after the fault)
    kind: str = ""  # hangs: the kind expected, and the rank
    culprit: int | None = None
    extra: list[str] = field(default_factory=list)  # watch's own options


HEALTHY = [
    Run("eval-all", ["--fault", "eval", "--at", "2", "--every", "3", "--pause", "25", "--steps", "6"]),
    Run("checkpoint-rank0", ["--fault", "checkpoint", "--rank", "0", "--at", "2", "--pause", "40", "--steps", "5"]),
    Run("lengthen", ["--fault", "lengthen", "--at", "0", "--step-time", "1", "--growth", "1.35", "--steps", "10"]),
    Run("pause-all-shell", ["--fault", "pause", "--at", "2", "--pause", "25", "--steps", "5"], launcher="shell"),
    Run("pipe-attach-eval", ["--fault", "eval", "--at", "10", "--pause", "25", "--steps", "30", "--step-time",
                             "0.5"], attach="pipe"),
    Run("checkpoint-shell", ["--fault", "checkpoint", "--rank", "0", "--at", "2", "--pause", "40", "--steps", "5"],
        launcher="shell"),
]
HANGS = [
    Run("idle-sleep", ["--fault", "sleep", "--rank", "2", "--at", "3", "--steps", "100"], kind="idle", culprit=2),
    Run("idle-flock", ["--fault", "flock", "--rank", "1", "--at", "3", "--steps", "100"], kind="idle", culprit=1),
    Run("idle-lock", ["--fault", "lock", "--rank", "0", "--at", "3", "--steps", "100"], kind="idle", culprit=0),
    Run("idle-gil", ["--fault", "gil", "--rank", "1", "--at", "3", "--steps", "100"], kind="idle", culprit=1),
    Run("idle-sleep-shell", ["--fault", "sleep", "--rank", "1", "--at", "3", "--steps", "100"], launcher="shell",
        kind="idle", culprit=1),
    Run("spinning", ["--fault", "spin", "--rank", "2", "--at", "3", "--steps", "100"], kind="spinning", culprit=2),
    Run("spinning-attach-hung", ["--fault", "spin", "--rank", "1", "--at", "3", "--steps", "100"], attach="hung",
        kind="spinning", culprit=1),
]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _command(run: Run) -> list[str]:
    if run.launcher == "shell":
        return ["sh", str(LAUNCHER), str(run.nproc), str(_port()), str(JOB), *run.job]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(run.nproc),
            str(JOB), *run.job]


def _fault_time(text: str) -> float | None:
    found = re.search(r"^fault \w+ rank \d+ begins at (\d+\.\d+)", text, re.M)
    return float(found[1]) if found else None


def one(run: Run, folder: Path, stall: float) -> dict:
    """Run one job under watch; what happened."""
    folder.mkdir(parents=True, exist_ok=True)
    verdict = folder / "verdict.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHON=sys.executable, TRIAGE_WATCH_RECORD=str(folder / "samples.jsonl"))
    watch = [sys.executable, "-m", "triage", "watch", "--on-hang", "kill", "--grace", "5", "--dir", str(folder / "w"),
             "-q", "-o", f"json={verdict}", *(["--stall", str(stall)] if stall else []), *run.extra]
    began = time.monotonic()
    job_out = folder / "job.log"
    if not run.attach:
        done = subprocess.run([*watch, "--", *_command(run)], capture_output=True, text=True, env=env, timeout=LIMIT_S)
        watch_code, job_code, said = done.returncode, done.returncode, done.stderr
        job_text = (folder / "w" / "job.stdout.log").read_text() if (folder / "w" / "job.stdout.log").exists() else ""
    else:
        job_env = dict(env)
        job_env.pop("TRIAGE_WATCH_RECORD")
        seen: list[str] = []
        job = subprocess.Popen(_command(run), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=job_env, text=True)

        def tee() -> None:  # the job's output goes to a pipe that this reads, as `| tee` would
            assert job.stdout is not None
            with open(job_out, "w") as out:
                for line in job.stdout:
                    seen.append(line)
                    out.write(line)
        reader = threading.Thread(target=tee, daemon=True)
        reader.start()
        if run.attach == "hung":  # attach once the culprit already spins
            while _fault_time("".join(seen)) is None and job.poll() is None and time.monotonic() - began < LIMIT_S:
                time.sleep(0.5)
            time.sleep(5)
        done = subprocess.run([*watch, "--pid", str(job.pid)], capture_output=True, text=True, env=env,
                              timeout=LIMIT_S)
        try:
            job_code = job.wait(timeout=60)
        except subprocess.TimeoutExpired:
            job.kill()
            job_code = job.wait()
        reader.join(timeout=10)
        watch_code, said, job_text = done.returncode, done.stderr, "".join(seen)
    report = json.loads(verdict.read_text()) if verdict.exists() else {}
    fault = _fault_time(job_text)
    to_verdict = verdict.stat().st_mtime - fault if fault is not None and verdict.exists() else None
    log = (folder / "w" / "watch.log").read_text() if (folder / "w" / "watch.log").exists() else ""
    kinds = re.findall(r"; (idle|spinning|all-waiting|silent) hang, window", log)
    return {"name": run.name, "stall": stall, "seconds": round(time.monotonic() - began, 1), "watch_code": watch_code,
            "job_code": job_code, "snapshots": len(list((folder / "w").glob("snapshot-*"))),
            "killed": "ending the job" in said, "kinds": kinds, "to_verdict_s": to_verdict,
            "culprits": [c["rank"] for c in report.get("verdict", {}).get("culprits", []) if c.get("kind") == "rank"],
            "status": report.get("verdict", {}).get("status"), "blind": "cannot see" in log,
            "suspect": "suspect (" in log}


def healthy(args: argparse.Namespace) -> int:
    plan = [(stall, i, HEALTHY[i % len(HEALTHY)]) for stall in args.stall for i in range(args.runs)]
    alarms = 0
    with ThreadPoolExecutor(args.parallel) as pool:
        futures = [pool.submit(one, run, args.out / f"stall-{stall:g}" / f"{i:02d}-{run.name}", stall)
                   for stall, i, run in plan]
        for future in futures:
            r = future.result()
            alarm = bool(r["snapshots"] or r["killed"] or r["job_code"] != 0 or r["kinds"])
            alarms += alarm
            print(f"stall {r['stall'] or 'default':>7} {r['name']:<18} {r['seconds']:6.1f} s  watch exit {r['watch_code']}"
                  f"  job exit {r['job_code']}  hang verdicts {len(r['kinds'])}  kills {int(r['killed'])}"
                  f"{'  (said it cannot see the output)' if r['blind'] else ''}  {'FALSE ALARM' if alarm else 'quiet'}",
                  flush=True)
    kills = alarms
    print(f"{len(plan)} healthy runs ({args.runs} per setting, --stall {', '.join(str(s or 'default') for s in args.stall)}, "
          f"--on-hang kill, up to {args.parallel} at once): {kills} with a hang verdict or a kill", flush=True)
    return 1 if alarms else 0


def hangs(args: argparse.Namespace) -> int:
    bad = 0
    with ThreadPoolExecutor(args.parallel) as pool:
        chosen = [run for run in HANGS if not args.only or run.name in args.only]
        futures = [pool.submit(one, run, args.out / run.name, 0) for run in chosen]
        for run, future in zip(chosen, futures, strict=True):
            r = future.result()
            took = r["to_verdict_s"]
            ok = (r["culprits"] == [run.culprit] and run.kind in r["kinds"] and r["killed"]
                  and took is not None and took <= BUDGET_S[run.kind])
            bad += not ok
            print(f"{run.name:<22} {run.kind:<9} culprit {r['culprits']} (want [{run.culprit}])  hang kinds {r['kinds']}"
                  f"  fault to verdict {'-' if took is None else f'{took:5.1f}'} s (budget {BUDGET_S[run.kind]:.0f} s)"
                  f"  suspect first {'yes' if r['suspect'] else 'no'}  killed {'yes' if r['killed'] else 'no'}  "
                  f"{'ok' if ok else 'WRONG'}", flush=True)
    print(f"{len(chosen) - bad} of {len(chosen)} hangs named right within their budget at the defaults", flush=True)
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    soak = sub.add_parser("healthy", help="healthy jobs with pauses, under --on-hang kill: never a hang, never a kill")
    soak.add_argument("--runs", type=int, default=6, help="runs per --stall setting (the pauses are cycled)")
    soak.add_argument("--stall", type=float, action="append", help="0: watch's default (repeatable)")
    timed = sub.add_parser("hangs", help="one job per hang kind at the defaults: time from the fault to the verdict")
    timed.add_argument("--only", action="append", help="run only this hang (repeatable)")
    for p in (soak, timed):
        p.add_argument("--parallel", type=int, default=2)
        p.add_argument("--out", type=Path, default=Path("/tmp/watch-soak"))
    args = parser.parse_args()
    if args.what == "healthy":
        args.stall = args.stall or [0.0, 20.0]
        return healthy(args)
    return hangs(args)


if __name__ == "__main__":
    sys.exit(main())
