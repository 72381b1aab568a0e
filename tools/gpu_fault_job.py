"""A small real NCCL training loop with one injected fault, to capture real logs on a GPU machine.

Run under torchrun (several ranks may share one GPU: each gets its own NCCL_HOSTID, so NCCL joins
them over its network transport, docs/formats.md §9):

  NCCL_DEBUG=INFO torchrun --nproc-per-node 4 --log-dir LOGS --redirects 3 --tee 3 \
      tools/gpu_fault_job.py --fault hang --rank 2 --step 5

With --ras-port-base, `triage ras collect --port <base>` asks rank 0's RAS while the job hangs.
Faults: hang (the rank sleeps before its next all-reduce: the others' watchdogs time out), crash
(the rank raises), kill (SIGKILL). Used to make tests/fixtures/real-gpu-*; not part of the suite.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", choices=["hang", "crash", "kill", "none"], default="hang")
    parser.add_argument("--rank", type=int, default=2)
    parser.add_argument("--step", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--ras-port-base", type=int, default=0,
                        help="give each rank its own RAS listener at 127.0.0.1:<base + rank> (ranks share a host)")
    args = parser.parse_args()
    rank = int(os.environ["RANK"])
    os.environ.setdefault("NCCL_HOSTID", f"vhost{rank}")  # one NCCL host per rank on a shared GPU
    if args.ras_port_base:
        os.environ["NCCL_RAS_ADDR"] = f"127.0.0.1:{args.ras_port_base + rank}"
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count())
    dist.init_process_group("nccl", timeout=timedelta(seconds=args.timeout))
    x = torch.ones(1 << 20, device="cuda")
    for step in range(args.steps):
        if step == args.step and rank == args.rank:
            print(f"rank {rank}: injecting {args.fault} at step {step}", flush=True)
            if args.fault == "hang":
                time.sleep(10 * args.timeout)
            elif args.fault == "crash":
                raise RuntimeError(f"injected failure on rank {rank} at step {step}")
            elif args.fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
        dist.all_reduce(x)
        torch.cuda.synchronize()
        print(f"rank {rank}: step {step} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
