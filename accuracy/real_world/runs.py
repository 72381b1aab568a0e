"""The real jobs the corpus is cut from: torchrun + tests/generators/real_job.py (unchanged) on CPU/gloo.

Each entry: nodes x nproc, the fault knobs real_job.py reads, extra env, the launch style, and the
cuts made from it (see make.py).  Launch styles:
  tee    torchrun --log-dir D --redirects 3 --tee 3  (per-rank files + a prefixed console)
  plain  torchrun with no --log-dir/--tee: the console is the ranks' raw output, interleaved
Two-node runs are two torchrun agents on this machine (static rendezvous, --node-rank 0/1), so both
report the same hostname, as cloned VM images do.
"""

from __future__ import annotations

DETAIL = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}


def run(fault, rank=None, phase="step", step=None, nodes=1, nproc=4, timeout=5, env=None,
        launch="tee", cuts=(), known_phase=None, category=None, note=""):
    return {"fault": fault, "rank": rank, "phase": phase, "step": step, "nodes": nodes, "nproc": nproc,
            "timeout": timeout, "env": dict(env or {}), "launch": launch, "cuts": list(cuts),
            "category": category, "note": note}


RUNS: dict[str, dict] = {
    "hang-r1-of3": run("hang", 1, step=3, nproc=3, cuts=["tree", "console", "victim", "screen40", "paste80q", "mixed"],
                       category="hung_process"),
    "sigkill-r2-of4": run("sigkill", 2, step=4, cuts=["tree", "console", "victim", "screen50", "paste100", "crashloop"],
                          category="crashed_process"),
    "segfault-r3-of5-plain": run("segfault", 3, step=2, nproc=5, launch="plain",
                                 cuts=["console", "screen40", "paste80"], category="crashed_process"),
    "exception-r1-of2": run("exception", 1, step=6, nproc=2, timeout=8,
                            cuts=["tree", "culprit", "victim", "screen30", "paste100q", "mixed"],
                            category="crashed_process"),
    "oom-r4-of6": run("oom", 4, step=1, nproc=6, cuts=["tree", "console", "culprit", "screen60", "mixed"],
                      category="oom"),
    "exit-r0-of4": run("exit", 0, step=3, cuts=["tree", "console", "screen40", "paste80"],
                       category="crashed_process"),
    "abort-r3-of4-first-detail": run("abort", 3, phase="first", env=DETAIL,
                                     cuts=["tree", "console", "victim", "screen40"], category="crashed_process"),
    "op-r2-of4-detail": run("op", 2, step=4, env=DETAIL, cuts=["tree", "console", "victim", "paste100"],
                            category="collective_mismatch"),
    "shape-r1-of3-detail": run("shape", 1, step=2, nproc=3, env=DETAIL,
                               cuts=["tree", "console", "culprit", "screen50"], category="collective_mismatch"),
    "skipinit-r2-of4": run("hang", 2, phase="init", cuts=["tree", "console", "victim", "screen40"],
                           category="hung_process"),
    "wrongport-r1-of3": run("wrong-port", 1, phase="init", nproc=3,
                            cuts=["tree", "console", "culprit", "crashloop"], category="config_mismatch"),
    "subgroup-hang-r3-of4": run("hang", 3, step=3, env={"SUBGROUP": "1"}, cuts=["tree", "console", "paste100"],
                                category="hung_process"),
    "late-r1-of4-first": run("sleep", 1, phase="first", env={"FAULT_SLEEP_S": "14"},
                             cuts=["tree", "console", "screen40"], category="hung_process"),
    "2node-hang-r4-of6": run("hang", 4, step=3, nodes=2, nproc=3, timeout=8,
                             cuts=["tree", "host", "otherhost", "console", "screen50"], category="hung_process"),
    "2node-sigkill-r3-of4": run("sigkill", 3, step=2, nodes=2, nproc=2,
                                cuts=["tree", "host", "otherhost", "console", "paste80q"], category="crashed_process"),
    "2node-exception-r5-of8-first-detail": run("exception", 5, phase="first", nodes=2, nproc=4,
                                               env={**DETAIL, "ON_ERROR_GRACE_S": "10"},
                                               cuts=["tree", "host", "culprit", "screen60"], category="crashed_process"),
    "hang-r6-of8": run("hang", 6, step=2, nproc=8, timeout=8, cuts=["tree", "console", "screen60", "crashloop"],
                       category="hung_process"),
    "assert-r0-of2-init": run("assert", 0, phase="init", nproc=2, cuts=["tree", "console", "culprit", "victim"],
                              category="crashed_process"),
    "memoryerror-r3-of4-plain": run("memoryerror", 3, step=7, launch="plain",
                                    cuts=["console", "screen30", "paste100q", "crashloop"], category="oom"),
    "clean-of3": run("none", nproc=3, cuts=["tree", "console", "screen30"]),
    "2node-segfault-r1-of4": run("segfault", 1, step=5, nodes=2, nproc=2, cuts=["tree", "host", "otherhost", "console"],
                                 category="crashed_process"),
    "exception-r2-of4-plain-grace": run("exception", 2, step=4, launch="plain", env={"ON_ERROR_GRACE_S": "6"},
                                        cuts=["console", "screen50", "paste80q"], category="crashed_process"),
    "sigkill-r5-of6-first-plain": run("sigkill", 5, phase="first", nproc=6, launch="plain",
                                      cuts=["console", "screen40", "paste100"], category="crashed_process"),
    "oom-r2-of3-init": run("oom", 2, phase="init", nproc=3, cuts=["tree", "console", "culprit", "screen30"],
                           category="oom"),
}

# A second batch: more layouts (both consoles of a two-node job in one folder, the other node's
# console alone), DETAIL's monitored barrier, the straggler, faults at init and at the first collective.
RUNS.update({
    "2node-sigkill-r6-of8-grace": run("sigkill", 6, step=3, nodes=2, nproc=4, timeout=10,
                                      env={"ON_ERROR_GRACE_S": "30"},
                                      cuts=["consoles", "othercons", "host", "screen60", "victim"],
                                      category="crashed_process"),
    "detail-hang-r2-of4": run("hang", 2, step=5, env=DETAIL, cuts=["tree", "console", "victim", "screen40", "mixed"],
                              category="hung_process"),
    "straggler-r3-of4": run("sleep", 3, step=4, env={"FAULT_SLEEP_S": "9"}, cuts=["tree", "console", "paste100q"],
                            category="hung_process"),
    "exit-r1-of3-init": run("exit", 1, phase="init", nproc=3, cuts=["tree", "console", "victim"],
                            category="crashed_process"),
    "segfault-r0-of4-first": run("segfault", 0, phase="first", cuts=["tree", "console", "screen40", "mixed"],
                                 category="crashed_process"),
    "hang-r4-of5-first-plain": run("hang", 4, phase="first", nproc=5, launch="plain",
                                   cuts=["console", "paste100", "screen40"], category="hung_process"),
    "2node-memoryerror-r2-of6-first": run("memoryerror", 2, phase="first", nodes=2, nproc=3,
                                          cuts=["consoles", "host", "othercons", "culprit"], category="oom"),
    "2node-subgroup-hang-r5-of6": run("hang", 5, step=2, nodes=2, nproc=3, env={"SUBGROUP": "1"},
                                      cuts=["tree", "consoles", "host"], category="hung_process"),
    "clean-of4-detail-plain": run("none", nproc=4, env=DETAIL, launch="plain", cuts=["console", "paste80"]),
})
