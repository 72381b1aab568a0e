#!/usr/bin/env python3
"""Regenerate the ``tests/fixtures/real-*`` and ``partial-*`` bundles from REAL torchrun + gloo runs.

What it runs
    For each scenario it runs ``tests/generators/real_job.py`` -- a tiny CPU training job:
    ``init_process_group("gloo", timeout=5 s)``, a broadcast of the initial weights from rank 0
    (the first collective), a 16->1 linear model whose gradients are all-reduced every step,
    ``step {i} loss {x}`` progress lines on every rank and a little logging/warnings noise --
    and launches it with the real ``torchrun`` of the interpreter that runs this script::

        FAULT=<kind> FAULT_PHASE=<init|first|step> FAULT_RANK=<r> FAULT_STEP=<s> [knobs] \
        torchrun --nproc-per-node <4|8> --master-port <free> \
                 --log-dir <tmp> --redirects 3 --tee 3 real_job.py

    or, for the two-agent scenarios (``real-2node-*``), two agents on localhost::

        torchrun --nnodes 2 --node-rank {0,1} --nproc-per-node 4 \
                 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:<free> \
                 --log-dir <tmp>/nodeXX --redirects 3 --tee 3 real_job.py

    or, for ``real-shell-*``, no launcher at all: a plain shell script that starts each process of
    the job in the background with its own ``RANK`` and ``WORLD_SIZE`` and ``wait``s
    (generators/real_bundles/shell.py; its logs are ``logs/rank-<r>.log``), so that one line can give
    one rank a world size the others do not share.

    The fault is chosen by env vars read by the job (see real_job.py's docstring): FAULT=hang|
    sleep|sigkill|exception|segfault|exit|abort|oom|memoryerror|assert|wrong-port|shape|op|
    skip-init|none, FAULT_PHASE=init (before init_process_group) | first (before the first
    collective, the broadcast of the initial weights) | step (at step FAULT_STEP, before that
    step's gradient all_reduce), FAULT_RANK (global rank), FAULT_STEP; knobs: SUBGROUP=1 (pair
    sub-groups with a sub-group all_reduce every step), ON_ERROR_GRACE_S (a failing step logs the
    error and "writes an emergency checkpoint" for that long before re-raising), FAULT_SLEEP_S,
    and torch's own TORCH_DISTRIBUTED_DEBUG=DETAIL.  The agent's console (stdout+stderr, merged
    as ``2>&1 | tee`` would) becomes ``logs/<host>/console.log``; torchrun's ``--log-dir`` tree is
    copied unchanged to ``logs/<host>/none_xxxx/attempt_0/<lr>/...``.  Host folders are
    ``node01``/``node02`` (both agents really run on this machine, so the hostname inside the
    logs is the same for both).  No log text is edited.

    ``expected.yaml`` is written from the SCENARIOS table (generators/real_bundles/scenarios*.py):
    ``truth`` is the injected fault ({fault, rank, phase}); ``expect`` is the verdict the logs can
    prove -- the injected truth, not what any tool prints (``inconclusive`` only where the logs
    cannot show the culprit; the description then says why), plus ``principle`` (which principle
    must decide) and ``principle_loses`` from PRINCIPLES / LOSES (real_bundles/expected.py); the
    shape is tests/schemas/expected.schema.json.  After each run a few sanity checks (``checks``)
    grep the bundle for the lines that must carry the fault; a failed check is reported and makes
    the exit status 1 (the bundle is still written so that it can be inspected).

Partial inputs
    ``partial-*`` bundles are cut from the ``real-*`` bundles the way people share logs (one
    rank's files, one host's folder, the launcher console only, or the console pasted into an
    issue: every line hard-wrapped at W columns and quoted).  Files are copied, never edited; the
    paste is the one transformation and its description says so.  They are made after the real
    runs (or alone with ``--partials``) from the bundles on disk; the PARTIALS table is in
    generators/real_bundles/partials.py.

How long
    About 10-30 s per scenario on a 2-core machine (8-process ones and the straggler ones are
    the slow ones), ~15 minutes for all.  Every run is killed (process group SIGTERM, then
    SIGKILL) if it is not over after 60 s.

Not run by CI: the fixtures are committed; run this by hand after changing the scenarios or
when a new torch version should be captured (CPU torch is enough; no GPU, localhost only).

Usage (from ``tests/``, or with ``PYTHONPATH=tests`` from the repository root)::

    ../.venv/bin/python -m generators.make_real            # all scenarios + partials
    ../.venv/bin/python -m generators.make_real real-gloo-hang-rank2 [...]
    ../.venv/bin/python -m generators.make_real --partials # partials only (no runs)
    ../.venv/bin/python -m generators.make_real --list
"""

from __future__ import annotations

import sys
import time

from generators.real_bundles import (
    DETAIL,
    FIXTURES,
    HERE,
    INIT_TIMEOUT_S,
    JOB_NAME,
    LOSES,
    PARTIALS,
    PHASES,
    PRINCIPLES,
    RUN_LIMIT_S,
    SCENARIOS,
    make_partial,
    run_scenario,
    torch_version,
    write_expected,
)

__all__ = [
    "DETAIL", "FIXTURES", "HERE", "INIT_TIMEOUT_S", "JOB_NAME", "LOSES", "PARTIALS", "PHASES", "PRINCIPLES",
    "RUN_LIMIT_S", "SCENARIOS", "main", "make_partial", "run_scenario", "write_expected",
]


def main(argv: list[str]) -> int:
    if "--list" in argv:
        print("\n".join([*SCENARIOS, *PARTIALS]))
        return 0
    names = list(PARTIALS) if "--partials" in argv else argv or [*SCENARIOS, *PARTIALS]
    unknown = [n for n in names if n not in SCENARIOS and n not in PARTIALS]
    if unknown:
        print(f"unknown scenario(s): {', '.join(unknown)}; try --list", file=sys.stderr)
        return 2
    tv = torch_version() if any(n in SCENARIOS for n in names) else ""
    bad = 0
    t0 = time.monotonic()
    for n in names:
        if n in SCENARIOS:
            bad += bool(run_scenario(n, SCENARIOS[n], tv))
        else:
            bad += bool(make_partial(n, PARTIALS[n]))
    print(f"{len(names)} bundle(s) in {time.monotonic() - t0:.0f} s, {bad} with problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
