"""Real scenarios launched by a plain shell script (real_bundles/shell.py), not torchrun: each process's
environment is the script's, so one line can give one rank a world size the others do not share."""

from __future__ import annotations

from .table import diagnosed, scenario

_LOG = "logs/rank-{}.log"


def _shell(entry: dict, world_by_rank: dict[int, int]) -> dict:
    return {**entry, "launcher": "shell", "world_by_rank": world_by_rank}


SHELL: dict[str, dict] = {
    # Issue 24, case 3: rank 2 waits for a fifth member no other rank's world contains.
    "real-shell-world-size-rank2": _shell(scenario(
        "world-size", 2, phase="init",
        what="Four processes started by a shell script, one line each; the line of rank 2 says WORLD_SIZE=5 "
             "where the other three say WORLD_SIZE=4 (a copy-paste slip): rank 2 waits in init_process_group for "
             "a rank 4 that no other rank's world contains",
        expect={**diagnosed("comm_init", "config_mismatch", 2), "culprits_exact": True},
        checks=[(_LOG.format(2), r"rank 2/5 ", True), (_LOG.format(0), r"rank 0/4 ", True)],
    ), {0: 4, 1: 4, 2: 5, 3: 4}),
    # Its near-miss: every rank says WORLD_SIZE=5 and only four were started: rank 4 is really missing.
    "real-shell-missing-rank4": _shell(scenario(
        "missing", 4, phase="init",
        what="Four processes started by a shell script, one line each, every one with WORLD_SIZE=5: the script "
             "starts ranks 0-3 and forgets the fifth line, so rank 4 never starts and every rank waits for it in "
             "init_process_group",
        expect={**diagnosed("comm_init", None, 4), "culprits_exact": True},
        checks=[(_LOG.format(0), r"rank 0/5 ", True), (_LOG.format(3), r"rank 3/5 ", True)],
    ), {0: 5, 1: 5, 2: 5, 3: 5}),
}
