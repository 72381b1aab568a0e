"""Real scenarios in operator_load: the fault hits the first collective (the broadcast of the
initial weights)."""

from __future__ import annotations

from .table import (
    DETAIL,
    TIMEOUT_RX,
    _rank_files,
    diagnosed,
    scenario,
)

FIRST_COLLECTIVE: dict[str, dict] = {
    # ----- operator_load: the fault hits the first collective (broadcast of the weights) ----
    "real-first-hang-rank1": scenario(
        "hang", 1, phase="first",
        what="Rank 1 of 4 sleeps forever after init_process_group, before the first collective "
             "(the broadcast of the initial weights from rank 0)",
        expect=diagnosed("operator_load", "hung_process", 1),
        checks=[
            (_rank_files("node01", 0, "stderr.log"), TIMEOUT_RX, True),
            (_rank_files("node01", 1, "stderr.log"), r"Traceback", False),
            (_rank_files("node01", "*", "stdout.log"), r"^step ", False),
        ],
    ),
    "real-first-sigkill-rank3": scenario(
        "sigkill", 3, phase="first",
        what="Rank 3 of 4 is SIGKILLed after init_process_group, before the first collective",
        expect=diagnosed("operator_load", "crashed_process", 3),
        checks=[
            ("logs/node01/console.log", r"exitcode\s*: -9", True),
            (_rank_files("node01", "*", "stdout.log"), r"^step ", False),
        ],
    ),
    "real-2node-first-exception-rank2": scenario(
        "exception", 2, phase="first", nodes=2, env=DETAIL,
        what="Two torchrun agents x 4 processes (world size 8), TORCH_DISTRIBUTED_DEBUG=DETAIL; "
             "rank 2 (node01, local rank 2) raises ValueError while loading the initial "
             "checkpoint, before the first collective",
        expect=diagnosed("operator_load", "crashed_process", 2),
        checks=[
            (_rank_files("node01", 2, "stderr.log"), r"ValueError: checkpoint", True),
        ],
    ),
    "real-first-segfault-rank0": scenario(
        "segfault", 0, phase="first",
        what="Rank 0 of 4 (the broadcast source) segfaults after init_process_group, before the "
             "first collective",
        expect=diagnosed("operator_load", "crashed_process", 0),
        checks=[
            ("logs/node01/console.log", r"exitcode\s*: -11", True),
        ],
    ),
    "real-first-exit-rank2": scenario(
        "exit", 2, phase="first",
        what="Rank 2 of 4 calls os._exit(1) silently after init_process_group, before the first "
             "collective",
        expect=diagnosed("operator_load", "crashed_process", 2),
        checks=[
            (_rank_files("node01", 2, "stderr.log"), r"Traceback", False),
        ],
    ),
    "real-first-abort-rank3": scenario(
        "abort", 3, phase="first", env=DETAIL,
        what="TORCH_DISTRIBUTED_DEBUG=DETAIL; rank 3 of 4 calls os.abort() (SIGABRT) after "
             "init_process_group, before the first collective",
        expect=diagnosed("operator_load", "crashed_process", 3),
        checks=[
            ("logs/node01/console.log", r"exitcode\s*: -6", True),
        ],
    ),
    "real-first-oom-rank1": scenario(
        "oom", 1, phase="first",
        what="Rank 1 of 4 fails a CPU allocation of 32 x 2^40 floats (real DefaultCPUAllocator "
             "error) after init_process_group, before the first collective",
        expect=diagnosed("operator_load", "oom", 1),
        checks=[
            (_rank_files("node01", 1, "stderr.log"), r"DefaultCPUAllocator: can.t allocate memory", True),
        ],
    ),
    "real-8proc-first-assert-rank6": scenario(
        "assert", 6, phase="first", nproc=8,
        what="One torchrun agent x 8 processes; rank 6 fails an assert in user code after "
             "init_process_group, before the first collective",
        expect=diagnosed("operator_load", "crashed_process", 6),
        checks=[
            (_rank_files("node01", 6, "stderr.log"), r"AssertionError: batch sync", True),
        ],
    ),
    "real-first-late-rank2": scenario(
        "sleep", 2, phase="first", env={"FAULT_SLEEP_S": "8", "ON_ERROR_GRACE_S": "10"},
        what="Rank 2 of 4 is 8 s late to the first collective (the broadcast of the initial "
             "weights; timeout 5 s); it is not hung: it then joins the broadcast.  A failure logs "
             "its error and spends 10 s 'writing an emergency checkpoint' before re-raising",
        expect=diagnosed("operator_load", None, 2),
        checks=[
            (_rank_files("node01", 0, "stderr.log"), TIMEOUT_RX, True),
            (_rank_files("node01", 2, "stderr.log"), r"ERROR train: initial weight sync failed \(RuntimeError: .*Connection closed by peer", True),
            (_rank_files("node01", "*", "stdout.log"), r"^step ", False),
        ],
    ),
    "real-2node-first-late-rank5": scenario(
        "sleep", 5, phase="first", nodes=2, env=dict(FAULT_SLEEP_S="8", **DETAIL),
        what="Two torchrun agents x 4 processes (world size 8), TORCH_DISTRIBUTED_DEBUG=DETAIL; "
             "rank 5 (node02, local rank 1) is 8 s late to the first collective (timeout 5 s)",
        expect=diagnosed("operator_load", None, 5),
        checks=[
            (_rank_files("node01", 0, "stderr.log"), r"Ranks 5 failed to pass monitoredBarrier", True),
        ],
    ),
    "real-first-shape-rank3": scenario(
        "shape", 3, phase="first",
        what="Rank 3 of 4 takes part in the broadcast of the initial weight with a buffer one "
             "element short (15 floats where rank 0 sends 16). gloo aborts on the receiver of the "
             "odd size, which here happens to be the odd rank itself, but in "
             "real-mismatch-shape-rank1 is a victim: the same lines cannot name the odd rank, so "
             "the honest verdict is inconclusive (TORCH_DISTRIBUTED_DEBUG=DETAIL would name it)",
        expect={"status": "inconclusive", "phase": "operator_load"},
        checks=[
            (_rank_files("node01", 3, "stderr.log"), r"Received data size doesn't match expected size", True),
            (_rank_files("node01", "[012]", "stderr.log"), r"Received data size", False),
            (_rank_files("node01", 0, "stderr.log"), r"initial weights synchronised from rank 0", True),
            ("logs/node01/console.log", r"exitcode\s*: -6", True),
        ],
    ),
    "real-first-op-rank1": scenario(
        "op", 1, phase="first", env=DETAIL,
        what="TORCH_DISTRIBUTED_DEBUG=DETAIL; rank 1 of 4 all_reduces its initial weights where "
             "the others broadcast them from rank 0",
        expect=diagnosed("operator_load", "collective_mismatch", 1),
        checks=[
            ("logs/node01/console.log", r"Detected mismatch between collectives on ranks", True),
        ],
    ),
}
