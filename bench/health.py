"""What `triage.health.check` costs next to the bare all-reduce of ones it replaces, in the same run.

    python bench/health.py [--ranks 4] [--calls 1000] [--block 100] [--backend gloo|nccl]

Starts a torchrun job of `--ranks` processes (this file is also the ranks' program). Each rank
alternates blocks of `--block` checks and `--block` bare all-reduces of a one-element tensor of
ones (synchronised on the GPU with NCCL), `--calls` of each in all, so that both see the same load
on the machine; every call is timed on its own. Rank 0 prints the per-call times of both (median,
mean, 99th percentile, over every rank's calls) and the overhead of a check as a ratio of the bare
all-reduce. Nothing here is a test.
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
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
               str(args.ranks), str(HERE), "--rank-program", "--calls", str(args.calls), "--block",
               str(args.block), "--backend", args.backend]
    return subprocess.run(command, check=False).returncode


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

    def bare() -> None:
        ones = torch.ones(1, device=device)
        dist.all_reduce(ones)
        if cuda:
            torch.cuda.synchronize(device)

    def healthy() -> None:
        if not check(timeout=30.0).ok:
            raise SystemExit("a check failed during the benchmark")

    for _ in range(20):  # warm up both paths: connections, allocations, the store's keys
        bare()
        healthy()
    times: dict[str, list[float]] = {"bare": [], "check": []}
    done = 0
    while done < args.calls:
        n = min(args.block, args.calls - done)
        for name, call in (("check", healthy), ("bare", bare)):
            dist.barrier()
            for _ in range(n):
                started = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - started)
        done += n
    # Through the store, not all_gather_object (which needs NumPy).
    store = dist.distributed_c10d._get_default_store()
    store.set(f"bench-health/{dist.get_rank()}", json.dumps(times))
    if dist.get_rank() == 0:
        keys = [f"bench-health/{r}" for r in range(dist.get_world_size())]
        store.wait(keys)
        everyone = [json.loads(store.get(k)) for k in keys]
        merged = {k: [t for r in everyone for t in r[k]] for k in times}
        bare_med, bare_mean, bare_p99 = _stats(merged["bare"])
        med, mean, p99 = _stats(merged["check"])
        print(f"triage.health.check vs a bare all-reduce of ones: {args.backend}, {dist.get_world_size()} ranks, "
              f"{args.calls} calls of each per rank, alternating in blocks of {args.block}")
        print("per call (ms)            median     mean      p99")
        print(f"  bare all_reduce(ones) {bare_med * 1e3:8.3f} {bare_mean * 1e3:8.3f} {bare_p99 * 1e3:8.3f}")
        print(f"  check()               {med * 1e3:8.3f} {mean * 1e3:8.3f} {p99 * 1e3:8.3f}")
        print(f"overhead: check() costs {med / bare_med:.1f}x a bare all-reduce of ones (median; "
              f"{mean / bare_mean:.1f}x by the mean), {(med - bare_med) * 1e3:+.3f} ms a call")
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4)
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
