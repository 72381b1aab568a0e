"""The store's load from `triage.health.check` at N ranks, measured on a real TCPStore with N simulated clients.

    python bench/health_store.py [--clients 8,64,256,1000] [--rounds 30] [--procs 4]

A TCPStore server runs in its own process (as torchrun's agent hosts it). `--procs` processes open
N client connections in all (threads, one connection each) and, round after round, every client
sends what one rank sends to the store in one check at once:

- `publish`: what every check sends, pass or not: one compare_set per rank on the call's slot of
  the decisions' ring (replacing the decision of the call SLOTS before, or setting a new key);
- `rollcall`: the slow path of a failed check: the answer (append, add), the wait for everyone's
  answers, the read of who answered, and the compare_set of the decision.

For each round it records when each client
sent its first request and got its last reply, and prints the round's makespan (first request to
last reply over all clients: what the slowest rank waits for the store in that check) and the
server's CPU time per round. Nothing here is a test; on a shared machine the figures carry its load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import threading
import time
from datetime import timedelta
from typing import Any

from triage.health.protocol import SLOTS  # the ring of decision keys the check uses

HOST = "127.0.0.1"


def _server(port: int, ready: Any, stop: Any) -> None:
    import torch.distributed as dist

    store = dist.TCPStore(HOST, port, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=300))
    ready.set()
    stop.wait()
    del store


def _clients(port: int, first: int, count: int, total: int, rounds: int, mode: str, out: Any) -> None:
    import torch.distributed as dist

    stores = [dist.TCPStore(HOST, port, is_master=False, timeout=timedelta(seconds=300)) for _ in range(count)]
    times: list[list[tuple[float, float]]] = [[] for _ in range(rounds)]
    barrier = threading.Barrier(count)

    def run(i: int) -> None:
        store, rank = stores[i], first + i
        for r in range(rounds):
            barrier.wait()
            store.add(f"ready/{r}", 1)
            store.wait([f"go/{r}"])
            began = time.time()
            if mode == "publish":
                store.compare_set(f"{r % SLOTS}/d", f"{r - SLOTS} ok" if r >= SLOTS else "", f"{r} ok")
            else:
                store.append(f"{r}/rc", f"{rank},")
                if store.add(f"{r}/rcn", 1) >= total:
                    store.set(f"{r}/rcall", "1")
                store.wait([f"{r}/rcall"])
                store.get(f"{r}/rc")
                store.compare_set(f"{r % SLOTS}/d", "", json.dumps({"phase": "arrival", "missing": [], "why": "x"}))
            times[r].append((began, time.time()))
            store.add(f"done/{r}", 1)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(times)


def _measure(n: int, rounds: int, procs: int, mode: str, port: int) -> dict[str, float]:
    import torch.distributed as dist

    ctx = mp.get_context("spawn")
    ready, stop = ctx.Event(), ctx.Event()
    server = ctx.Process(target=_server, args=(port, ready, stop))
    server.start()
    ready.wait()
    out = ctx.Queue()
    procs = min(procs, n)
    shares = [n // procs + (i < n % procs) for i in range(procs)]
    starts = [sum(shares[:i]) for i in range(procs)]
    workers = [ctx.Process(target=_clients, args=(port, starts[i], shares[i], n, rounds, mode, out))
               for i in range(procs)]
    for w in workers:
        w.start()
    control = dist.TCPStore(HOST, port, is_master=False, timeout=timedelta(seconds=600))
    server_cpu = []
    for r in range(rounds):
        while int(control.add(f"ready/{r}", 0)) < n:
            time.sleep(0.005)
        time.sleep(0.02)  # the last one's wait reaches the server (not timed)
        before = _cpu(server.pid)
        control.set(f"go/{r}", "1")
        while int(control.add(f"done/{r}", 0)) < n:
            time.sleep(0.005)
        server_cpu.append(_cpu(server.pid) - before)
    results = [out.get() for _ in workers]
    for w in workers:
        w.join()
    stop.set()
    server.join()
    spans = []
    for r in range(rounds):
        pairs = [p for res in results for p in res[r]]
        spans.append(max(e for _, e in pairs) - min(b for b, _ in pairs))
    return {"median_ms": statistics.median(spans) * 1e3, "p90_ms": sorted(spans)[int(0.9 * len(spans))] * 1e3,
            "server_cpu_ms": statistics.fmean(server_cpu) * 1e3}


def _cpu(pid: int) -> float:
    """A process's CPU time so far (user + system), from /proc."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()  # noqa: SIM115
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="8,64,256,1000")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--modes", default="publish,rollcall")
    parser.add_argument("--port", type=int, default=29651)
    args = parser.parse_args()
    print(f"store load of triage.health.check: a TCPStore server, N clients in {args.procs} processes, "
          f"{args.rounds} rounds; load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    print("mode      clients   makespan median   p90 (ms)   server CPU per round (ms; the control's polling too)")
    for mode in args.modes.split(","):
        for n in (int(c) for c in args.clients.split(",")):
            m = _measure(n, args.rounds, args.procs, mode, args.port)
            print(f"{mode:9} {n:7} {m['median_ms']:17.2f} {m['p90_ms']:10.2f} {m['server_cpu_ms']:12.2f}",
                  flush=True)
            args.port += 1


if __name__ == "__main__":
    main()
