"""Run one real scenario the way some people launch a job by hand: a plain shell script that starts
every process of real_job.py in the background, each with its own RANK and WORLD_SIZE, and `wait`s
(no torchrun, no agent). Each process writes `logs/rank-<r>.log` (stdout and stderr together)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .expected import truth_of, write_expected
from .run import (
    FIXTURES,
    HERE,
    INIT_TIMEOUT_S,
    JOB_NAME,
    RUN_LIMIT_S,
    free_port,
    kill_group,
    run_checks,
)

SCRIPT = "launch.sh"


def launch_script(world_by_rank: dict[int, int], python: str) -> str:
    """The script, one line per process: what a user would have written (MASTER_PORT is its $1)."""
    lines = ["#!/bin/sh", "# four processes of real_job.py on this machine, started by hand",
             "export MASTER_ADDR=127.0.0.1 MASTER_PORT=$1", "mkdir -p logs"]
    lines += [f"RANK={r} LOCAL_RANK={r} WORLD_SIZE={w} {python} {JOB_NAME} > logs/rank-{r}.log 2>&1 &"
              for r, w in sorted(world_by_rank.items())]
    lines.append("wait")
    return "\n".join(lines) + "\n"


def run_shell_scenario(name: str, spec: dict, tv: str) -> list[str]:
    dest = FIXTURES / name
    tmp = Path(tempfile.mkdtemp(prefix=f"triage-{name}-"))
    shutil.copy(HERE / JOB_NAME, tmp / JOB_NAME)
    (tmp / SCRIPT).write_text(launch_script(spec["world_by_rank"], "python"))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FAULT", "RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_", "TORCH_"))}
    env.update(spec["env"], JOB_TIMEOUT_S=str(INIT_TIMEOUT_S), PATH=f"{Path(sys.executable).parent}:{env['PATH']}")
    t0 = time.monotonic()
    proc = subprocess.Popen(["sh", SCRIPT, str(free_port())], cwd=tmp, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(RUN_LIMIT_S)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc)
    elapsed = time.monotonic() - t0
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(tmp / "logs", dest / "logs")
    script = "; ".join(line for line in (tmp / SCRIPT).read_text().splitlines()[2:])
    desc = (f"{spec['what']}. Real run on torch {tv} (CPU, gloo, init_process_group timeout {INIT_TIMEOUT_S} s), "
            f"launched by the shell script `sh {SCRIPT} <free port>`: `{script}`.")
    if spec.get("seen"):
        desc += f" What the logs show: {spec['seen']}"
    write_expected(dest, name, desc, spec["expect"], truth_of(spec))
    problems = run_checks(dest, spec["checks"])
    if timed_out:
        problems.append(f"run hit the {RUN_LIMIT_S} s limit and was killed")
    print(f"{name}: {elapsed:.1f} s (rc {proc.returncode}) -> {dest.relative_to(FIXTURES.parent.parent)}", flush=True)
    for prob in problems:
        print(f"  PROBLEM: {prob}", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return problems

