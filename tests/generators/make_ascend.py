"""Regenerate the Ascend/HCCL scenario bundles with generators/ascendgen.

Each bundle is ``tests/fixtures/ascend-<name>/logs/…`` (the servers' ``~/ascend/log`` trees and/or
the training screen output) plus ``expected.yaml`` (tests/schemas/expected.schema.json): ``expect``,
the verdict triage must give (derived from the truth, with the principle that must decide from
PRINCIPLES below), ``spec``, the generator's input, and ``truth``, what the generator injected
(phase, category, culprit, the branch of reasoning that should find it, who is who, the files
written).  From ``tests/`` (or with ``PYTHONPATH=tests`` from the repository root):

    python -m generators.make_ascend            # rewrite every bundle
    python -m generators.make_ascend NAME ...   # only these
    python -m generators.make_ascend --check    # regenerate in memory, compare
    python -m generators.make_ascend --list     # names, sizes, truths
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from generators import ascendgen, bundle_cli
from generators.ascendgen import Spec

REPO = Path(__file__).resolve().parents[2]

FIXTURES = REPO / "tests" / "fixtures"
MADE_BY = "tests/generators/make_ascend.py"
SHIFTED = (4, 5, 6, 7, 0, 1, 2, 3)  # ASCEND_RT_VISIBLE_DEVICES=4,5,6,7,0,1,2,3

# name -> (spec, one-line description)
BUNDLES: list[tuple[Spec, str]] = [
    (
        Spec("ascend-init-missing-rank5", "init-missing", culprit=5, cann="8.5", launcher="shell", seed=101),
        "1 x 8, CANN 8.5, one screen file per rank (shell launcher). Rank 5 dies on a missing data "
        "shard before creating the communicator; after HCCL_CONNECT_TIMEOUT the root lists 7 of 8 "
        "connected ranks and the agents print Failed to connect agent[5,] (EI0015 on screen).",
    ),
    (
        Spec("ascend-init-agent-rank6", "init-agent", culprit=6, servers=2, npus=4, cann="8.0", seed=102),
        "2 x 4, CANN 8.0. Rank 6 (2nd server) picks an unreachable NIC: its agent cannot connect to "
        "the root (topo exchange agent get socket timeout, connect server[...] failed); the root "
        "misses it and the other agents are told Failed to connect agent[6,].",
    ),
    (
        Spec("ascend-init-ranktable-rank3", "init-ranktable", culprit=3, cann="7.0", rank_table=True, seed=103),
        "1 x 8, CANN 7.0, rank table mode (rank_table.json in the bundle). Rank 3's RANK_TABLE_FILE "
        "path is not valid (EI0004) and it exits in init; the seven others create the communicator "
        "and then time out building links at the first all-reduce (EI0006 cascade toward rank 3).",
    ),
    (
        Spec("ascend-ei0006-silent-rank2", "ei0006-silent", culprit=2, cann="7.0", seed=104),
        "1 x 8, CANN 7.0. Rank 2 hangs in its data pipeline before the first all-reduce and logs "
        "nothing; every other rank reports EI0006 (wait socket establish timeout, LINK_ERROR_INFO, "
        "Transport init error) toward its ring neighbour on the way to rank 2.",
    ),
    (
        Spec("ascend-link-chain-rank6", "link-chain", culprit=6, cann="8.0", subgroup=(4, 5, 6, 7),
             visible=SHIFTED, seed=105),
        "1 x 8, CANN 8.0, devices permuted (ASCEND_RT_VISIBLE_DEVICES=4-7,0-3). In the 4-rank "
        "sub-communicator group_name_1 (global ranks 4-7) rank 6 (group rank 2) never reaches the "
        "first all-reduce; ranks 4, 5, 7 time out building links in a chain (remoteUserrank in group "
        "ranks: 0->1->2, 3->2) that ends at it; ranks 0-3 are not in that group and report nothing.",
    ),
    (
        Spec("ascend-link-cycle-rank2-rank6", "link-cycle", culprit=2, peer=6, servers=2, npus=4,
             cann="8.5", server_naming="ip", seed=106),
        "2 x 4, CANN 8.5, server folders named by IP. The RoCE link between rank 2 (10.90.42.160 "
        "device 2) and rank 6 (10.90.42.161 device 2) is broken: both wait on each other (a cycle) "
        "and print the CONNECT TIMEOUT DETECT RESULT; the others' link waits cascade into the cycle.",
    ),
    (
        Spec("ascend-tls-rank4", "tls", culprit=4, cann="8.0", seed=107),
        "1 x 8, CANN 8.0. Device of rank 4 has TLS enabled (TLS SWITCH (1) in its device log, "
        "TlsStatus ENABLE in its LINK_ERROR_INFO), the seven others have it off: all eight time out "
        "building links (EI0006); rank 4 is the TLS minority.",
    ),
    (
        Spec("ascend-ei0005-tag-rank3", "ei0005", culprit=3, cann="8.5", seed=108),
        "1 x 8, CANN 8.5. Rank 3 calls all_gather where the others call all_reduce: its neighbours "
        "and rank 3 print CMD information tag/cmdType/op check fail and EI0005; the remaining ranks "
        "time out building links (EI0006).",
    ),
    (
        Spec("ascend-ei0002-silent-rank5", "ei0002-silent", culprit=5, cann="6.3", rank_prefix=False,
             seed=109),
        "1 x 8, CANN 6.3 ([commId][rank] in HCCL lines, bare EI0002 on screen, no [rankN]: "
        "prefixes). Rank 5's host process hangs mid-training; 30 min later every other rank reports "
        "EI0002 (Notify wait timeout, task exception records with remote rank and index).",
    ),
    (
        Spec("ascend-heartbeat-stuck-rank1", "heartbeat", culprit=1, cann="8.5", visible=SHIFTED,
             seed=110),
        "1 x 8, CANN 8.5 (no-space HeartbeatAbnormal lines), devices permuted: rank 1 runs on "
        "physical device 5. Its host process is stuck; the cluster heartbeat names [10.90.42.160/5] "
        "(Stuck Occurred, crimer rank ... status[STUCK]) and the others time out with EI0002.",
    ),
    (
        Spec("ascend-cqe-link-rank5", "cqe", culprit=5, peer=1, servers=2, npus=4, cann="8.5",
             seed=111),
        "2 x 4, CANN 8.5, all-to-all training. The RoCE port of rank 5 (10.90.42.161 device 1) "
        "fails: error CQEs (status 12) on rank 5 toward rank 1 and on every rank of the first "
        "server toward rank 5's device IP; EI0013 on screen; its server mates see Error cqe Occurred.",
    ),
    (
        Spec("ascend-late-rank4", "late", culprit=4, cann="7.0", seed=112),
        "1 x 8, CANN 7.0, HCCL_EXEC_TIMEOUT=300. Rank 4 reaches a gradient all-reduce 420 s after "
        "the others (slow evaluation pass): they time out with EI0002 first, rank 4 times out last; "
        "the spread of the timeouts (420 s) is larger than the timeout.",
    ),
    (
        Spec("ascend-ej0001-rank7", "ej0001", culprit=7, cann="7.0", seed=113),
        "1 x 8, CANN 7.0. A process of the previous job still holds rank 7's device: HCCP init "
        "fails (EJ0001, TDT DeviceMsgProc errcode[EJ0001]) and rank 7 exits in init; the root "
        "lists it missing after HCCL_CONNECT_TIMEOUT.",
    ),
    (
        Spec("ascend-no-failure", "none", servers=2, npus=4, cann="8.0", seed=114),
        "2 x 4, CANN 8.0. A clean run: init, training steps, communicator destroy; no error.",
    ),
    (
        Spec("ascend-16r-2srv-heartbeat-lost-rank13", "heartbeat-lost", culprit=13, servers=2, npus=8,
             cann="8.0", server_naming="ip", rank_table=True, visible=SHIFTED, permute_servers=(1,),
             noise=3, seed=115),
        "2 x 8 = 16 ranks, CANN 8.0, rank table mode, server folders named by IP, devices permuted "
        "on the second server. Rank 13 (10.90.42.161, physical device 1) is killed by the OOM "
        "killer mid-training and logs nothing; 30 min later the 15 others fail with EI0002 whose "
        "heartbeat block names Cluster Exception Location [10.90.42.161/1] (Heartbeat Lost).",
    ),
    (
        Spec("ascend-screen-only-ei0002-rank6", "ei0002-silent", culprit=6, servers=2, npus=4,
             cann="6.3", layout="screen", seed=116),
        "2 x 4, CANN 6.3, only the two servers' training screen output was collected. Rank 6 hangs; "
        "the others print EI0002 and the torch_npu WorkHCCL watchdog timeout; rank 6 prints nothing.",
    ),
    (
        Spec("ascend-plogs-only-ei0005-count-rank1", "ei0005", culprit=1, cann="5.1", layout="plogs",
             seed=117),
        "1 x 8, CANN 5.1 flat layout (plog/, device-<id>/), plogs only, no screen output. Rank 1 "
        "all-gathers 8320 elements where the others use 16512: CMD information count check fail "
        "on rank 1 and its neighbours, the others time out building links.",
    ),
    # ---- "must lose" bundles: truth.loser_branch's evidence is present and names
    # truth.loser_culprit_ranks; stronger evidence (truth.branch) names the culprit.
    (
        Spec("ascend-lose-init-root-rank0", "lose-init-root", culprit=0, servers=2, npus=4, cann="8.0",
             seed=201),
        "2 x 4, CANN 8.0. HCCL_SOCKET_IFNAME is unset on the first server, so the root (rank 0) "
        "advertises its docker0 bridge address 172.17.0.1 (get host ip ... ifname[docker0]; every "
        "rank's Entry-HcclCommInitRootInfoInner says rootinfo: host ip[172.17.0.1]). The agents of "
        "its own server reach that address locally; the four of the second server cannot "
        "(TopoExchangeAgent: connect server[172.17.0.1 : 60000] failed). LOSES: the root's "
        "connected-vs-needed list (4 of 8) and Failed to connect agent[4,5,6,7,] name ranks 4-7, "
        "but they are healthy; WINS: the agents' failed connects name the address they dialled, "
        "which is rank 0's unroutable docker0 address (fix HCCL_SOCKET_IFNAME / HCCL_IF_IP there).",
    ),
    (
        Spec("ascend-lose-init-agent-rank0", "lose-init-agent", culprit=0, cann="7.0", launcher="shell",
             seed=202),
        "1 x 8, CANN 7.0, one screen file per rank (shell launcher: nobody tears the job down). A "
        "process of the previous job still holds the device of rank 0, the root: HCCP init fails "
        "(EJ0001, TDT DeviceMsgProc errcode[EJ0001]) and rank 0 exits before its topo exchange "
        "server runs. LOSES: all seven agents time out with TopoExchangeAgent: connect server[...] "
        "failed, so agent-connect reasoning blames ranks 1-7 (and no root list exists to read); "
        "WINS: EJ0001 on rank 0 names the stale process on its device, and the server they all "
        "failed to reach is rank 0's.",
    ),
    (
        Spec("ascend-lose-ei0006-rank5", "lose-ei0006", culprit=5, peer=0, cann="8.0", seed=203),
        "1 x 8, CANN 8.0. Device of rank 5 has TLS enabled (TLS SWITCH (1), TlsStatus ENABLE), the "
        "others have it off: every rank that reaches the first all-reduce times out building links "
        "(EI0006). Rank 0 writes its run config and TensorBoard writer first and enters the "
        "all-reduce 6 s late, so its connect timer would fire last; torchrun SIGTERMs it (Sending "
        "process ... closing signal SIGTERM) when the first rank exits. LOSES: rank 0 is the only "
        "rank without EI0006, so non-reporter reasoning names it, but it was torn down and its "
        "TLS switch is 0 like the others'; WINS: the TLS minority, rank 5.",
    ),
    (
        Spec("ascend-lose-chain-end-rank3", "lose-chain-end", culprit=3, cann="8.0", seed=204),
        "1 x 8, CANN 8.0. Rank 3 calls all_gather where the others call all_reduce: rank 3 and "
        "its neighbours 2 and 4 fail the link handshake with CMD information tag/cmdType/op "
        "check fail (EI0005) and wait on nobody; the remaining ranks time out building links "
        "(EI0006, Transport init error) toward them. LOSES: the remoteUserrank chains end at "
        "ranks 2 and 4; WINS: the parameter comparison, in which rank 3 disagrees with both of "
        "its neighbours while they agree with each other.",
    ),
    (
        Spec("ascend-lose-cycle-rank3", "lose-cycle", culprit=3, servers=2, npus=4, cann="8.0", seed=205),
        "2 x 4, CANN 8.0. Device of rank 3 (first server) has TLS enabled, the others off: all "
        "eight time out building links (EI0006). Rank 3 fails with its ring successor, rank 4 on "
        "the second server, which waits back on rank 3. LOSES: the wait graph has a cycle 3<->4 "
        "across servers, which reads as a broken RoCE link between them; WINS: the TLS minority "
        "(TLS SWITCH (1) and TlsStatus ENABLE on rank 3 only).",
    ),
    (
        Spec("ascend-lose-tls-rank6", "lose-tls", culprit=6, peer=1, cann="7.0", subgroup=(4, 5, 6, 7),
             seed=206),
        "1 x 8, CANN 7.0. In the sub-communicator group_name_1 (global ranks 4-7) rank 6 never "
        "reaches the first all-reduce; ranks 4, 5, 7 time out building links in a chain (group "
        "ranks) that ends at it. The device of rank 1, outside that group, was re-provisioned with "
        "TLS enabled (TLS SWITCH (1) in its device log): it never builds a link, since ranks 0-3 "
        "block in a world all-reduce and torchrun tears them down. LOSES: TLS-minority reasoning "
        "names rank 1; WINS: the wait chain in group_name_1, which ends at rank 6.",
    ),
    (
        Spec("ascend-lose-ei0002-rank2", "lose-ei0002", culprit=2, peer=7, cann="8.0", noise=4, seed=207),
        "1 x 8, CANN 8.0. Rank 2's host process is stuck mid-training; the cluster heartbeat names "
        "its device (Stuck Occurred, crimer rank ... status[STUCK]) and the ranks time out with "
        "EI0002. Rank 7 logs the loss and writes TensorBoard summaries, so it enters the all-reduce "
        "4 s late and its own timer would fire 4 s after the others'; torchrun SIGTERMs it first. "
        "LOSES: two ranks have no EI0002 (2 and 7), so non-reporter reasoning names both; WINS: "
        "the heartbeat's Cluster Exception Location, rank 2 alone (rank 7's run plog even carries "
        "the crimer line naming rank 2's device).",
    ),
    (
        Spec("ascend-lose-heartbeat-rank5", "lose-heartbeat", culprit=5, peer=1, servers=2, npus=4,
             cann="8.0", launcher="shell", noise=4, seed=208),
        "2 x 4, CANN 8.0, all-to-all training, shell launcher (one screen file per rank, no "
        "teardown). The RoCE port of rank 5 fails: every rank of the first server gets error CQEs "
        "toward rank 5's device IP, rank 5 toward rank 1; they print EI0013 and exit, rank 1 "
        "first. Rank 5's server mates see no CQE; 30 s after rank 1 exited its heartbeat is LOST, "
        "and their EI0002 (30 min later) carries Cluster Exception Location = rank 1's device. "
        "LOSES: the heartbeat names rank 1, which only exited after its own error CQE; WINS: the "
        "error-CQE link map, whose most-named endpoint is rank 5's device, and the CQEs came first.",
    ),
    (
        Spec("ascend-lose-cqe-rank4", "lose-cqe", culprit=4, peer=3, servers=2, npus=4, cann="8.0", noise=4,
             seed=209),
        "2 x 4, CANN 8.0, ring all-reduce, torchrun on each server. Rank 4 (second server) is "
        "SIGKILLed by the OOM killer: its plog just stops, the second server's torchrun reports "
        "exitcode -9 (Signal 9 (SIGKILL)) and SIGTERMs ranks 5-7. On the first server the "
        "heartbeat reports rank 4's device LOST 30 s later; 4 s after that rank 3's RDMA writes to "
        "it run out of retries (error CQE status 12, EI0013 naming rank 4's device), rank 3 exits "
        "and its torchrun tears down 0-2. LOSES: error-CQE reasoning reads a faulty link 3<->4 "
        "(network_fault); WINS: the heartbeat (LOST = process exited) plus the SIGKILL: rank 4's "
        "process died first, the CQE is its consequence.",
    ),
    (
        Spec("ascend-lose-spread-rank1", "lose-spread", culprit=1, servers=2, npus=4, cann="7.0", noise=4,
             seed=210),
        "2 x 4, CANN 7.0, HCCL_EXEC_TIMEOUT=300. Rank 1's host process hangs mid-training; the seven "
        "others time out with EI0002 at the same moment. The second server has no NTP: its clock "
        "runs 7 min ahead (its init and step lines are 420 s later than the first server's for the "
        "same events), so its EI0002 stamps are 420 s later. LOSES: the spread of the timeout "
        "stamps (420 s) exceeds HCCL_EXEC_TIMEOUT, so last-device reasoning names the last rank "
        "of the second server; WINS: rank 1 is the only rank without EI0002.",
    ),
    (
        Spec("ascend-lose-ej0001-rank3", "lose-ej0001", culprit=3, peer=6, cann="8.0", noise=3, seed=211),
        "1 x 8, CANN 8.0, torchrun --max-restarts=1 with LOGLEVEL=INFO (the agent's restart lines are on "
        "the console). Attempt 0: rank 3's host process is stuck mid-training; the heartbeat names its "
        "device (Stuck Occurred, crimer rank ... status[STUCK]) and 30 min later the seven others time out "
        "with EI0002. The first of them to exit makes the agent SIGTERM the rest, rank 3 included, and "
        "restart the worker group (restart_count=1: new pids, a new communicator). Attempt 1: rank 6's "
        "device is still held by rank 6's attempt-0 process (rs_init ... is occupied by pid <that pid>, "
        "SIGTERMed 23 s before), so HCCP cannot start there: EJ0001, rank 6 exits, and torchrun gives up "
        "with a ChildFailedError whose root cause is rank 6. LOSES: EJ0001 (and torchrun's final root "
        "cause) name rank 6, but the process holding its device is the job's own first attempt, stopped "
        "because of rank 3; WINS: the first attempt's heartbeat, the job's first failure: rank 3.",
    ),
    (
        Spec("ascend-lose-ei0005-rank5", "lose-ei0005", culprit=5, servers=2, npus=4, cann="7.0",
             launcher="shell", seed=212),
        "2 x 4, CANN 7.0, shell launcher (one screen file per rank). Rank 5 hangs reading its pretrained "
        "weights from a hung shared mount (loading ... and no loaded line) and never reaches DDP's "
        "broadcast of the weights. HCCL builds an operator's links hierarchically: with the server mates "
        "and with the rank of the same local index on the other server. Rank 5's link partners (1, 4, 6, "
        "7) wait for it inside the broadcast's link setup; ranks 0, 2, 3, which do not link with rank 5, "
        "build all their broadcast links, go on to the first gradient all-reduce and meet the waiting "
        "partners there: every such pair fails HCCL's consistency check (CMD information tag/cmdType/op "
        "check fail, EI0005). LOSES: the odd operator out among the reporters is AllReduce, ranks 0, 2, 3 "
        "(3 against the 4 in Broadcast), but they had only finished the broadcast's setup and moved on; "
        "WINS: rank 5 is the only rank without an error, it never entered the broadcast every other rank "
        "entered, and the ranks still in it are exactly its link partners.",
    ),
    (
        Spec("ascend-lose-init-store-rank0", "lose-init-store", culprit=0, peer=6, servers=2, npus=4,
             cann="8.5", launcher="shell", seed=213),
        "2 x 4, CANN 8.5, shell launcher: rank 0's process hosts the c10d store (MASTER_ADDR:MASTER_PORT) "
        "and is the HCCL root. A process of the previous job still holds rank 0's device: HCCP init fails "
        "(EJ0001, TDT DeviceMsgProc errcode[EJ0001]) just after rank 0 published the root info, and rank 0 "
        "exits, taking the store with it. The six ranks that had fetched the root info time out connecting "
        "to the root (TopoExchangeAgent: connect server[...] failed, EI0015). Rank 6 rebuilt its sample "
        "index cache between init_process_group and its first collective, and asks the store for the root "
        "info 40 s after the others (inside HCCL_CONNECT_TIMEOUT): store->get('0') got error: Connection "
        "reset by peer (ERR02005). LOSES: rank 6 is the one rank whose own init step failed (a store "
        "error, no HCCL line at all); WINS: EJ0001 on rank 0, the first failure, whose exit took the store "
        "and the negotiation root with it.",
    ),
]
SPECS: dict[str, Spec] = {s.name: s for s, _ in BUNDLES}
DESCRIPTIONS: dict[str, str] = {s.name: d for s, d in BUNDLES}


# The principle that must decide each bundle (the reasoning the bundle was built for; None: none may).
PRINCIPLES: dict[str, str | None] = {
    "ascend-16r-2srv-heartbeat-lost-rank13": "named-by-tool",  # HCCL's Cluster Exception Location
    "ascend-cqe-link-rank5": "named-by-tool",  # the heartbeat's Error cqe location, the CQE endpoint
    "ascend-ei0002-silent-rank5": "wait-chain",  # the notify waits' remote ranks end at the silent rank
    "ascend-ei0005-tag-rank3": "parameter-mismatch",
    "ascend-ei0006-silent-rank2": "wait-chain",
    "ascend-ej0001-rank7": "named-by-tool",  # the root's missing agent; EJ0001 gives the category
    "ascend-heartbeat-stuck-rank1": "named-by-tool",
    "ascend-init-agent-rank6": "named-by-tool",
    "ascend-init-missing-rank5": "named-by-tool",
    "ascend-init-ranktable-rank3": "first-failure",
    "ascend-late-rank4": "late-arrival",
    "ascend-link-chain-rank6": "wait-chain",  # followed through group_name_1's ranks
    "ascend-link-cycle-rank2-rank6": "device-link",
    "ascend-no-failure": None,
    "ascend-plogs-only-ei0005-count-rank1": "parameter-mismatch",
    "ascend-screen-only-ei0002-rank6": "silent-rank",
    "ascend-tls-rank4": "tls-mismatch",
    # Bundles where a principle's evidence is there and points at the wrong rank: it must lose.
    "ascend-lose-chain-end-rank3": "parameter-mismatch",  # beats the wait chain
    "ascend-lose-cqe-rank4": "named-by-tool",  # the heartbeat (LOST) beats the CQE endpoint count
    "ascend-lose-cycle-rank3": "tls-mismatch",  # beats the cycle of waits
    "ascend-lose-ei0005-rank5": "silent-rank",  # the one rank with no error beats the odd operator out
    "ascend-lose-ei0002-rank2": "named-by-tool",  # the heartbeat beats the silent rank
    "ascend-lose-ei0006-rank5": "tls-mismatch",  # beats the silent rank
    "ascend-lose-ej0001-rank3": "named-by-tool",  # the first attempt's heartbeat beats the restart's EJ0001
    "ascend-lose-heartbeat-rank5": "cqe-endpoint",  # the CQEs came first: beats the heartbeat
    "ascend-lose-init-agent-rank0": "first-failure",  # EJ0001 beats the agent's failed connect
    "ascend-lose-init-root-rank0": "unreachable-root",  # beats the root's list of missing ranks
    "ascend-lose-init-store-rank0": "first-failure",  # EJ0001 on the root beats a late rank's store error
    "ascend-lose-spread-rank1": "wait-chain",  # the silent end beats the last to time out
    "ascend-lose-tls-rank6": "wait-chain",  # beats a TLS difference outside the failing group
}
# Where the bundle cannot show what the truth knows.
CATEGORY_UNSETTLED: dict[str, str] = {
    "ascend-screen-only-ei0002-rank6": "rank 6 left no line at all in the screen output: whether it hung or "
                                       "died is not in the bundle (the verdict says unknown)",
}


def expect_of(spec: Spec, truth: dict[str, Any]) -> dict[str, Any]:
    """The verdict the bundle must get: the truth's, decided by the principle it was built for."""
    if spec.name not in PRINCIPLES:
        raise KeyError(f"{spec.name}: add the principle that must decide it to PRINCIPLES")
    if truth["fault"] == "none":
        return {"status": "no_failure", "principle": PRINCIPLES[spec.name]}
    out: dict[str, Any] = {"status": "diagnosed", "phase": truth["phase"]}
    if spec.name not in CATEGORY_UNSETTLED:
        out["category"] = truth["category"]
    if truth["branch"] == "wait_chain_cycle":  # the pair of devices that could not connect
        out["culprits"] = [{"kind": "link", "ranks": sorted(e["rank"] for e in truth["link"]["ends"])}]
    else:
        out["culprits"] = [{"kind": "rank", "rank": r} for r in truth["culprit_ranks"]]
    out["culprits_exact"] = True
    out["principle"] = PRINCIPLES[spec.name]
    out["min_confidence"] = 0.6
    if spec.name in CATEGORY_UNSETTLED:
        out["unchecked"] = {"category": CATEGORY_UNSETTLED[spec.name]}
    return out


