"""What `triage.health.check` costs next to the seed's check (an all-reduce of one 1.0, compared with the world size).

    python bench/health.py [--ranks 2,4,8] [--calls 1000] [--block 100] [--backend gloo|nccl]

For each world size, starts a torchrun job (this file is also the ranks' program). Each rank
alternates blocks of `--block` checks and `--block` seed checks, `--calls` of each in all, so that
both see the same load on the machine; every call is timed on its own (wall), and each block's CPU
time of the process (all its threads: the backend's too) is divided among its calls. Rank 0 prints
the per-call wall (median, mean, 99th percentile over every rank's calls) and CPU (mean) of both,
and the ratios. The store server's CPU (the launcher's agent) is not counted: the fast path sends
it one request per rank (docs/health.md, "Cost"). Nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def _launch(args: argparse.Namespace) -> int:
    code = 0
    for ranks in (int(r) for r in args.ranks.split(",")):
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                   str(ranks), str(HERE), "--rank-program", "--calls", str(args.calls), "--block",
                   str(args.block), "--backend", args.backend]
        code = max(code, subprocess.run(command, check=False).returncode)
    return code


def _stats(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return statistics.median(ordered), statistics.fmean(ordered), p99


def _rank(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    from triage.health import check

    cuda = args.backend == "nccl"
    if cuda:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group(args.backend)
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    world = dist.get_world_size()

    def seed() -> None:  # the check it replaces, as the seed writes it
        ones = torch.ones(1, device=device)
        dist.all_reduce(ones)
        if cuda:
            torch.cuda.synchronize(device)
        if abs(ones.item() - world) >= 1e-5:
            raise SystemExit("the seed's check failed during the benchmark")

    def healthy() -> None:
        if not check(timeout=30.0).ok:
            raise SystemExit("a check failed during the benchmark")

    for _ in range(20):  # warm up both paths: connections, allocations
        seed()
        healthy()
    wall: dict[str, list[float]] = {"seed": [], "check": []}
    cpu: dict[str, list[float]] = {"seed": [], "check": []}
    done = 0
    while done < args.calls:
        n = min(args.block, args.calls - done)
        for name, call in (("check", healthy), ("seed", seed)):
            dist.barrier()
            cpu_start = time.process_time()
            for _ in range(n):
                started = time.perf_counter()
                call()
                wall[name].append(time.perf_counter() - started)
            cpu[name].append((time.process_time() - cpu_start) / n)
        done += n
    # Through the store, not all_gather_object (which needs NumPy).
    store = dist.distributed_c10d._get_default_store()
    store.set(f"bench-health/{dist.get_rank()}", json.dumps({"wall": wall, "cpu": cpu}))
    if dist.get_rank() == 0:
        keys = [f"bench-health/{r}" for r in range(world)]
        store.wait(keys)
        everyone = [json.loads(store.get(k)) for k in keys]
        merged = {k: [t for r in everyone for t in r["wall"][k]] for k in wall}
        cpus = {k: statistics.fmean(t for r in everyone for t in r["cpu"][k]) for k in cpu}
        seed_med, seed_mean, seed_p99 = _stats(merged["seed"])
        med, mean, p99 = _stats(merged["check"])
        load = os.getloadavg()[0]
        print(f"\ntriage.health.check vs the seed's check: {args.backend}, {world} ranks, {args.calls} calls of "
              f"each per rank, alternating in blocks of {args.block}; load average {load:.1f}, "
              f"{os.cpu_count()} CPUs")
        print("per call (ms)         wall median   mean    p99   CPU mean")
        print(f"  seed (all_reduce 1.0) {seed_med * 1e3:8.3f} {seed_mean * 1e3:7.3f} {seed_p99 * 1e3:7.3f} "
              f"{cpus['seed'] * 1e3:8.3f}")
        print(f"  check()               {med * 1e3:8.3f} {mean * 1e3:7.3f} {p99 * 1e3:7.3f} {cpus['check'] * 1e3:8.3f}")
        print(f"ratio check/seed: wall {med / seed_med:.2f}x (median), {mean / seed_mean:.2f}x (mean); "
              f"CPU {cpus['check'] / cpus['seed']:.2f}x")
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2,4,8", help="world sizes, one job each (comma-separated)")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--block", type=int, default=100)
    parser.add_argument("--backend", choices=["gloo", "nccl"], default="gloo")
    parser.add_argument("--rank-program", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank_program:
        _rank(args)
    else:
        raise SystemExit(_launch(args))


if __name__ == "__main__":
    main()
