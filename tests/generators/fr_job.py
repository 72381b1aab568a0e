"""A torchrun + gloo job that leaves real flight-recorder dumps: run by tests/generators/make_fr.py.

torch 2.13's gloo process groups record every collective in the flight recorder (2,000 entries by
default; TORCH_FR_BUFFER_SIZE, alias TORCH_NCCL_TRACE_BUFFER_SIZE, sets it) but never write a dump
themselves. So each rank writes its own, the way the NCCL watchdog would: once, to
`$FR_DIR/comm_lib_trace_rank_<rank>` (and `….json` with FR_JSON=1, `_dump_fr_trace_json()`),

- when its collective raises (the gloo timeout: the "dump on timeout" of a victim);
- from a SIGTERM handler (torchrun stopping the ranks that are left: a hung rank);
- from a timer thread when the main thread made no progress for FR_IDLE_S from the faulty step on
  (a rank stuck inside a C++ collective, where no Python signal handler can run).

A rank killed by SIGKILL writes none, as in life.

Fault (env): FAULT = none | hang-before | hang-inside | shape | op | kill | subgroup-hang | p2p-hang |
dynamic-hang | raise-after, FAULT_RANK, FAULT_STEP (default 4), STEPS (default 8), JOB_TIMEOUT_S
(default 5), PAIR_TIMEOUT_S (the pairs' timeout in subgroup-hang; default JOB_TIMEOUT_S),
FR_PERIODIC_STEP (each rank also writes a dump to FR_DIR/periodic/ after that step, as a periodic
dumper does: a second dump of every rank, from earlier in the run).

  hang-before    sleeps for ever before the step's gradient all_reduce
  hang-inside    enters the step's all_reduce first (the others arrive 1 s late), writes its dump
                 from a thread while inside it, then freezes (SIGSTOP; a helper sends SIGCONT
                 after 6 s): the collective is enqueued everywhere and completed nowhere
  shape          all_reduces a gradient with one extra element
  op             calls broadcast where the others call all_reduce
  kill           SIGKILLs itself before the step's all_reduce (no dump)
  subgroup-hang  pairs {0,1},{2,3}: sleeps for ever before the pair all_reduce of that step
  p2p-hang       every step passes a token around the ring (send to r+1, recv from r-1, even
                 ranks send first); the faulty rank sleeps for ever before its send
  dynamic-hang   every step first all_reduces a count whose size changes with the step (8 + step
                 elements, the same on every rank); the faulty rank sleeps for ever before it
  raise-after    every collective completes and every rank writes its dump at the end; then the
                 faulty rank raises (a failed upload of its results): the job fails after its work
"""

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

FAULT = os.environ.get("FAULT", "none")
FAULT_RANK = int(os.environ.get("FAULT_RANK", "-1"))
FAULT_STEP = int(os.environ.get("FAULT_STEP", "4"))
STEPS = int(os.environ.get("STEPS", "8"))
TIMEOUT_S = float(os.environ.get("JOB_TIMEOUT_S", "5"))
FR_DIR = os.environ.get("FR_DIR", "/tmp/fr")
FR_JSON = os.environ.get("FR_JSON", "0") == "1"
IDLE_S = float(os.environ.get("FR_IDLE_S", "4"))
PAIR_TIMEOUT_S = float(os.environ.get("PAIR_TIMEOUT_S", str(TIMEOUT_S)))
PERIODIC_STEP = int(os.environ.get("FR_PERIODIC_STEP", "-1"))

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")

_dumped = threading.Lock()
_done = False
_progress = time.monotonic()
_armed = False  # the idle dump is armed from the faulty step on (a slow first step is no hang)


def dump(reason: str) -> None:
    """Write this rank's dump once (atomically: a temporary name renamed)."""
    global _done
    with _dumped:
        if _done:
            return
        _done = True
        Path(FR_DIR).mkdir(parents=True, exist_ok=True)
        path = Path(FR_DIR) / f"comm_lib_trace_rank_{RANK}"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(torch._C._distributed_c10d._dump_fr_trace())
        tmp.replace(path)
        if FR_JSON:
            path.with_name(path.name + ".json").write_bytes(torch._C._distributed_c10d._dump_fr_trace_json())
        log.info("rank %d wrote its flight-recorder dump to %s (%s)", RANK, path, reason)


