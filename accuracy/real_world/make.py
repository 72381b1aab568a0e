#!/usr/bin/env python3
"""Build the real-world corpus: run real jobs with real faults, then cut them the ways people share logs.

    python accuracy/real_world/make.py run [NAME ...]   # torchrun + real_job.py -> $RW_RUNS/NAME (raw, untouched)
    python accuracy/real_world/make.py cut [NAME ...]   # raw runs -> accuracy/real_world/cases/<run>--<cut>/
    python accuracy/real_world/make.py seeds            # the public texts (GPU runs, RAS, vendor guides) -> cases/
    python accuracy/real_world/make.py --set heldout run|cut [NAME ...]
                                                        # the held-out set: heldout/runs.py -> heldout/cases/
                                                        # (raw runs in $RW_RUNS, default /tmp/rw-runs-heldout)

Raw runs live outside the repo ($RW_RUNS, default /tmp/rw-runs); every case holds its input exactly as
written by the job (files copied byte for byte; a cut only selects files or lines, and the paste and
the crash loop are the two recorded transformations) and a truth.yaml.  The job is
tests/generators/real_job.py, unchanged; RUNS in runs.py lists every run and its cuts.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
if __name__ == "__main__" and sys.argv[1:2] == ["--set"]:  # seen by cut.py's `import make` too
    os.environ["RW_SET"] = sys.argv[2]
    del sys.argv[1:3]
SET = os.environ.get("RW_SET", "")
if SET:  # another set of runs (heldout/): its own RUNS, cases folder, raw folder and seed
    _spec = importlib.util.spec_from_file_location(f"runs_{SET}", HERE / SET / "runs.py")
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    RUNS, SEED = _mod.RUNS, _mod.SEED
    CASES = HERE / SET / "cases"
    RAW = Path(os.environ.get("RW_RUNS", f"/tmp/rw-runs-{SET}"))
else:
    from runs import RUNS
    CASES = HERE / "cases"
    RAW = Path(os.environ.get("RW_RUNS", "/tmp/rw-runs"))
    SEED = 18  # every random choice of a cut (which victim, which width) comes from random.Random(SEED + name)

JOB = ROOT / "tests" / "generators" / "real_job.py"
LIMIT_S = 120
PHASES = {"init": "comm_init", "first": "operator_load", "step": "execution"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fault_env(spec: dict) -> dict[str, str]:
    env = {"FAULT": spec["fault"]}
    if spec["fault"] != "none":
        env.update(FAULT_PHASE=spec["phase"], FAULT_RANK=str(spec["rank"]))
        if spec["phase"] == "step":
            env["FAULT_STEP"] = str(spec["step"])
    env["JOB_TIMEOUT_S"] = str(spec["timeout"])
    env.update(spec["env"])
    return env


def do_run(name: str) -> None:
    spec = RUNS[name]
    out = RAW / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    work = out / ".work"
    work.mkdir()
    shutil.copy(JOB, work / "real_job.py")
    fenv = fault_env(spec)
    env = {k: v for k, v in os.environ.items()
           if k not in ("FAULT", "FAULT_PHASE", "FAULT_RANK", "FAULT_STEP", "FAULT_SLEEP_S", "SUBGROUP",
                        "ON_ERROR_GRACE_S", "TORCH_DISTRIBUTED_DEBUG", "STEPS", "OMP_NUM_THREADS")}
    env.update(fenv)
    torchrun = str(ROOT / ".venv" / "bin" / "torchrun")
    port = free_port()
    procs, cmds = [], []
    for n in range(spec["nodes"]):
        node = out / f"node{n + 1:02d}" if spec["nodes"] > 1 else out
        node.mkdir(exist_ok=True)
        cmd = ["timeout", str(LIMIT_S), torchrun, "--nproc-per-node", str(spec["nproc"])]
        if spec["nodes"] > 1:
            cmd += ["--nnodes", str(spec["nodes"]), "--node-rank", str(n), "--master-addr", "127.0.0.1"]
        cmd += ["--master-port", str(port)]
        if spec["launch"] == "tee":
            cmd += ["--log-dir", str(node / "logs"), "--redirects", "3", "--tee", "3"]
        cmd += ["real_job.py"]
        shown = " ".join(f"{k}={v}" for k, v in fenv.items()) + " " + " ".join(
            shlex.quote(c) for c in ["timeout", str(LIMIT_S), "torchrun", *cmd[3:]]).replace(str(out), "OUT")
        cmds.append(shown + f" > {(node / 'console.log').relative_to(out)} 2>&1")
        console = open(node / "console.log", "wb")  # noqa: SIM115
        procs.append(subprocess.Popen(cmd, cwd=work, env=env, stdout=console, stderr=subprocess.STDOUT,
                                      start_new_session=True))
        console.close()
    t0 = time.monotonic()
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(max(LIMIT_S + 10 - (time.monotonic() - t0), 1))
    for p in procs:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(5)
    shutil.rmtree(work)
    tv = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-c", "import torch;print(torch.__version__)"],
                        capture_output=True, text=True).stdout.strip()
    meta = {"name": name, "commands": cmds, "rc": [p.returncode for p in procs],
            "seconds": round(time.monotonic() - t0, 1), "torch": tv,
            "date": time.strftime("%Y-%m-%d"), "spec": spec}
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    print(f"{name}: rc {meta['rc']} in {meta['seconds']} s", flush=True)


if __name__ == "__main__":
    what, *names = sys.argv[1:]
    if what == "run":
        for nm in names or list(RUNS):
            do_run(nm)
    elif what == "cut":
        from cut import cut_all
        cut_all(names or list(RUNS))
    elif what == "seeds":
        from seeds import make_seeds
        make_seeds()
