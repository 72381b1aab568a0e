"""The RAS bundles: each one's name, story, builder and the builder's inputs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .ras_only import (
    dead_process,
    json_dead,
    minority_ahead,
    stragglers,
    transient,
    transition,
    unresponsive_then_dead,
)
from .truth import Built
from .with_logs import subcomm_dead, subcomm_straggler, with_logs


@dataclass
class Scenario:
    name: str
    description: str
    build: Callable[..., Built]
    spec: dict[str, Any]


SCENARIOS: list[Scenario] = [
    Scenario(
        "ras-dead-process",
        "4 nodes x 8 GPUs, one process per GPU, NCCL 2.26.2, one data-parallel communicator (the "
        "world). The process of rank 21 (172.16.64.212, GPU 5) vanished mid-training; three "
        "minutes later one STATUS (not verbose) shows it under DEAD (unreachable via the RAS "
        "network for more than 60 s) and the world communicator INCOMPLETE, its missing rank 21 "
        "named with the same process. The 31 others are RUNNING, stuck at the same operation count "
        "waiting for it. A process RAS cannot reach is gone (a process stuck in Python or in a "
        "kernel keeps its RAS thread answering): rank 21 crashed, during execution.",
        dead_process,
        {"version": "2.26.2", "nodes": 4, "gpus": 8, "culprit": 21, "ops": 18744, "bcast": 3,
         "died_s": 0.0, "seed": 201},
    ),
    Scenario(
        "ras-unresponsive-then-dead",
        "2 nodes x 8, NCCL 2.29.7, VERBOSE STATUS twice, 30 s apart. 40 s after the process of "
        "rank 9 (172.16.64.211, GPU 1) stopped answering, RAS is missing its data: job-level "
        "INCOMPLETE (Missing communicator data from 1 job process), the world communicator "
        "INCOMPLETE with rank 9, and a TIMEOUT while gathering (the 5 s collective leg timeout). "
        "30 s later (past RAS's 60 s) the same process is DEAD. An `ncclras -m all` running on the "
        "first node logged the PEER_DEAD event in between. Rank 9 stopped (hung) during execution: "
        "a process that died would have closed its RAS connections, not stopped answering; the 15 "
        "others wait at the same count.",
        unresponsive_then_dead,
        {"version": "2.29.7", "nodes": 2, "gpus": 8, "culprit": 9, "ops": 5021, "bcast": 2,
         "after_s": [40.0, 70.0], "seed": 202, "verbose": True},
    ),
    Scenario(
        "ras-stragglers-persistent",
        "4 nodes x 8, NCCL 2.27.7, three STATUS 30 s apart. Every snapshot shows the same "
        "AllReduce count MISMATCH: 30 ranks launched up to operation 61230, ranks 18 and 19 "
        "(172.16.64.212, GPUs 2 and 3: both read their shards from the same stalled NFS mount) "
        "stay at 61206, one training step (24 bucket all-reduces) behind. Nobody moves in 60 s: "
        "the job hangs, the 30 wait in the collective the two never launched. The minority behind "
        "is the culprit: ranks 18 and 19 hung during execution.",
        stragglers,
        {"version": "2.27.7", "nodes": 4, "gpus": 8, "behind": [18, 19], "ops": 61230, "lag": 24,
         "bcast": 5, "every_s": 30.0, "n": 3, "seed": 203},
    ),
    Scenario(
        "ras-transient-mismatch",
        "2 nodes x 8, NCCL 2.26.6, VERBOSE STATUS three times, 20 s apart, of a busy healthy job. "
        "The first shows 3 ranks one AllReduce ahead (they launched the next bucket first), the "
        "second one rank one behind (rank 9 mid-backward), the third none: RAS reads launches on "
        "the host, and ranks launch asynchronously. The counts move by ~290 every 20 s on every "
        "rank: nothing is stuck, no failure.",
        transient,
        {"version": "2.26.6", "nodes": 2, "gpus": 8, "bcast": 2, "seed": 204, "verbose": True,
         "plan": [{"at_s": 0.0, "ops": 8120, "odd": {2: 8121, 5: 8121, 14: 8121}},
                  {"at_s": 20.0, "ops": 8410, "odd": {9: 8409}},
                  {"at_s": 40.0, "ops": 8700}]},
    ),
    Scenario(
        "ras-minority-ahead",
        "4 nodes x 8, NCCL 2.28.9, three STATUS 30 s apart, all identical: 31 ranks have launched "
        "up to AllReduce 20640 and rank 12 up to 20641; RAS lists rank 12 (the outlier group) by "
        "process, as in NCCL issue 1911. Counts frozen for 60 s: the job hangs. Rank 12 is not a "
        "culprit: it merely launched the next collective and waits in it for the others. The 31 "
        "never launched operation 20641: they are blocked before it, on something RAS cannot see "
        "(host code, a CPU sync on a collective that did not complete, another process group). "
        "Nothing in the snapshots names which process holds them: the hang in execution is "
        "certain, the culprit is not (inconclusive, no culprit; naming rank 12 is the misreading).",
        minority_ahead,
        {"version": "2.28.9", "nodes": 4, "gpus": 8, "ahead": 12, "ops": 20640, "bcast": 3,
         "every_s": 30.0, "n": 3, "seed": 205},
    ),
    Scenario(
        "ras-init-finalize-transition",
        "2 nodes x 8, NCCL 2.27.7, VERBOSE STATUS at start-up, during training and at shutdown. "
        "At start-up ranks 8-11 are still in ncclCommInitRank (INIT) while the others finished it "
        "and launched the first barrier all-reduce: a status and count MISMATCH. During training "
        "all RUNNING, counts equal. At the end, in destroy_process_group(), ranks 0-7 are in "
        "ncclCommFinalize (FINALIZE), ranks 12 and 13 already destroyed the communicator (their "
        "processes answer without it: NOCOMM) and six still run: a status MISMATCH (2.26+ end "
        "such a block without a blank line). Both are transitions that the next snapshot "
        "resolves: no failure.",
        transition,
        {"version": "2.27.7", "nodes": 2, "gpus": 8, "initializing": [8, 9, 10, 11],
         "finalizing": [0, 1, 2, 3, 4, 5, 6, 7], "destroyed": [12, 13], "ops": 2711, "bcast": 4,
         "seed": 206, "verbose": True},
    ),
    Scenario(
        "ras-json-dead",
        "2 nodes x 8, NCCL 2.28.9, `ncclras -f json` twice. 30 s after the process of rank 4 "
        "(172.16.64.210, GPU 4) stopped answering its world rank is in missing_ranks with "
        "unresponsive true, considered_dead false (timeouts_count 1); 45 s later considered_dead "
        "true. NCCL 2.28.7-2.28.9 write no comma after a missing rank's nvml_dev, so both documents "
        "are invalid JSON (fixed in 2.29.2); a reader has to tolerate it. Rank 4 stopped (hung) "
        "during execution: it stopped answering before RAS declared it dead.",
        json_dead,
        {"version": "2.28.9", "nodes": 2, "gpus": 8, "culprit": 4, "ops": 3301, "bcast": 2,
         "after_s": [30.0, 75.0], "seed": 207},
    ),
    Scenario(
        "ras-224-missing-rank-subcomm",
        "2 nodes x 8, torch 2.5.1 with NCCL 2.25.1, one log per rank (NCCL_DEBUG=INFO), "
        "tensor-parallel groups of 8 (one per node) plus the data-parallel world group. The process "
        "of global rank 13 (gpu-node-02 10.42.0.2, GPU 5) dies silently before its TP all-reduce "
        "(its log just stops); 150 s later STATUS shows it DEAD, the world communicator INCOMPLETE "
        "with `The missing rank: 13` and one 8-rank communicator INCOMPLETE with `The missing "
        "rank: 5`: 2.24/2.25 print communicator ranks and no process. That 5 is the TP rank of "
        "the dead process: its own log's init lines say rank 5 nranks 8 (TP) and rank 13 nranks 16 "
        "(world). In 2.24/2.25 RAS's communicator hash is not the `commId` of the init lines "
        "(different hash functions of the same id); the tie is the dead process (pid, node, GPU) "
        "and the communicator size. Ten minutes after the death the TP peers time out in the TP "
        "group and the rest in the world group. Truth: global rank 13, crashed, execution.",
        subcomm_dead,
        {"gen": {"hosts": 2, "gpus": 8, "era": "2.5", "fault": "subgroup", "culprit": 13,
                 "noise_lines": 50, "layout": "per-rank", "seed": 208, "tp": 8},
         "nccl": [2, 25, 1], "after_death_s": 150.0},
    ),
    Scenario(
        "ras-subcomm-straggler",
        "4 nodes x 8, torch 2.7.1 / NCCL 2.26.2, one log per rank, TP groups of 8 plus the world "
        "group. Rank 21 (gpu-node-03, GPU 5) hangs in Python before its TP all-reduce (alive: RAS "
        "answers). Two STATUS 60 s apart: in the world communicator the whole TP group of ranks "
        "16-23 is one step behind (listed one by one: 8 of 32 ranks), in the TP communicator "
        "`Rank 5 has launched up to operation N` while its 7 peers are at N+1. From 2.26 the "
        "communicator hash RAS prints is the commId of the init lines, so the TP communicator is "
        "the one whose init lines say rank 5 nranks 8 in rank 21's log. Not rank 5 (a TP rank), "
        "not ranks 16-23 (the group waiting for it): global rank 21 hung, during execution.",
        subcomm_straggler,
        {"gen": {"hosts": 4, "gpus": 8, "era": "2.6", "fault": "subgroup", "culprit": 21,
                 "noise_lines": 40, "layout": "per-rank", "seed": 209, "tp": 8},
         "after_s": [60.0, 120.0]},
    ),
    Scenario(
        "ras-with-logs-agree",
        "2 nodes x 8, torch 2.7.1 / NCCL 2.26.2, torchrun logs. Rank 11 (gpu-node-02, GPU 3) "
        "stops in Python before a step's first gradient all-reduce. Two STATUS 60 s apart, during "
        "the hang: 15 ranks launched up to AllReduce N, rank 11 (listed by process, RUNNING, "
        "answering) a step behind, both times. Ten minutes after the hang began the 15 others' "
        "watchdogs time out at the same SeqNum and rank 11 logs nothing: the logs and RAS agree. "
        "Rank 11 hung during execution.",
        with_logs,
        {"gen": {"hosts": 2, "gpus": 8, "era": "2.6", "fault": "silent", "culprit": 11,
                 "noise_lines": 60, "layout": "torchrun", "seed": 210},
         "after_s": [60.0, 120.0], "ras_sees_culprit": True},
    ),
    Scenario(
        "ras-with-logs-disagree",
        "2 nodes x 8, torch 2.7.1 / NCCL 2.26.2, one log per rank. The logs: the 15 other ranks "
        "time out at the same SeqNum and rank 6 (gpu-node-01, GPU 6) logs nothing after its last "
        "step: rank 6 is the culprit by the logs. The STATUS taken four minutes into the hang "
        "says RUNNING and OK everywhere: every rank launched the same collectives (RAS counts "
        "launches, not completions, NCCL issues 1642/1730: a rank stuck inside an operation, its "
        "watchdog wedged in a CUDA call, looks healthy to RAS). Truth: rank 6 hung during "
        "execution; the report must say that RAS and the logs disagree.",
        with_logs,
        {"gen": {"hosts": 2, "gpus": 8, "era": "2.6", "fault": "silent", "culprit": 6,
                 "noise_lines": 60, "layout": "per-rank", "seed": 211},
         "after_s": [240.0], "ras_sees_culprit": False},
    ),
]
BY_NAME: dict[str, Scenario] = {s.name: s for s in SCENARIOS}
