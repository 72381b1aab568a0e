"""Tiny gloo "training" job used by tests/generators/make_real.py.

Run by make_real.py under torchrun.  Fault injection via env vars:
  FAULT       none | hang | sleep | sigkill | exception | segfault | exit | abort | oom |
              memoryerror | assert | wrong-port | shape | op | skip-init
                hang        sleeps forever (alive, never joins the next collective)
                sleep       sleeps FAULT_SLEEP_S once, then carries on (a straggler / late rank)
                sigkill     os.kill(self, SIGKILL)            (as the kernel OOM killer would)
                exception   raises ValueError
                segfault    ctypes.string_at(0)               (SIGSEGV)
                exit        os._exit(1) without a word        (a library calling exit(1))
                abort       os.abort()                        (SIGABRT, as a C++ abort would)
                oom         torch.empty() of an absurd size   (real CPU allocator failure)
                memoryerror bytearray() of an absurd size     (Python MemoryError)
                assert      an AssertionError in user code
                wrong-port  MASTER_PORT overridden from a stale "config" (init phase only)
                shape       all_reduces a gradient with one extra element (step), or receives
                            the initial weight broadcast into one element too few (first)
                op          calls broadcast where the others call all_reduce
                skip-init   = FAULT=hang FAULT_PHASE=init (kept for old command lines)
  FAULT_PHASE init  -> before init_process_group
              first -> after init, before the first collective (the broadcast of parameters)
              step  -> at step FAULT_STEP, before that step's gradient all_reduce (default)
  FAULT_RANK  global rank that misbehaves
  FAULT_STEP  step at which it misbehaves
  FAULT_SLEEP_S  how long FAULT=sleep sleeps (default 8)
  SUBGROUP=1  ranks are paired into dist.new_group()s {0,1}, {2,3}, ...; every step ends with an
              all_reduce of the loss inside the pair; a step fault is then injected before that
              sub-group all_reduce (after the global gradient all_reduce)
  ON_ERROR_GRACE_S  when a step raises, log the error and spend this long "writing an emergency
              checkpoint" before re-raising (default 0: re-raise at once)
  JOB_TIMEOUT_S  init_process_group timeout in seconds (default 5)
  STEPS       number of steps (default 10)
"""
import contextlib
import ctypes
import logging
import os
import signal
import socket
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist

FAULT = os.environ.get("FAULT", "none")
FAULT_PHASE = os.environ.get("FAULT_PHASE", "step")
if FAULT == "skip-init":
    FAULT, FAULT_PHASE = "hang", "init"
FAULT_RANK = int(os.environ.get("FAULT_RANK", "-1"))
FAULT_STEP = int(os.environ.get("FAULT_STEP", "5"))
FAULT_SLEEP_S = float(os.environ.get("FAULT_SLEEP_S", "8"))
SUBGROUP = os.environ.get("SUBGROUP", "0") == "1"
GRACE_S = float(os.environ.get("ON_ERROR_GRACE_S", "0"))
TIMEOUT_S = float(os.environ.get("JOB_TIMEOUT_S", "5"))
STEPS = int(os.environ.get("STEPS", "10"))

RANK = int(os.environ["RANK"])
LOCAL_RANK = int(os.environ["LOCAL_RANK"])
WORLD = int(os.environ["WORLD_SIZE"])

logging.basicConfig(
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)
log = logging.getLogger("train")
data_log = logging.getLogger("train.data")


def faulty(phase):
    return RANK == FAULT_RANK and phase == FAULT_PHASE


def inject(where):
    """The process-level faults; `where` only feeds the messages."""
    if FAULT == "hang":
        time.sleep(10**6)  # alive, but never gets any further
    elif FAULT == "sleep":
        time.sleep(FAULT_SLEEP_S)  # slow (e.g. a stalled data shard), then carries on
    elif FAULT == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif FAULT == "exception":
        if where == "init":
            raise ValueError("dataset index /data/shards/index.json lists -1 shards (expected > 0)")
        if where == "sync":
            raise ValueError("checkpoint /ckpt/init.pt: unexpected key 'head.weight' in state_dict")
        raise ValueError(f"invalid label -1 in batch {where} (expected 0..9)")
    elif FAULT == "segfault":
        ctypes.string_at(0)
    elif FAULT == "exit":
        os._exit(1)
    elif FAULT == "abort":
        os.abort()
    elif FAULT == "oom":
        # 32 x 2^40 floats: the CPU allocator refuses it at once
        torch.empty(32, 1 << 40)
    elif FAULT == "memoryerror":
        bytearray(1 << 50)
    elif FAULT == "assert":
        if where == "init":
            shards = 0
            assert shards > 0, f"rank {RANK}: no dataset shards assigned"
        shape = (31, 16)
        assert shape == (32, 16), f"batch {where}: expected shape (32, 16), got {shape}"