def expected_yaml(spec: Spec, truth: ascendgen.Truth) -> str:
    facts = ascendgen.truth_dict(truth)
    data: dict[str, Any] = {
        "description": DESCRIPTIONS[spec.name],
        "made_by": MADE_BY,
        "expect": expect_of(spec, facts),
        "spec": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(spec).items()},
        "truth": facts,
    }
    return yaml.safe_dump(data, sort_keys=False, width=110, allow_unicode=True)


def bundle_texts(spec: Spec) -> dict[str, str]:
    """Relative path (under the bundle folder) -> content, built in memory."""
    plan = ascendgen.make_plan(spec)
    logs = ascendgen.render(plan)
    truth = ascendgen.plan(spec)
    out = {f"logs/{k}": v for k, v in logs.items()}
    out["expected.yaml"] = expected_yaml(spec, truth)
    return out


def write(spec: Spec) -> int:
    return bundle_cli.write_texts(FIXTURES / spec.name, bundle_texts(spec))


def committed(spec: Spec) -> dict[str, str]:
    dest = FIXTURES / spec.name
    return {
        p.relative_to(dest).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(dest.rglob("*"))
        if p.is_file()
    }


def differences(spec: Spec) -> list[str]:
    fresh, have = bundle_texts(spec), committed(spec)
    diffs = [f"missing {x}" for x in sorted(set(fresh) - set(have))]
    diffs += [f"extra {x}" for x in sorted(set(have) - set(fresh))]
    diffs += [f"differs {x}" for x in sorted(set(fresh) & set(have)) if fresh[x] != have[x]]
    return diffs


def _describe(spec: Spec) -> str:
    t = ascendgen.plan(spec)
    d = FIXTURES / spec.name
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) if d.exists() else 0
    return (f"{size / 1e3:8.1f} kB  {t.phase or '-':13} {t.category or '-':19} "
            f"culprits={t.culprit_ranks} branch={t.branch or '-'}")


def main(argv: list[str] | None = None) -> int:
    return bundle_cli.run(
        __doc__ or "", argv, SPECS, write=write, describe=_describe,
        differences=lambda spec: differences(spec) if (FIXTURES / spec.name).is_dir() else ["not generated yet"])


if __name__ == "__main__":
    raise SystemExit(main())