def periodic_dump(step: int) -> None:
    """A dump in the middle of the run, as a periodic dumper writes one: to FR_DIR/periodic/."""
    path = Path(FR_DIR) / "periodic" / f"comm_lib_trace_rank_{RANK}"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(torch._C._distributed_c10d._dump_fr_trace())
    tmp.replace(path)
    log.info("rank %d wrote a periodic flight-recorder dump to %s after step %d", RANK, path, step)


def on_sigterm(signum, frame):
    dump("SIGTERM")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def idle_watch():
    while not _done:
        time.sleep(0.2)
        if _armed and time.monotonic() - _progress > IDLE_S:
            dump(f"no progress for {IDLE_S:g} s")
            return


def faulty(step: int) -> bool:
    return RANK == FAULT_RANK and step == FAULT_STEP


def freeze_inside(grad: torch.Tensor) -> None:
    """Enter the all_reduce, dump from a thread while inside it, then stop the whole process."""
    def later():
        time.sleep(0.5)
        dump("inside the collective, before freezing")
        subprocess.Popen(["sh", "-c", f"sleep 6; kill -CONT {os.getpid()}"])
        os.kill(os.getpid(), signal.SIGSTOP)
    threading.Thread(target=later, daemon=True).start()
    dist.all_reduce(grad)


def main():
    global _progress, _armed
    signal.signal(signal.SIGTERM, on_sigterm)
    log.info("rank %d/%d starting on %s, pid %d", RANK, WORLD, socket.gethostname(), os.getpid())
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT_S))
    _progress = time.monotonic()  # the clock starts once the group is up (init can take seconds)
    threading.Thread(target=idle_watch, daemon=True).start()
    pair = None
    if FAULT == "subgroup-hang":
        groups = [dist.new_group([r, r + 1], timeout=timedelta(seconds=PAIR_TIMEOUT_S), group_desc=f"pair{r // 2}")
                  for r in range(0, WORLD - 1, 2)]
        pair = groups[RANK // 2]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Linear(8, 1))
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    _progress = time.monotonic()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(RANK)
    try:
        for step in range(STEPS):
            _progress = time.monotonic()
            _armed = step >= FAULT_STEP
            x = torch.randn(32, 16, generator=gen)
            loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            if faulty(step) and FAULT in ("hang-before", "dynamic-hang"):
                time.sleep(10**6)
            if FAULT == "dynamic-hang":
                dist.all_reduce(torch.ones(8 + step))  # this step's token count: its size varies by step
            if faulty(step) and FAULT == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if FAULT == "hang-inside" and step == FAULT_STEP and RANK != FAULT_RANK:
                time.sleep(1.0)  # the faulty rank is first into this step's collective
            for i, p in enumerate(model.parameters()):
                if faulty(step) and FAULT == "shape" and i == 0:
                    dist.all_reduce(torch.cat([p.grad.flatten(), torch.zeros(1)]))
                elif faulty(step) and FAULT == "op" and i == 0:
                    dist.broadcast(p.grad, src=0)
                elif faulty(step) and FAULT == "hang-inside" and i == 0:
                    freeze_inside(p.grad)
                else:
                    dist.all_reduce(p.grad)
                p.grad /= WORLD
            opt.step()
            if pair is not None:
                if faulty(step):
                    time.sleep(10**6)
                dist.all_reduce(loss.detach().clone(), group=pair)
            if FAULT == "p2p-hang":
                token = torch.tensor([float(step)])
                right, left = (RANK + 1) % WORLD, (RANK - 1) % WORLD
                if faulty(step):
                    time.sleep(10**6)
                if RANK % 2 == 0:
                    dist.send(token, right)
                    dist.recv(token, left)
                else:
                    dist.recv(token, left)
                    dist.send(token, right)
            print(f"step {step} loss {loss.item():.4f}", flush=True)
            if step == PERIODIC_STEP:
                periodic_dump(step)
            time.sleep(0.1)
        dist.barrier()
    except Exception as exc:
        log.error("step failed: %s: %s", type(exc).__name__, str(exc).splitlines()[0][:200])
        dump(f"{type(exc).__name__} in a collective")
        raise
    dump("end of the job")
    log.info("training done after %d steps", STEPS)
    if FAULT == "raise-after" and RANK == FAULT_RANK:
        raise OSError(f"rank {RANK}: uploading results to /results/run-7/metrics-rank{RANK}.json failed: "
                      "No space left on device")
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
