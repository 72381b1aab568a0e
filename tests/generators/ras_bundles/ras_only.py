"""Builders of the RAS-only bundles: one world communicator (a data-parallel job), snapshots only."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from generators import rasgen
from generators.rasgen import Process, Snapshot

from .truth import Built, iso, snapshot_files, truth

T0 = 1_768_187_640  # 2026-01-12 03:14:00 UTC: the RAS-only jobs' clock


def ips(nodes: int, first: int = 210) -> list[str]:
    """The RAS-only jobs' node addresses (172.16.64.210, .211, …)."""
    return [f"172.16.64.{first + i}" for i in range(nodes)]


def comm_hash(seed: int, what: str) -> int:
    return random.Random(f"{seed}:{what}").getrandbits(64)  # noqa: S311 - reproducible ids


def _job(nodes: int, gpus: int, seed: int) -> list[Process]:
    return rasgen.processes(ips(nodes), gpus=gpus, seed=seed)


def dead_process(*, version: str, nodes: int, gpus: int, culprit: int, ops: int, bcast: int,
                 died_s: float, seed: int) -> Built:
    procs = _job(nodes, gpus, seed)
    # the others launched the collective the dead process never joined (it reports nothing)
    world = rasgen.world(procs, comm_hash(seed, "world"), Broadcast=bcast, AllReduce=ops)
    t = T0 + died_s + 181.734112
    snap = Snapshot(time=t, version=version, processes=procs, comms=[world],
                    dead=frozenset({procs[culprit].pid}), seconds=0.02)
    files = snapshot_files([snap], "text")
    return Built(files, truth("diagnosed", "execution", "crashed_process", [culprit], [procs[culprit]],
                              [snap], "text", files, world_hash=f"{world.hash:016x}",
                              dead_pids=[procs[culprit].pid], survivors_launched=ops))


def unresponsive_then_dead(*, version: str, nodes: int, gpus: int, culprit: int, ops: int,
                           bcast: int, after_s: Sequence[float], seed: int, verbose: bool) -> Built:
    procs = _job(nodes, gpus, seed)
    world = rasgen.world(procs, comm_hash(seed, "world"), Broadcast=bcast, AllReduce=ops)
    gone = procs[culprit]
    stop = T0 + 3600.0  # the process stops answering (RAS declares it dead after 60 s)
    snaps = []
    for i, after in enumerate(after_s):
        t = stop + after + 0.218733 * (i + 1)
        dead = after >= 60.0
        snaps.append(Snapshot(
            time=t, version=version, processes=procs, comms=[world], verbose=verbose,
            unresponsive=frozenset() if dead else frozenset({gone.pid}),
            dead=frozenset({gone.pid}) if dead else frozenset(),
            timeouts=0 if dead else 1, seconds=0.03 if dead else 5.012,
        ))
    files = snapshot_files(snaps, "text")
    # ncclras -m all > ras-monitor.log 2>&1, started on the first node before the process vanished
    mon = rasgen.MONITOR_BANNER
    mon += rasgen.monitor_line(stop + 60.4, "PEER_DEAD", gone)
    files[f"ras/ras-monitor-{rasgen.stamp(stop - 300.0)}Z.log"] = mon
    # Not answering, then dead: it stopped (a process that dies closes its RAS connections at once).
    return Built(files, truth("diagnosed", "execution", "hung_process", [culprit], [gone], snaps,
                              "text", files, extra_formats=["ras-monitor-2.29"],
                              world_hash=f"{world.hash:016x}", unresponsive_first=gone.pid,
                              stopped_answering=iso(stop)))


def stragglers(*, version: str, nodes: int, gpus: int, behind: Sequence[int], ops: int, lag: int,
               bcast: int, every_s: float, n: int, seed: int) -> Built:
    procs = _job(nodes, gpus, seed)
    world = rasgen.world(procs, comm_hash(seed, "world"), Broadcast=bcast, AllReduce=ops)
    rasgen.with_counts(world, behind, AllReduce=ops - lag)
    snaps = [Snapshot(time=T0 + 7200.0 + every_s * i + 0.40071 * (i + 1), version=version,
                      processes=procs, comms=[world]) for i in range(n)]
    files = snapshot_files(snaps, "text")
    return Built(files, truth("diagnosed", "execution", "hung_process", list(behind),
                              [procs[r] for r in behind], snaps, "text", files,
                              majority_count=ops, behind_count=ops - lag))