@contextlib.contextmanager
def on_error(what):
    """With ON_ERROR_GRACE_S set, a failure is logged and followed by an "emergency checkpoint"."""
    try:
        yield
    except Exception as e:
        if GRACE_S <= 0:
            raise
        log.error("%s failed (%s: %s); writing emergency checkpoint", what,
                  type(e).__name__, str(e).splitlines()[0][:200])
        time.sleep(GRACE_S)
        raise


def reduce_grads(model, step):
    for i, p in enumerate(model.parameters()):
        if RANK == FAULT_RANK and step == FAULT_STEP and FAULT_PHASE == "step":
            if FAULT == "shape" and i == 0:
                # one extra element on this rank only
                dist.all_reduce(torch.cat([p.grad.flatten(), torch.zeros(1)]))
                continue
            if FAULT == "op":
                dist.broadcast(p.grad, src=0)
                continue
        dist.all_reduce(p.grad)
        p.grad /= WORLD


def main():
    log.info("rank %d/%d (local_rank %d) starting on %s, pid %d",
             RANK, WORLD, LOCAL_RANK, socket.gethostname(), os.getpid())
    data_log.info("loading dataset index from /data/shards (rank %d)", RANK)
    if faulty("init"):
        if FAULT == "wrong-port":
            stale = int(os.environ["MASTER_PORT"]) + 1
            log.info("using MASTER_PORT=%d from job config", stale)
            os.environ["MASTER_PORT"] = str(stale)
        else:
            inject("init")
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT_S))
    log.info("process group ready: backend=%s world_size=%d", dist.get_backend(), dist.get_world_size())
    pair = None
    if SUBGROUP:
        groups = [dist.new_group([r, r + 1], timeout=timedelta(seconds=TIMEOUT_S))
                  for r in range(0, WORLD - 1, 2)]
        pair = groups[RANK // 2]
        log.info("pipeline pair group: ranks %d,%d", RANK // 2 * 2, RANK // 2 * 2 + 1)

    warnings.warn(  # noqa: B028 (the default stack level, as the real call)
        "`torch.cuda.amp.GradScaler(args...)` is deprecated. "
        "Please use `torch.amp.GradScaler('cuda', args...)` instead.",
        FutureWarning,
    )
    data_log.info("dataloader: 320 samples/rank, batch_size=32, num_workers=4")
    data_log.warning("dataloader: num_workers=4 is more than the %d CPUs available; using 2",
                     os.cpu_count() or 1)

    torch.manual_seed(0)
    model = torch.nn.Linear(16, 1)
    with on_error("initial weight sync"):
        if faulty("first"):
            inject("sync")
        for i, p in enumerate(model.parameters()):  # the first collective: weights from rank 0
            if faulty("first") and FAULT == "shape" and i == 0:
                dist.broadcast(p.data.flatten()[1:].clone(), src=0)  # one element short
            elif faulty("first") and FAULT == "op":
                dist.all_reduce(p.data)
            else:
                dist.broadcast(p.data, src=0)
    log.info("initial weights synchronised from rank 0")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(RANK)

    for step in range(STEPS):
        with on_error(f"step {step}"):
            x = torch.randn(32, 16, generator=gen)
            y = x.sum(dim=1, keepdim=True)
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            if faulty("step") and step == FAULT_STEP and not SUBGROUP:
                inject(step)
            reduce_grads(model, step)
            opt.step()
            if pair is not None:
                pair_loss = loss.detach().clone()
                if faulty("step") and step == FAULT_STEP:
                    inject(step)
                dist.all_reduce(pair_loss, group=pair)
                print(f"step {step} loss {loss.item():.4f} pair_loss {pair_loss.item() / 2:.4f}",
                      flush=True)
            else:
                print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step == 2:
            log.warning("checkpoint: no checkpoint dir configured, skipping save at step %d", step)
        time.sleep(0.2)

    dist.barrier()
    log.info("training done after %d steps", STEPS)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
