"""The partial inputs: what to cut from which real bundle, and the verdict the cut must give."""

from __future__ import annotations

from .table import (
    CLOSED_RX,
    STORE_WAIT_RX,
    TIMEOUT_RX,
    _all_stderr,
    _rank_files,
    diagnosed,
    partial,
)

# ---------------------------------------------------------------------------------------------
# Partial inputs, cut from the real bundles of scenarios.py.  cut:
#   ("ranks", [global ranks])   only those ranks' --log-dir files (stdout.log/stderr.log); no
#                               console.log (it holds every local rank's tee'd lines)
#   ("hosts", [host folders])   only those hosts' folders, whole
#   ("console", [host folders]) only those hosts' console.log
#   ("paste", host, prefix, W)  that host's console.log as pasted into an issue/chat: every line
#                               cut into pieces of at most W - len(prefix) characters (a terminal
#                               W columns wide, hard wrap), each piece prefixed with `prefix`;
#                               written as logs/console-paste.txt
# ---------------------------------------------------------------------------------------------


PARTIALS: dict[str, dict] = {
    # ----- (a) one rank's files only ---------------------------------------------------------
    "partial-exception-rank3-culprit-files": partial(
        "real-gloo-exception-rank3", ("ranks", [3]),
        diagnosed("execution", "crashed_process", 3),
        "the culprit's own stderr.log holds its ValueError traceback ([rank3]: prefixes, the "
        "job's 'rank 3/4' start-up line), raised outside any collective, so rank 3 is shown",
        [(_rank_files("node01", 3, "stderr.log"), r"\[rank3\]: ValueError: invalid label", True)],
    ),
    "partial-oom-rank2-culprit-files": partial(
        "real-oom-rank2", ("ranks", [2]),
        diagnosed("execution", "oom", 2),
        "the culprit's own stderr.log holds the DefaultCPUAllocator 'not enough memory' "
        "RuntimeError raised outside any collective",
        [(_rank_files("node01", 2, "stderr.log"), r"DefaultCPUAllocator: can.t allocate memory", True)],
    ),
    "partial-exception-rank3-victim-files": partial(
        "real-gloo-exception-rank3", ("ranks", [0]),
        {"status": "inconclusive", "phase": "execution"},
        "rank 0's files only show that its gradient all_reduce failed with gloo 'Connection "
        "closed by peer [127.0.0.1]:<port>' (or 'Connection reset by peer') at step 4: some "
        "peer died, but the address is the same for every rank and the port is not a rank, so "
        "no rank can be named",
        [(_rank_files("node01", 0, "stderr.log"), CLOSED_RX, True)],
    ),
    "partial-skip-init-rank3-victim-files": partial(
        "real-gloo-skip-init-rank3", ("ranks", [0]),
        diagnosed("comm_init", None, 3),
        "a victim's file is enough here: rank 0's DistStoreError 'wait timeout after 5000ms, "
        "keys: /default_pg/0//cpu//0/3' names the rank whose key never arrived",
        [(_rank_files("node01", 0, "stderr.log"), STORE_WAIT_RX.format(r=3), True)],
    ),
    "partial-detail-hang-rank2-victim-files": partial(
        "real-detail-hang-rank2", ("ranks", [0]),
        diagnosed("execution", None, 2),
        "a victim's file is enough here: with TORCH_DISTRIBUTED_DEBUG=DETAIL rank 0 reports "
        "'[Rank 0]: Ranks 2 failed to pass monitoredBarrier in 5000 ms' before the step-5 "
        "all_reduce (category left open: from rank 0 alone rank 2 could be hung or slow)",
        [(_rank_files("node01", 0, "stderr.log"), r"Ranks 2 failed to pass monitoredBarrier", True)],
    ),
    # ----- (b) one host's folder only --------------------------------------------------------
    "partial-2node-hang-rank6-node02": partial(
        "real-2node-hang-rank6", ("hosts", ["node02"]),
        diagnosed("execution", "hung_process", 6),
        "node02 holds the culprit: ranks 4, 5 and 7 time out in the step-4 all_reduce (gloo "
        "'Timed out waiting 5000ms'), rank 6 stops after step 3 with no error of its own and is "
        "ended by the agent's SIGTERM (-15); a rank that was inside the collective would have "
        "timed out with them, so rank 6 was not in it (ranks 0-3 are not shown, which does not "
        "change that)",
        [(_rank_files("node02", 2, "stderr.log"), r"Traceback", False),
         (_rank_files("node02", "[013]", "stderr.log"), TIMEOUT_RX, True)],
    ),
    "partial-2node-hang-rank6-node01": partial(
        "real-2node-hang-rank6", ("hosts", ["node01"]),
        {"status": "inconclusive", "phase": "execution"},
        "node01 (ranks 0-3) only shows all four of its ranks timing out in the step-4 "
        "all_reduce (gloo 'Timed out waiting 5000ms', which names no peer); world size 8 is "
        "known from the start-up lines, but which of the unseen ranks 4-7 stalled is not",
        [(_all_stderr("node01"), TIMEOUT_RX, True)],
    ),
    "partial-2node-sigkill-rank5-node02": partial(
        "real-2node-sigkill-rank5", ("hosts", ["node02"]),
        diagnosed("execution", "crashed_process", 5),
        "node02's agent reports rank 5 with 'exitcode : -9' / 'Signal 9 (SIGKILL) received by "
        "PID', while its other ranks fail on gloo connection errors",
        [("logs/node02/console.log", r"exitcode\s*: -9", True)],
    ),
    "partial-2node-sigkill-rank5-node01": partial(
        "real-2node-sigkill-rank5", ("hosts", ["node01"]),
        {"status": "inconclusive", "phase": "execution"},
        "node01 (ranks 0-3) only shows its ranks' all_reduce failing with gloo connection "
        "errors ('Connection closed by peer' / 'Connection reset by peer' at 127.0.0.1:<port>) "
        "and its agent's ChildFailedError for ranks 0-3: a peer on the other host died, which "
        "one is not in this folder",
        [("logs/node01/console.log", r"exitcode\s*: -9", False)],
    ),
    "partial-2node-init-wrong-port-rank5-node01": partial(
        "real-2node-init-wrong-port-rank5", ("hosts", ["node01"]),
        diagnosed("comm_init", None, 5),
        "the host without the culprit is enough here: ranks 0-3 fail in init_process_group with "
        "'DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/5', naming the "
        "rank that never registered; why (the wrong port) is only on node02, so no category",
        [(_all_stderr("node01"), STORE_WAIT_RX.format(r=5), True)],
    ),
    "partial-2node-subgroup-hang-rank4-node01": partial(
        "real-2node-subgroup-hang-rank4", ("hosts", ["node01"]),
        {"status": "inconclusive", "phase": "execution"},
        "node01 only holds rank 0's DETAIL report '[Rank 0]: Ranks 4, 5 failed to pass "
        "monitoredBarrier in 5000 ms' (and ranks 1-3 pointing at rank 0): ranks 4 and 5 both "
        "missed the step-5 barrier, but only node02's files show that rank 5 was itself stuck "
        "in the pair group {4,5} waiting for rank 4, so the input cannot tell 4 from 5",
        [(_rank_files("node01", 0, "stderr.log"), r"Ranks 4, 5 failed to pass monitoredBarrier", True)],
    ),
    # ----- (c) the launcher console only -----------------------------------------------------
    "partial-sigkill-rank1-console": partial(
        "real-gloo-sigkill-rank1", ("console", ["node01"]),
        diagnosed("execution", "crashed_process", 1),
        "the console holds the agent's ChildFailedError block with rank 1 'exitcode : -9' "
        "(SIGKILL) and every rank's tee'd lines",
        [("logs/node01/console.log", r"Signal 9 \(SIGKILL\) received by PID", True)],
    ),
    "partial-hang-rank2-console": partial(
        "real-gloo-hang-rank2", ("console", ["node01"]),
        diagnosed("execution", "hung_process", 2),
        "the console holds every rank's tee'd lines: [default0/1/3] time out in the step-5 "
        "all_reduce, [default2] logs step 4 and then nothing, and is listed with -15 (SIGTERM) "
        "while a victim is named Root Cause",
        [("logs/node01/console.log", r"\[default0\]:.*Timed out waiting", True)],
    ),
    "partial-2node-segfault-rank7-console": partial(
        "real-2node-segfault-rank7", ("console", ["node01", "node02"]),
        diagnosed("execution", "crashed_process", 7),
        "both agents' consoles: node02's block lists rank 7 with 'exitcode : -11' / 'Signal 11 "
        "(SIGSEGV)', the other ranks fail on gloo connection errors",
        [("logs/node02/console.log", r"exitcode\s*: -11", True)],
    ),
    # ----- (d) the console pasted into an issue: hard-wrapped and quoted ----------------------
    "partial-sigkill-rank1-paste80": partial(
        "real-gloo-sigkill-rank1", ("paste", "node01", "> ", 80),
        diagnosed("execution", "crashed_process", 1),
        "the paste keeps the ChildFailedError block (short lines, intact after wrapping): rank "
        "1 with 'exitcode : -9' and 'Signal 9 (SIGKILL) received by PID'",
        [("logs/console-paste.txt", r"^> \s*exitcode\s*: -9", True)],
    ),
    "partial-hang-rank2-paste100": partial(
        "real-gloo-hang-rank2", ("paste", "node01", "> ", 100),
        diagnosed("execution", "hung_process", 2),
        "the same content as the console, wrapped: the long gloo 'Timed out waiting 5000ms for "
        "recv|send operation to complete' lines of [default0/1/3] are split across two lines, "
        "[default2] still stops after step 4 and is listed with -15",
        [("logs/console-paste.txt", r"^> \[default2\]:step 4 loss", True)],
    ),
    "partial-detail-mismatch-op-rank3-paste100": partial(
        "real-detail-mismatch-op-rank3", ("paste", "node01", "    ", 100),
        diagnosed("execution", "collective_mismatch", 3),
        "the DETAIL 'Detected mismatch between collectives on ranks. Rank r is running "
        "collective: CollectiveFingerPrint(... OpType=ALLREDUCE ...), but Rank 3 is running "
        "collective: CollectiveFingerPrint(... OpType=BROADCAST ...)' lines (about 900 "
        "characters each) are split over ten lines each but still name rank 3 from ranks 0-2",
        [("logs/console-paste.txt", r"^    \[default0\]:\[rank0\]: RuntimeError: Detected mismatch", True)],
    ),
}