def transient(*, version: str, nodes: int, gpus: int, plan: Sequence[dict[str, Any]], bcast: int,
              seed: int, verbose: bool) -> Built:
    procs = _job(nodes, gpus, seed)
    h = comm_hash(seed, "world")
    snaps = []
    for i, step in enumerate(plan):
        world = rasgen.world(procs, h, Broadcast=bcast, AllReduce=step["ops"])
        for r, ops in step.get("odd", {}).items():
            rasgen.with_counts(world, [int(r)], AllReduce=ops)
        snaps.append(Snapshot(time=T0 + 600.0 + step["at_s"] + 0.0913 * (i + 1), version=version,
                              processes=procs, comms=[world], verbose=verbose))
    files = snapshot_files(snaps, "text")
    return Built(files, truth("no_failure", "unknown", "unknown", [], [], snaps, "text", files))


def minority_ahead(*, version: str, nodes: int, gpus: int, ahead: int, ops: int, bcast: int,
                   every_s: float, n: int, seed: int) -> Built:
    procs = _job(nodes, gpus, seed)
    world = rasgen.world(procs, comm_hash(seed, "world"), Broadcast=bcast, AllReduce=ops)
    rasgen.with_counts(world, [ahead], AllReduce=ops + 1)
    snaps = [Snapshot(time=T0 + 9000.0 + every_s * i + 0.7141 * (i + 1), version=version,
                      processes=procs, comms=[world], seconds=0.012) for i in range(n)]
    files = snapshot_files(snaps, "text")
    return Built(files, truth("inconclusive", "execution", "hung_process", [], [], snaps, "text", files,
                              ahead_rank=ahead, ahead_count=ops + 1, majority_count=ops))


def transition(*, version: str, nodes: int, gpus: int, initializing: Sequence[int],
               finalizing: Sequence[int], destroyed: Sequence[int], ops: int, bcast: int, seed: int,
               verbose: bool) -> Built:
    procs = _job(nodes, gpus, seed)
    h = comm_hash(seed, "world")
    start = T0 + 1800.0
    # 1. start-up: some ranks finished ncclCommInitRank and launched the first barrier all-reduce
    up = rasgen.world(procs, h, AllReduce=1)
    for r in initializing:
        up.ranks[r].init_state = rasgen.IN_PROGRESS
        up.ranks[r].counts = rasgen.counts()
    # 2. training
    busy = rasgen.world(procs, h, Broadcast=bcast, AllReduce=ops)
    # 3. destroy_process_group(): some ranks are done with the communicator (their process still
    # answers: NOCOMM), some are in ncclCommFinalize, the others not there yet
    end = rasgen.world(procs, h, Broadcast=bcast, AllReduce=ops + 3)
    for r in finalizing:
        end.ranks[r].finalize_called = True
    for r in destroyed:
        end.ranks[r].member = False
    snaps = [
        Snapshot(time=start + 4.311204, version=version, processes=procs, comms=[up], verbose=verbose),
        Snapshot(time=start + 64.902117, version=version, processes=procs, comms=[busy], verbose=verbose),
        Snapshot(time=start + 5430.520034, version=version, processes=procs, comms=[end],
                 verbose=verbose),
    ]
    files = snapshot_files(snaps, "text")
    return Built(files, truth("no_failure", "unknown", "unknown", [], [], snaps, "text", files,
                              initializing=list(initializing), finalizing=list(finalizing),
                              destroyed=list(destroyed)))


def json_dead(*, version: str, nodes: int, gpus: int, culprit: int, ops: int, bcast: int,
              after_s: Sequence[float], seed: int) -> Built:
    procs = _job(nodes, gpus, seed)
    world = rasgen.world(procs, comm_hash(seed, "world"), Broadcast=bcast, AllReduce=ops)
    gone = procs[culprit]
    stop = T0 + 4000.0
    snaps = []
    for i, after in enumerate(after_s):
        dead = after >= 60.0
        snaps.append(Snapshot(
            time=stop + after + 0.5517 * (i + 1), version=version, processes=procs, comms=[world],
            cuda="12.9", runtime=12090, driver=12090,
            unresponsive=frozenset() if dead else frozenset({gone.pid}),
            dead=frozenset({gone.pid}) if dead else frozenset(),
            timeouts=0 if dead else 1, seconds=0.004 if dead else 5.003,
        ))
    files = snapshot_files(snaps, "json")
    return Built(files, truth("diagnosed", "execution", "hung_process", [culprit], [gone], snaps,
                              "json", files, world_hash=f"0x{world.hash:x}"))
