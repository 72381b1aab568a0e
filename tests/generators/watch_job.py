"""A small torchrun + gloo job on CPU with one real fault, for `triage watch`'s tests and soak runs.

    torchrun --nproc-per-node 4 tests/generators/watch_job.py --fault sleep --rank 2 --at 3

Every rank all-reduces a small tensor once per step and prints `step N` after it. At step `--at`,
rank `--rank` meets its fault: `sleep` (sleeps forever before the collective), `gil` (blocks in a C
call that holds the GIL), `lock` (waits for a lock another thread holds forever), `kill` (SIGKILLs
itself), `subgroup` (sleeps forever; the others hang inside a sub-group all-reduce first), `pause`
(every rank pauses --pause seconds, then goes on: not a fault). `none`: healthy. `--busy S` adds S
seconds of matmuls per step (bench/watch.py). The gloo timeout is long (--timeout) so that the
watcher, not the watchdog, sees the hang.

Healthy pauses a watcher must not take for a hang (every `--every` steps from `--at` on, when set):
`eval` (every rank computes alone for --pause seconds), `checkpoint` (rank --rank writes a file in
chunks for --pause seconds while the others wait in a barrier), `lengthen` (each step takes
--growth times longer than the one before). Hangs: `spin` (rank --rank spins in a pure-Python loop
forever), `flock` (rank --rank blocks in fcntl.flock on a file it already holds locked through
another descriptor: State S in the kernel's file-lock wait).
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import fcntl
import os
import signal
import tempfile
import threading
import time
from pathlib import Path

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", default="none",
                        choices=["none", "sleep", "gil", "lock", "kill", "subgroup", "pause", "eval", "checkpoint",
                                 "lengthen", "spin", "flock"])
    parser.add_argument("--rank", type=int, default=2)
    parser.add_argument("--at", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--step-time", type=float, default=0.2)
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--busy", type=float, default=0.0, help="seconds of matmuls per step (bench)")
    parser.add_argument("--every", type=int, default=0, help="repeat a healthy pause every N steps")
    parser.add_argument("--growth", type=float, default=1.1, help="lengthen: each step this much longer")
    parser.add_argument("--ckpt-dir", default="", help="checkpoint: where the file is written (a temp dir)")
    args = parser.parse_args()
    if os.environ.get("WATCH_JOB_UNDUMPABLE"):  # as a process another user owns: no ptrace, no /proc/<pid>/io
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    halves = [dist.new_group(list(range(0, world // 2))), dist.new_group(list(range(world // 2, world)))]
    mine = halves[0] if rank < world // 2 else halves[1]
    tensor = torch.ones(8)
    step_time = args.step_time
    for step in range(args.steps):
        if step == args.at or (args.every and step > args.at and (step - args.at) % args.every == 0):
            fault(args, rank, mine, tensor)
        busy(args.busy)
        dist.all_reduce(tensor)
        tensor.fill_(1.0)
        print(f"step {step} rank {rank}", flush=True)
        time.sleep(step_time)
        if args.fault == "lengthen" and step >= args.at:
            step_time *= args.growth
    dist.barrier()
    dist.destroy_process_group()


def busy(seconds: float) -> None:
    """Keep the CPU busy for about this long (the bench's busy job)."""
    end = time.monotonic() + seconds
    a = torch.rand(128, 128)
    while time.monotonic() < end:
        a = (a @ a).clamp_(-1, 1)


def evaluate(seconds: float) -> None:
    """Every rank alone: matmuls, no collective, for about this long."""
    busy(seconds)


def write_checkpoint(folder: str, seconds: float) -> None:
    """Write a file in 1 MiB chunks for about this long (its bytes grow as it goes)."""
    chunk = os.urandom(1 << 20)
    end = time.monotonic() + seconds
    with tempfile.TemporaryDirectory(dir=folder or None) as where, open(Path(where) / "ckpt.pt", "wb") as out:
        while time.monotonic() < end:
            out.write(chunk)
            out.flush()
            if out.tell() > 64 << 20:  # keep the file small: rewrite it from its start
                out.seek(0)
            time.sleep(0.05)


def spin() -> None:
    """A pure-Python loop that never ends: CPU busy, the same frame every time it is looked at."""
    count = 0
    while True:
        count += 1


def flock_forever(folder: str) -> None:
    """Block in the kernel on a file lock held through another descriptor of the same file."""
    path = Path(folder or tempfile.gettempdir()) / f"watch-job-{os.getpid()}.lock"
    holder = open(path, "w")  # noqa: SIM115 - held until the process ends
    fcntl.flock(holder, fcntl.LOCK_EX)
    with open(path, "w") as waiter:
        fcntl.flock(waiter, fcntl.LOCK_EX)


def fault(args: argparse.Namespace, rank: int, mine: dist.ProcessGroup, tensor: torch.Tensor) -> None:
    if args.fault == "pause":
        time.sleep(args.pause)
        return
    if args.fault == "eval":
        # Every rank evaluates until the same moment (the latest start plus --pause): as a fixed
        # evaluation set would, whatever the ranks' skew on a loaded machine.
        start = torch.tensor([time.time()], dtype=torch.float64)
        dist.all_reduce(start, op=dist.ReduceOp.MAX)
        evaluate(float(start[0]) + args.pause - time.time())
        return
    if args.fault == "checkpoint":
        if rank == args.rank:
            write_checkpoint(args.ckpt_dir, args.pause)
        dist.barrier()
        return
    if args.fault == "lengthen":
        return
    if args.fault == "subgroup":
        if rank != args.rank:
            dist.all_reduce(tensor, group=mine)  # the culprit's half hangs here, the other half goes on
            return
        time.sleep(1e6)
    if rank != args.rank:
        return
    print(f"fault {args.fault} rank {rank} begins at {time.time():.3f}", flush=True)  # the soak's hang time
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
    elif args.fault == "spin":
        spin()
    elif args.fault == "flock":
        flock_forever(args.ckpt_dir)
    elif args.fault == "kill":
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main()
