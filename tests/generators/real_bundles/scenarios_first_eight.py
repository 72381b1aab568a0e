"""The first eight real scenarios: one of each basic fault (hang, SIGKILL, exception, segfault, a rank
that skips init), a clean run, and two two-agent runs."""

from __future__ import annotations

from .table import (
    STORE_WAIT_RX,
    TIMEOUT_RX,
    _rank_files,
    diagnosed,
    scenario,
)

FIRST_EIGHT: dict[str, dict] = {
    # ----- the first eight ------------------------------------------------------------------
    "real-gloo-hang-rank2": scenario(
        "hang", 2, step=5,
        what="Rank 2 of 4 sleeps forever before its gradient all_reduce at step 5; the other "
             "ranks hit the 5 s gloo timeout and torchrun then SIGTERMs rank 2",
        expect=diagnosed("execution", "hung_process", 2),
        checks=[
            (_rank_files("node01", 0, "stderr.log"), TIMEOUT_RX, True),
            (_rank_files("node01", 2, "stderr.log"), r"Traceback", False),
            (_rank_files("node01", 2, "stdout.log"), r"^step 4 loss", True),
            (_rank_files("node01", 2, "stdout.log"), r"^step 5 loss", False),
            ("logs/node01/console.log", r"ChildFailedError", True),
        ],
    ),
    "real-gloo-sigkill-rank1": scenario(
        "sigkill", 1, step=5,
        what="Rank 1 of 4 sends itself SIGKILL at step 5 (before that step's all_reduce); the "
             "other ranks lose their gloo connections to it",
        expect=diagnosed("execution", "crashed_process", 1),
        checks=[
            ("logs/node01/console.log", r"exitcode\s*: -9", True),
            ("logs/node01/console.log", r"Signal 9 \(SIGKILL\) received by PID", True),
            ("logs/node01/console.log", r"rank\s*: 1 \(local_rank: 1\)", True),
            (_rank_files("node01", 1, "stderr.log"), r"Traceback", False),
        ],
    ),
    "real-gloo-exception-rank3": scenario(
        "exception", 3, step=4,
        what="Rank 3 of 4 raises ValueError at step 4 (before that step's all_reduce); the "
             "other ranks lose their gloo connections to it",
        expect=diagnosed("execution", "crashed_process", 3),
        checks=[
            (_rank_files("node01", 3, "stderr.log"), r"ValueError: invalid label", True),
            ("logs/node01/console.log", r"\[default3\]:.*ValueError: invalid label", True),
        ],
    ),
    "real-gloo-segfault-rank2": scenario(
        "segfault", 2, step=3,
        what="Rank 2 of 4 segfaults (ctypes.string_at(0)) at step 3 (before that step's "
             "all_reduce); the other ranks lose their gloo connections to it",
        expect=diagnosed("execution", "crashed_process", 2),
        checks=[
            # no faulthandler dump: torchrun enables faulthandler only in @record entrypoints
            (_rank_files("node01", 2, "stderr.log"), r"Traceback|Fatal Python error", False),
            (_rank_files("node01", 2, "stdout.log"), r"^step 2 loss", True),
            (_rank_files("node01", 2, "stdout.log"), r"^step 3 loss", False),
            ("logs/node01/console.log", r"exitcode\s*: -11", True),
            ("logs/node01/console.log", r"Signal 11 \(SIGSEGV\) received by PID", True),
        ],
    ),
    "real-gloo-skip-init-rank3": scenario(
        "hang", 3, phase="init", step=0,
        what="Rank 3 of 4 never calls init_process_group (it sleeps instead); ranks 0-2 fail "
             "inside init_process_group after the 5 s store timeout and torchrun then SIGTERMs "
             "rank 3",
        expect=diagnosed("comm_init", None, 3),
        checks=[
            (_rank_files("node01", 0, "stderr.log"), STORE_WAIT_RX.format(r=3), True),
            (_rank_files("node01", 3, "stderr.log"), r"Traceback", False),
            (_rank_files("node01", 0, "stdout.log"), r"^step ", False),
        ],
    ),
    "real-gloo-clean": scenario(
        "none", -1, step=0,
        what="No fault: 4 ranks run 10 steps and exit 0",
        expect={"status": "no_failure"},
        checks=[
            ("logs/node01/console.log", r"ChildFailedError|exitcode", False),
            (_rank_files("node01", 3, "stdout.log"), r"^step 9 loss", True),
        ],
    ),
    "real-2node-sigkill-rank5": scenario(
        "sigkill", 5, step=5, nodes=2,
        what="Two torchrun agents x 4 processes (world size 8, both agents on one machine); "
             "rank 5 (node02, local rank 1) sends itself SIGKILL at step 5",
        expect=diagnosed("execution", "crashed_process", 5),
        checks=[
            ("logs/node02/console.log", r"exitcode\s*: -9", True),
            ("logs/node02/console.log", r"rank\s*: 5 \(local_rank: 1\)", True),
            ("logs/node01/console.log", r"ChildFailedError|exitcode", True),
        ],
    ),
    "real-2node-hang-rank6": scenario(
        "hang", 6, step=4, nodes=2,
        what="Two torchrun agents x 4 processes (world size 8, both agents on one machine); "
             "rank 6 (node02, local rank 2) sleeps forever before its all_reduce at step 4; the "
             "others hit the 5 s gloo timeout",
        expect=diagnosed("execution", "hung_process", 6),
        checks=[
            (_rank_files("node02", 2, "stderr.log"), r"Traceback", False),
            (_rank_files("node02", 2, "stdout.log"), r"^step 3 loss", True),
            (_rank_files("node02", 2, "stdout.log"), r"^step 4 loss", False),
            ("logs/node0*/console.log", TIMEOUT_RX, True),
        ],
    ),
}
