"""The held-out set: the same driver (torchrun + tests/generators/real_job.py, unchanged, gloo on CPU)
and the same cut kinds as runs.py, with other draws, so that no run repeats one of the corpus in
accuracy/real_world/cases/: other fault ranks, steps, world sizes, gloo timeouts, DETAIL on/off,
fault kinds at other phases, and another mix of cuts.  Made and cut with

    python accuracy/real_world/make.py --set heldout run    # -> $RW_RUNS (default /tmp/rw-runs-heldout)
    python accuracy/real_world/make.py --set heldout cut    # -> accuracy/real_world/heldout/cases/

and scored, once, with `python accuracy/real_world/score.py --set heldout`.  Nothing in triage was
changed after looking at these cases.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("rw_runs_main", Path(__file__).resolve().parents[1] / "runs.py")
_main = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_main)
run, DETAIL = _main.run, _main.DETAIL

SEED = 2718  # the cut choices (victim, archive or folder) draw from random.Random(f"{SEED}:{run}:{cut}")

RUNS: dict[str, dict] = {
    "hang-r0-of5": run("hang", 0, step=6, nproc=5, timeout=6, cuts=["tree", "victim", "paste100q"],
                       category="hung_process"),
    "sigkill-r1-of7-step0-plain": run("sigkill", 1, step=0, nproc=7, timeout=7, launch="plain",
                                      cuts=["console", "screen30", "paste80"], category="crashed_process"),
    "segfault-r2-of3-detail": run("segfault", 2, step=8, nproc=3, env=DETAIL, cuts=["tree", "culprit", "crashloop"],
                                  category="crashed_process"),
    "exception-r0-of6": run("exception", 0, step=1, nproc=6, timeout=4, cuts=["tree", "victim", "mixed"],
                            category="crashed_process"),
    "oom-r1-of2-first": run("oom", 1, phase="first", nproc=2, cuts=["tree", "console", "paste80q"], category="oom"),
    "abort-r1-of5": run("abort", 1, step=6, nproc=5, cuts=["tree", "console", "victim"], category="crashed_process"),
    "2node-exit-r3-of8": run("exit", 3, step=2, nodes=2, nproc=4, timeout=6, cuts=["host", "otherhost", "consoles"],
                             category="crashed_process"),
    "assert-r2-of4-plain-grace": run("assert", 2, step=3, launch="plain", env={"ON_ERROR_GRACE_S": "5"},
                                     cuts=["console", "paste100", "crashloop"], category="crashed_process"),
    "memoryerror-r0-of3-init": run("memoryerror", 0, phase="init", nproc=3, cuts=["tree", "culprit", "victim"],
                                   category="oom"),
    "op-r1-of3-first": run("op", 1, phase="first", nproc=3, timeout=6, cuts=["tree", "console", "screen50"],
                           category="collective_mismatch"),
    "shape-r4-of5-first-detail": run("shape", 4, phase="first", nproc=5, env=DETAIL,
                                     cuts=["tree", "culprit", "paste100"], category="collective_mismatch"),
    "2node-wrongport-r2-of4": run("wrong-port", 2, phase="init", nodes=2, nproc=2,
                                  cuts=["host", "otherhost", "crashloop"], category="config_mismatch"),
    "late-r0-of6-first": run("sleep", 0, phase="first", nproc=6, timeout=6, env={"FAULT_SLEEP_S": "12"},
                             cuts=["tree", "console", "victim"], category="hung_process"),
    "2node-sigkill-r0-of4-detail": run("sigkill", 0, step=5, nodes=2, nproc=2, timeout=6, env=DETAIL,
                                       cuts=["host", "otherhost", "paste80q"], category="crashed_process"),
    "subgroup-sigkill-r2-of6": run("sigkill", 2, step=4, nproc=6, env={"SUBGROUP": "1"},
                                   cuts=["tree", "console", "mixed"], category="crashed_process"),
    "2node-hang-r7-of8-init": run("hang", 7, phase="init", nodes=2, nproc=4, cuts=["host", "screen60"],
                                  category="hung_process"),
    "clean-of2-steps6": run("none", nproc=2, env={"STEPS": "6"}, cuts=["tree", "screen40"]),
    "exception-r3-of4-init-plain": run("exception", 3, phase="init", launch="plain",
                                       cuts=["console", "paste100q"], category="crashed_process"),
    "hang-r2-of3-first-detail": run("hang", 2, phase="first", nproc=3, timeout=4, env=DETAIL,
                                    cuts=["tree", "culprit", "screen40"], category="hung_process"),
}
