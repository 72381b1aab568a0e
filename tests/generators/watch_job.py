"""A small torchrun + gloo job on CPU with one real fault, for `triage watch`'s tests and soak runs.

    torchrun --nproc-per-node 4 tests/generators/watch_job.py --fault sleep --rank 2 --at 3

Every rank all-reduces a small tensor once per step and prints `step N` after it. At step `--at`,
rank `--rank` meets its fault: `sleep` (sleeps forever before the collective), `gil` (blocks in a C
call that holds the GIL), `lock` (waits for a lock another thread holds forever), `kill` (SIGKILLs
itself), `subgroup` (sleeps forever; the others hang inside a sub-group all-reduce first), `pause`
(every rank pauses --pause seconds, then goes on: not a fault). `none`: healthy. `--busy S` adds S seconds of matmuls per step (bench/watch.py). The gloo timeout
is long (--timeout) so that the watcher, not the watchdog, sees the hang.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import os
import signal
import threading
import time

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", default="none",
                        choices=["none", "sleep", "gil", "lock", "kill", "subgroup", "pause"])
    parser.add_argument("--rank", type=int, default=2)
    parser.add_argument("--at", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--step-time", type=float, default=0.2)
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--busy", type=float, default=0.0, help="seconds of matmuls per step (bench)")
    args = parser.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    halves = [dist.new_group(list(range(0, world // 2))), dist.new_group(list(range(world // 2, world)))]
    mine = halves[0] if rank < world // 2 else halves[1]
    tensor = torch.ones(8)
    for step in range(args.steps):
        if step == args.at:
            fault(args, rank, mine, tensor)
        busy(args.busy)
        dist.all_reduce(tensor)
        tensor.fill_(1.0)
        print(f"step {step} rank {rank}", flush=True)
        time.sleep(args.step_time)
    dist.barrier()
    dist.destroy_process_group()


def busy(seconds: float) -> None:
    """Keep the CPU busy for about this long (the bench's busy job)."""
    end = time.monotonic() + seconds
    a = torch.rand(128, 128)
    while time.monotonic() < end:
        a = (a @ a).clamp_(-1, 1)


def fault(args: argparse.Namespace, rank: int, mine: dist.ProcessGroup, tensor: torch.Tensor) -> None:
    if args.fault == "pause":
        time.sleep(args.pause)
        return
    if args.fault == "subgroup":
        if rank != args.rank:
            dist.all_reduce(tensor, group=mine)  # the culprit's half hangs here, the other half goes on
            return
        time.sleep(1e6)
    if rank != args.rank:
        return
    if args.fault == "sleep":
        time.sleep(1e6)
    elif args.fault == "gil":
        ctypes.PyDLL(None).pause()  # a C call made without releasing the GIL: the whole process stops
    elif args.fault == "lock":
        lock = threading.Lock()
        held = threading.Event()

        def holder() -> None:
            with lock:
                held.set()
                time.sleep(1e6)

        threading.Thread(target=holder, name="holder", daemon=True).start()
        held.wait()
        lock.acquire()
    elif args.fault == "kill":
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main()
