"""Real scenarios in comm_init: the fault happens before or inside init_process_group."""

from __future__ import annotations

from .table import (
    STORE_WAIT_RX,
    _rank_files,
    diagnosed,
    scenario,
)

INIT: dict[str, dict] = {
    # ----- comm_init: the fault happens before/inside init_process_group --------------------
    "real-init-exception-rank0": scenario(
        "exception", 0, phase="init",
        what="Rank 0 of 4 raises ValueError while loading its dataset index, before calling "
             "init_process_group; ranks 1-3 wait in init_process_group for rank 0's key",
        expect=diagnosed("comm_init", "crashed_process", 0),
        checks=[
            (_rank_files("node01", 0, "stderr.log"), r"ValueError: dataset index", True),
            (_rank_files("node01", 0, "stderr.log"), r"init_process_group", False),
        ],
    ),
    "real-init-sigkill-rank2": scenario(
        "sigkill", 2, phase="init",
        what="Rank 2 of 4 is SIGKILLed before calling init_process_group; ranks 0, 1 and 3 wait "
             "in init_process_group for rank 2's key",
        expect=diagnosed("comm_init", "crashed_process", 2),
        checks=[
            ("logs/node01/console.log", r"exitcode\s*: -9", True),
            (_rank_files("node01", 2, "stderr.log"), r"Traceback", False),
        ],
    ),
    "real-2node-init-segfault-rank6": scenario(
        "segfault", 6, phase="init", nodes=2,
        what="Two torchrun agents x 4 processes (world size 8); rank 6 (node02, local rank 2) "
             "segfaults before calling init_process_group",
        expect=diagnosed("comm_init", "crashed_process", 6),
        checks=[
            ("logs/node02/console.log", r"exitcode\s*: -11", True),
            ("logs/node02/console.log", r"rank\s*: 6 \(local_rank: 2\)", True),
        ],
    ),
    "real-init-exit-rank3": scenario(
        "exit", 3, phase="init",
        what="Rank 3 of 4 calls os._exit(1) without printing anything, before calling "
             "init_process_group",
        expect=diagnosed("comm_init", "crashed_process", 3),
        checks=[
            (_rank_files("node01", 3, "stderr.log"), r"Traceback", False),
            ("logs/node01/console.log", r"rank\s*: 3 \(local_rank: 3\)\n\s*exitcode\s*: 1 ", True),
        ],
    ),
    "real-8proc-init-abort-rank1": scenario(
        "abort", 1, phase="init", nproc=8,
        what="One torchrun agent x 8 processes; rank 1 calls os.abort() (SIGABRT) before calling "
             "init_process_group",
        expect=diagnosed("comm_init", "crashed_process", 1),
        checks=[
            ("logs/node01/console.log", r"exitcode\s*: -6", True),
            ("logs/node01/console.log", r"rank\s*: 1 \(local_rank: 1\)", True),
        ],
    ),
    "real-init-memoryerror-rank2": scenario(
        "memoryerror", 2, phase="init",
        what="Rank 2 of 4 raises MemoryError (bytearray of 2^50 bytes) while loading data, before "
             "calling init_process_group",
        expect=diagnosed("comm_init", "oom", 2),
        checks=[
            (_rank_files("node01", 2, "stderr.log"), r"^MemoryError", True),
        ],
    ),
    "real-2node-init-assert-rank0": scenario(
        "assert", 0, phase="init", nodes=2,
        what="Two torchrun agents x 4 processes (world size 8); rank 0 (node01, local rank 0) "
             "fails an assert in user code before calling init_process_group",
        expect=diagnosed("comm_init", "crashed_process", 0),
        checks=[
            (_rank_files("node01", 0, "stderr.log"), r"AssertionError: rank 0: no dataset shards", True),
        ],
    ),
    "real-init-wrong-port-rank3": scenario(
        "wrong-port", 3, phase="init",
        what="Rank 3 of 4 overrides MASTER_PORT with a stale value from its config (the right "
             "port + 1, where nothing listens) and cannot reach the store; the others wait in "
             "init_process_group for rank 3's key",
        expect=diagnosed("comm_init", "config_mismatch", 3),
        checks=[
            (_rank_files("node01", 3, "stderr.log"), r"client socket has timed out", True),
            (_rank_files("node01", 0, "stderr.log"), STORE_WAIT_RX.format(r=3), True),
        ],
    ),
    "real-2node-init-wrong-port-rank5": scenario(
        "wrong-port", 5, phase="init", nodes=2,
        what="Two torchrun agents x 4 processes (world size 8); rank 5 (node02, local rank 1) "
             "overrides MASTER_PORT with a stale value (the right port + 1) and cannot reach the "
             "store",
        expect=diagnosed("comm_init", "config_mismatch", 5),
        checks=[
            (_rank_files("node02", 1, "stderr.log"), r"client socket has timed out", True),
        ],
    ),
}
