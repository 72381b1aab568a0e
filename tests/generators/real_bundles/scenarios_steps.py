"""Real scenarios in execution: the fault hits a steady-state training step."""

from __future__ import annotations

from .table import (
    DETAIL,
    TIMEOUT_RX,
    _all_stderr,
    _rank_files,
    diagnosed,
    scenario,
)

STEPS: dict[str, dict] = {
    # ----- execution: steady-state steps -----------------------------------------------------
    "real-detail-hang-rank2": scenario(
        "hang", 2, step=5, env=DETAIL,
        what="TORCH_DISTRIBUTED_DEBUG=DETAIL; rank 2 of 4 sleeps forever before its gradient "
             "all_reduce at step 5",
        expect=diagnosed("execution", "hung_process", 2),
        checks=[
            (_rank_files("node01", 0, "stderr.log"), r"Ranks 2 failed to pass monitoredBarrier", True),
            (_rank_files("node01", 2, "stderr.log"), r"Traceback", False),
        ],
    ),
    "real-8proc-sigkill-rank7": scenario(
        "sigkill", 7, step=4, nproc=8,
        what="One torchrun agent x 8 processes; rank 7 sends itself SIGKILL at step 4",
        expect=diagnosed("execution", "crashed_process", 7),
        checks=[
            ("logs/node01/console.log", r"exitcode\s*: -9", True),
            ("logs/node01/console.log", r"rank\s*: 7 \(local_rank: 7\)", True),
        ],
    ),
    "real-2node-exception-rank2": scenario(
        "exception", 2, step=3, nodes=2, env=DETAIL,
        what="Two torchrun agents x 4 processes (world size 8), TORCH_DISTRIBUTED_DEBUG=DETAIL; "
             "rank 2 (node01, local rank 2) raises ValueError at step 3",
        expect=diagnosed("execution", "crashed_process", 2),
        checks=[
            (_rank_files("node01", 2, "stderr.log"), r"ValueError: invalid label", True),
        ],
    ),
    "real-2node-segfault-rank7": scenario(
        "segfault", 7, step=4, nodes=2,
        what="Two torchrun agents x 4 processes (world size 8); rank 7 (node02, local rank 3) "
             "segfaults at step 4",
        expect=diagnosed("execution", "crashed_process", 7),
        checks=[
            ("logs/node02/console.log", r"exitcode\s*: -11", True),
            ("logs/node02/console.log", r"rank\s*: 7 \(local_rank: 3\)", True),
        ],
    ),
    "real-exit-rank1": scenario(
        "exit", 1, step=4,
        what="Rank 1 of 4 calls os._exit(1) silently at step 4 (no traceback, no message)",
        expect=diagnosed("execution", "crashed_process", 1),
        checks=[
            (_rank_files("node01", 1, "stderr.log"), r"Traceback", False),
            (_rank_files("node01", 1, "stdout.log"), r"^step 3 loss", True),
            (_rank_files("node01", 1, "stdout.log"), r"^step 4 loss", False),
        ],
    ),
    "real-abort-rank3": scenario(
        "abort", 3, step=5,
        what="Rank 3 of 4 calls os.abort() (SIGABRT) at step 5",
        expect=diagnosed("execution", "crashed_process", 3),
        checks=[
            ("logs/node01/console.log", r"exitcode\s*: -6", True),
            ("logs/node01/console.log", r"Signal 6 \(SIGABRT\) received by PID", True),
        ],
    ),
    "real-oom-rank2": scenario(
        "oom", 2, step=4,
        what="Rank 2 of 4 fails a CPU allocation of 32 x 2^40 floats at step 4 (the real "
             "DefaultCPUAllocator RuntimeError)",
        expect=diagnosed("execution", "oom", 2),
        checks=[
            (_rank_files("node01", 2, "stderr.log"), r"DefaultCPUAllocator: can.t allocate memory", True),
        ],
    ),
    "real-2node-memoryerror-rank4": scenario(
        "memoryerror", 4, step=3, nodes=2, env=DETAIL,
        what="Two torchrun agents x 4 processes (world size 8), TORCH_DISTRIBUTED_DEBUG=DETAIL; "
             "rank 4 (node02, local rank 0) raises MemoryError (bytearray of 2^50 bytes) at step 3",
        expect=diagnosed("execution", "oom", 4),
        checks=[
            (_rank_files("node02", 0, "stderr.log"), r"MemoryError", True),
        ],
    ),
    "real-assert-rank0": scenario(
        "assert", 0, step=6,
        what="Rank 0 of 4 fails an assert in user code at step 6",
        expect=diagnosed("execution", "crashed_process", 0),
        checks=[
            (_rank_files("node01", 0, "stderr.log"), r"AssertionError: batch 6", True),
        ],
    ),
    "real-8proc-hang-rank5": scenario(
        "hang", 5, step=3, nproc=8,
        what="One torchrun agent x 8 processes; rank 5 sleeps forever before its gradient "
             "all_reduce at step 3",
        expect=diagnosed("execution", "hung_process", 5),
        checks=[
            (_rank_files("node01", 5, "stderr.log"), r"Traceback", False),
            (_all_stderr(), TIMEOUT_RX, True),
        ],
    ),
    "real-straggler-rank1": scenario(
        "sleep", 1, step=4, env={"FAULT_SLEEP_S": "8", "ON_ERROR_GRACE_S": "10"},
        what="Rank 1 of 4 is slow once: it sleeps 8 s before its gradient all_reduce at step 4 "
             "(timeout 5 s), then carries on; a failing step logs its error and spends 10 s "
             "'writing an emergency checkpoint' before re-raising",
        expect=diagnosed("execution", None, 1),
        checks=[
            (_rank_files("node01", 0, "stderr.log"), TIMEOUT_RX, True),
            (_rank_files("node01", 1, "stderr.log"), r"ERROR train: step 4 failed \(RuntimeError: .*Connection closed by peer", True),
            (_rank_files("node01", 1, "stderr.log"), TIMEOUT_RX, False),
        ],
    ),
    "real-subgroup-hang-rank3": scenario(
        "hang", 3, step=5, env={"SUBGROUP": "1"},
        what="Ranks are paired into dist.new_group()s {0,1} and {2,3}; every step ends with an "
             "all_reduce of the loss inside the pair.  Rank 3 sleeps forever before its pair "
             "all_reduce at step 5 (after the global gradient all_reduce): only rank 2 waits on "
             "the pair group; ranks 0 and 1 go on to step 6's global all_reduce",
        expect=diagnosed("execution", "hung_process", 3),
        checks=[
            (_rank_files("node01", 3, "stderr.log"), r"Traceback", False),
            (_rank_files("node01", 2, "stderr.log"), TIMEOUT_RX, True),
            (_rank_files("node01", 2, "stderr.log"), r"dist.all_reduce\(pair_loss, group=pair\)", True),
            (_rank_files("node01", 0, "stdout.log"), r"^step 5 loss", True),
            (_rank_files("node01", 2, "stdout.log"), r"^step 5 loss", False),
        ],
    ),
    "real-2node-subgroup-hang-rank4": scenario(
        "hang", 4, step=4, nodes=2, env=dict(SUBGROUP="1", **DETAIL),
        what="Two torchrun agents x 4 processes (world size 8), TORCH_DISTRIBUTED_DEBUG=DETAIL; "
             "ranks are paired into dist.new_group()s {0,1} {2,3} {4,5} {6,7} with a pair "
             "all_reduce of the loss every step; rank 4 (node02, local rank 0) sleeps forever "
             "before its pair all_reduce at step 4",
        expect=diagnosed("execution", "hung_process", 4),
        checks=[
            (_rank_files("node02", 0, "stderr.log"), r"Traceback", False),
            (_rank_files("node01", 0, "stderr.log"), r"Ranks 4, 5 failed to pass monitoredBarrier", True),
            (_rank_files("node02", 1, "stderr.log"), r"Rank 1 successfully reached monitoredBarrier", True),
        ],
    ),
    "real-mismatch-shape-rank1": scenario(
        "shape", 1, step=5,
        what="Rank 1 of 4 all_reduces its weight gradient with one extra element (17 floats where "
             "the others all_reduce 16) at step 5",
        expect={"status": "inconclusive", "phase": "execution"},
        checks=[
            (_all_stderr(), r"Received data size doesn't match expected size", True),
            (_rank_files("node01", 1, "stderr.log"), r"Received data size doesn't match", False),
            ("logs/node01/console.log", r"Detected mismatch", False),
        ],
    ),
    "real-mismatch-op-rank3": scenario(
        "op", 3, step=5,
        what="Rank 3 of 4 calls broadcast(src=0) for its gradients at step 5 where the others "
             "call all_reduce",
        expect=diagnosed("execution", "collective_mismatch", 3),
        checks=[
            (_rank_files("node01", 3, "stderr.log"), r"distributed_c10d.py\", line \d+, in broadcast", True),
            (_rank_files("node01", "[012]", "stderr.log"), r"in broadcast", False),
        ],
    ),
    "real-detail-mismatch-shape-rank1": scenario(
        "shape", 1, step=5, env=DETAIL,
        what="TORCH_DISTRIBUTED_DEBUG=DETAIL; rank 1 of 4 all_reduces its weight gradient with "
             "one extra element (17 floats where the others all_reduce 16) at step 5",
        expect=diagnosed("execution", "collective_mismatch", 1),
        checks=[
            (_rank_files("node01", 0, "stderr.log"), r"Detected mismatch between collectives on ranks\. Rank 0 is running collective: CollectiveFingerPrint\(SequenceNumber=12, OpType=ALLREDUCE, TensorShape=\[1, 16\].*but Rank 1 is running", True),
            (_rank_files("node01", 1, "stderr.log"), r"Rank 1 is running collective: CollectiveFingerPrint\(SequenceNumber=12, OpType=ALLREDUCE, TensorShape=\[17\]", True),
        ],
    ),
    "real-detail-mismatch-op-rank3": scenario(
        "op", 3, step=5, env=DETAIL,
        what="TORCH_DISTRIBUTED_DEBUG=DETAIL; rank 3 of 4 calls broadcast(src=0) for its "
             "gradients at step 5 where the others call all_reduce",
        expect=diagnosed("execution", "collective_mismatch", 3),
        checks=[
            (_rank_files("node01", 0, "stderr.log"), r"Detected mismatch between collectives on ranks\. Rank 0 is running .*but Rank 3 is running collective: CollectiveFingerPrint\(SequenceNumber=12, OpType=BROADCAST", True),
        ],
    ),
    "real-2node-detail-mismatch-op-rank6": scenario(
        "op", 6, step=4, nodes=2, env=DETAIL,
        what="Two torchrun agents x 4 processes (world size 8), TORCH_DISTRIBUTED_DEBUG=DETAIL; "
             "rank 6 (node02, local rank 2) calls broadcast(src=0) for its gradients at step 4 "
             "where the others call all_reduce",
        expect=diagnosed("execution", "collective_mismatch", 6),
        checks=[
            ("logs/node0*/console.log", r"Detected mismatch between collectives on ranks", True),
        ],
    ),
    "real-detail-clean": scenario(
        "none", -1, step=0, env=DETAIL,
        what="No fault, TORCH_DISTRIBUTED_DEBUG=DETAIL: 4 ranks run 10 steps and exit 0",
        expect={"status": "no_failure"},
        checks=[
            ("logs/node01/console.log", r"ChildFailedError|exitcode", False),
            (_rank_files("node01", 3, "stdout.log"), r"^step 9 loss", True),
        ],
    ),
}
