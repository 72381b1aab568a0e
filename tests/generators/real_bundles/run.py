"""Run one real scenario: torchrun + real_job.py with the fault's env vars, then copy the logs into its
bundle, write its expected.yaml and grep the sanity checks."""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .expected import truth_of, write_expected

HERE = Path(__file__).resolve().parent.parent  # tests/generators
FIXTURES = HERE.parent / "fixtures"
JOB_NAME = "real_job.py"
INIT_TIMEOUT_S = 5  # init_process_group(timeout=...) -> every gloo/store wait
RUN_LIMIT_S = 60  # hard limit per scenario

# The job itself lives in tests/generators/real_job.py: the copy every run uses.


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_bin() -> str:
    cand = Path(sys.executable).parent / "torchrun"
    return str(cand) if cand.exists() else "torchrun"


def torch_version() -> str:
    out = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.__version__)"],
        capture_output=True, text=True, check=True,
    )
    return out.stdout.strip().splitlines()[-1]


def kill_group(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)


def job_env(spec: dict) -> dict[str, str]:
    if spec["fault"] == "none":
        env = {"FAULT": "none"}
    else:
        env = {"FAULT": spec["fault"], "FAULT_PHASE": spec["phase"], "FAULT_RANK": str(spec["rank"])}
        if spec["phase"] == "step":
            env["FAULT_STEP"] = str(spec["step"])
    env.update(spec["env"])
    return env


def run_scenario(name: str, spec: dict, tv: str) -> list[str]:
    if spec.get("launcher") == "shell":
        from .shell import run_shell_scenario  # it builds on this module

        return run_shell_scenario(name, spec, tv)
    dest = FIXTURES / name
    job_path = HERE / JOB_NAME

    tmp = Path(tempfile.mkdtemp(prefix=f"triage-{name}-"))
    shutil.copy(job_path, tmp / JOB_NAME)
    fault_env = job_env(spec)
    env = dict(os.environ)
    for k in ("FAULT", "FAULT_PHASE", "FAULT_RANK", "FAULT_STEP", "FAULT_SLEEP_S", "SUBGROUP",
              "ON_ERROR_GRACE_S", "TORCH_DISTRIBUTED_DEBUG", "STEPS"):
        env.pop(k, None)
    env.update(fault_env, JOB_TIMEOUT_S=str(INIT_TIMEOUT_S))
    env.pop("OMP_NUM_THREADS", None)  # let torchrun print its usual OMP warning
    env_str = " ".join(f"{k}={v}" for k, v in fault_env.items())

    nodes, nproc = spec["nodes"], spec["nproc"]
    port = free_port()
    procs: list[tuple[str, subprocess.Popen, Path]] = []
    cmds: list[str] = []
    for node_rank in range(nodes):
        host = f"node{node_rank + 1:02d}"
        logdir = tmp / host / "torchrun_logs"
        logdir.mkdir(parents=True)
        cmd = [torchrun_bin(), "--nproc-per-node", str(nproc)]
        if nodes == 1:
            cmd += ["--master-port", str(port)]
        else:
            cmd += ["--nnodes", str(nodes), "--node-rank", str(node_rank),
                    "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}"]
        cmd += ["--log-dir", str(logdir), "--redirects", "3", "--tee", "3", JOB_NAME]
        shown = " ".join(shlex.quote(c) for c in ["torchrun", *cmd[1:]])
        cmds.append(f"{env_str} {shown}")
        console = open(tmp / host / "console.log", "wb")  # noqa: SIM115 (the child writes it; closed after)
        p = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=console, stderr=subprocess.STDOUT,
                             start_new_session=True)
        console.close()
        procs.append((host, p, logdir))
        if nodes > 1 and node_rank == 0:
            time.sleep(1.0)  # node01 hosts the rendezvous store and sorts first (lower pid)

    t0 = time.monotonic()
    timed_out = False
    for _host, p, _ in procs:
        left = RUN_LIMIT_S - (time.monotonic() - t0)
        try:
            p.wait(max(left, 0.1))
        except subprocess.TimeoutExpired:
            timed_out = True
    if timed_out:
        for _host, p, _ in procs:
            kill_group(p)
    elapsed = time.monotonic() - t0

    # Which agent got which ranks (c10d rendezvous orders agents by (hostname, pid)):
    # read the job's own start-up line from each local-rank-0 stderr.
    host_of_group: dict[int, str] = {}
    for host, _p, logdir in procs:
        first = sorted(glob.glob(str(logdir / "*" / "attempt_0" / "0" / "stderr.log")))  # noqa: PTH207
        m = None
        if first:
            m = re.search(r"rank (\d+)/(\d+) \(local_rank 0\)", Path(first[0]).read_text(errors="replace"))
        group = int(m.group(1)) // nproc if m else int(host[-2:]) - 1
        host_of_group[group] = host
    rename = {src: f"node{g + 1:02d}" for g, src in host_of_group.items()}

    if dest.exists():
        shutil.rmtree(dest)
    (dest / "logs").mkdir(parents=True)
    for host, _p, logdir in procs:
        out = dest / "logs" / rename.get(host, host)
        out.mkdir(parents=True)
        shutil.copy(tmp / host / "console.log", out / "console.log")
        for run_dir in sorted(logdir.iterdir()):
            shutil.copytree(run_dir, out / run_dir.name)

    desc = (f"{spec['what']}. Real run on torch {tv} (CPU, gloo, init_process_group timeout "
            f"{INIT_TIMEOUT_S} s): " + " ; ".join(f"`{c}`" for c in cmds) + ".")
    if spec.get("seen"):
        desc += f" What the logs show: {spec['seen']}"
    write_expected(dest, name, desc, spec["expect"], truth_of(spec))

    problems: list[str] = []
    if timed_out:
        problems.append(f"run hit the {RUN_LIMIT_S} s limit and was killed")
    if rename != {h: h for h, _p, _l in procs}:
        print(f"  note: agents' rendezvous order differs from start order; renamed {rename}")
    problems += run_checks(dest, spec["checks"])
    codes = ", ".join(f"{h}: rc {p.returncode}" for h, p, _ in procs)
    print(f"{name}: {elapsed:.1f} s ({codes}) -> {dest.relative_to(FIXTURES.parent.parent)}", flush=True)
    for prob in problems:
        print(f"  PROBLEM: {prob}", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return problems


def run_checks(dest: Path, checks: list) -> list[str]:
    problems = []
    for pattern, rx, must in checks:
        files = sorted(glob.glob(str(dest / pattern)))  # noqa: PTH207
        hit = any(re.search(rx, Path(f).read_text(errors="replace"), re.M) for f in files)
        if not files:
            problems.append(f"check: no file matches {pattern}")
        elif hit != must:
            problems.append(f"check failed: {pattern} {'lacks' if must else 'has'} /{rx}/")
    return problems
