"""Building blocks of the scenario and partial tables: a scenario's or a partial's entry, the verdict
it must give, the globs and regexes of its sanity checks."""

from __future__ import annotations

DETAIL = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}


# ---------------------------------------------------------------------------------------------
# Scenarios.  nodes: number of torchrun agents; nproc: processes per agent; fault/phase/rank/
# step: the injection; env: extra env vars; expect: the verdict the logs must give (the injected
# truth, or inconclusive where the logs cannot show it); checks: (file glob relative to the
# bundle, regex, must_match) sanity greps on the result.
# ---------------------------------------------------------------------------------------------


def _rank_files(node: str, local_rank: int | str, name: str) -> str:
    return f"logs/{node}/*/attempt_0/{local_rank}/{name}"


def _all_stderr(node: str = "node0*") -> str:
    return f"logs/{node}/*/attempt_0/*/stderr.log"


def diagnosed(phase: str, category: str | None, *culprits: int) -> dict:
    return {"status": "diagnosed", "phase": phase, "category": category, "culprits": list(culprits)}


def scenario(fault: str, rank: int, what: str, expect: dict, checks: list, *, phase: str = "step",
             step: int = 5, nodes: int = 1, nproc: int = 4, env: dict | None = None) -> dict:
    return {"fault": fault, "rank": rank, "phase": phase, "step": step, "nodes": nodes, "nproc": nproc,
                "env": env or {}, "what": what, "expect": expect, "checks": checks}


TIMEOUT_RX = r"Timed out waiting \d+ms for (recv|send) operation to complete"
CLOSED_RX = r"Connection closed by peer|Connection reset by peer"
STORE_WAIT_RX = r"DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/{r}\b"


def partial(source: str, cut: tuple, expect: dict, why: str, checks: list | None = None) -> dict:
    return {"source": source, "cut": cut, "expect": expect, "why": why, "checks": checks or []}
