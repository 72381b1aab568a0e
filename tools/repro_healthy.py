#!/usr/bin/env python3
"""Healthy `triage repro` jobs under real torchrun must all be NO FAILURE; and what the check costs.

    python tools/repro_healthy.py [--runs 50] [--agents 1,2] [--nproc 2]

Each run is a torchrun job (one agent, or two agents as two nodes on this host) of
`triage repro --backend gloo`, without a fault. A run counts as right only when every agent exits
0 and rank 0's report says no_failure. The baseline, in the same session: the same torchrun
layout running a bare script that does what repro's ranks do (init_process_group, the same
all-reduces) with no supervision, verification or analysis; the ratio is what triage adds.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = "1K,64K"
ITERS = 2
BASELINE = """
import os, torch, torch.distributed as dist
dist.init_process_group("gloo")
for numel in (256, 16384):
    t = torch.ones(numel)
    for _ in range(4):
        dist.all_reduce(t)
dist.barrier()
dist.destroy_process_group()
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def torchrun(agents: int, nproc: int, target: list[str], workdir: Path) -> tuple[list[int], list[str], float]:
    port = free_port()
    procs = []
    started = time.monotonic()
    for node in range(agents):
        cwd = workdir / f"node{node}"
        cwd.mkdir(parents=True)
        rendezvous = (["--standalone"] if agents == 1 else
                      ["--nnodes", str(agents), "--node-rank", str(node), "--master-addr", "127.0.0.1",
                       "--master-port", str(port)])
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run", *rendezvous, "--nproc-per-node", str(nproc), *target],
            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=dict(os.environ, CI="1")))
    outs = [p.communicate(timeout=300)[0] for p in procs]
    return [p.returncode for p in procs], outs, time.monotonic() - started


def verdict(workdir: Path) -> str:
    reports = list((workdir / "node0").glob("triage-repro-*/triage-report.json"))
    if not reports:
        return "no report"
    status: str = json.loads(reports[0].read_text())["verdict"]["status"]
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--agents", default="1,2", help="agent counts to alternate between")
    parser.add_argument("--nproc", type=int, default=2, help="ranks per agent")
    args = parser.parse_args()
    layouts = [int(a) for a in args.agents.split(",")]
    repro = ["-m", "triage", "repro", "--backend", "gloo", "--sizes", SIZES, "--iters", str(ITERS),
             "--timeout", "20"]
    right, wrong, times, base_times = 0, [], [], []
    with tempfile.TemporaryDirectory(prefix="repro-healthy-") as tmp:
        script = Path(tmp) / "baseline.py"
        script.write_text(BASELINE)
        for i in range(args.runs):
            agents = layouts[i % len(layouts)]
            work = Path(tmp) / f"run{i}"
            codes, outs, secs = torchrun(agents, args.nproc, repro, work)
            status = verdict(work)
            times.append(secs)
            if all(c == 0 for c in codes) and status == "no_failure":
                right += 1
            else:
                wrong.append((i, agents, codes, status, outs[0][-2000:]))
            base_codes, _, base_secs = torchrun(agents, args.nproc, [str(script)], Path(tmp) / f"base{i}")
            if all(c == 0 for c in base_codes):
                base_times.append(base_secs)
            print(f"run {i + 1}/{args.runs}: {agents} agent(s), exit {codes}, {status}, {secs:.1f} s "
                  f"(baseline {base_secs:.1f} s)", flush=True)
    print(f"\nhealthy runs reported NO FAILURE: {right}/{args.runs}")
    med, base = statistics.median(times), statistics.median(base_times) if base_times else float("nan")
    print(f"wall time per job, median: triage repro {med:.2f} s; bare torchrun all-reduce script "
          f"{base:.2f} s; ratio {med / base:.2f}x")
    for i, agents, codes, status, tail in wrong:
        print(f"\n-- run {i + 1} ({agents} agents): exit {codes}, {status}\n{tail}")
    return 0 if right == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
