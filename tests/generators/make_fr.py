#!/usr/bin/env python3
"""Write the ``tests/fixtures/fr-*`` bundles: real flight-recorder dumps from real torchrun + gloo runs.

Each scenario runs ``tests/generators/fr_job.py`` (see its docstring: a 4-rank gloo job whose
ranks write their own real dumps, ``_dump_fr_trace()``, to ``comm_lib_trace_rank_<r>``) as::

    FAULT=<fault> FAULT_RANK=<r> FAULT_STEP=4 FR_DIR=<tmp>/fr [FR_JSON=1] \
        torchrun --nproc-per-node 4 --master-port <free> --log-dir <tmp>/tl --redirects 3 --tee 3 fr_job.py

and cuts what it left the way people share it:

- ``fr-<scenario>-rank<r>``: the logs and the dumps (``logs/node01/console.log``, torchrun's
  ``--log-dir`` tree, ``logs/node01/fr/comm_lib_trace_rank_*``);
- ``…-dumps``: the dumps alone;
- ``…-dumps-no-culprit``: the dumps without the culprit's (not for ``kill``: it wrote none);
- ``fr-json-…-dumps``: the JSON form (``_dump_fr_trace_json()``) of one scenario, alone;
- ``…-logs-no-culprit-dump``: the logs and every dump but the culprit's (CUTS says which scenarios
  write which cuts; by default the first three).

``expected.yaml``: ``truth`` is what was injected; ``expect`` is what triage says on the bundle
when it is written (``--expect`` rewrites it; docs/flight-recorder.md lists where it falls short of
``truth`` and why), except for the bundles in STATED, whose ``expect`` is the truth written by hand
(issue 24's cases and their near-misses). A ``-dumps-no-culprit`` cut whose culprit is the highest rank gets
``args: {world_size: 4}``: gloo dumps state no membership, so the world size is the user's to give. No file is edited: dumps and logs are copied as the run left them.

Not run by CI (the bundles are committed); about 15-45 s per scenario, one at a time, each run
killed after RUN_LIMIT_S. Usage, from ``tests/`` (or with PYTHONPATH=tests)::

    ../.venv/bin/python -m generators.make_fr              # every scenario
    ../.venv/bin/python -m generators.make_fr hang-before  # some
    ../.venv/bin/python -m generators.make_fr --expect     # rewrite expect: from the bundles on disk
    ../.venv/bin/python -m generators.make_fr --stated     # rewrite expect: of the STATED bundles from STATED
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from generators.real_bundles.run import free_port, kill_group, torch_version, torchrun_bin

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
JOB = "fr_job.py"
RUN_LIMIT_S = 90
WORLD = 4
STEP = 4

# name -> (fault, rank, category, what happens)
SCENARIOS: dict[str, tuple[str, int, str, str]] = {
    "hang-before": ("hang-before", 2, "hung_process",
                    "rank 2 sleeps for ever before its step-4 gradient all_reduce; the others wait in it and time out"),
    "hang-inside": ("hang-inside", 1, "hung_process",
                    "rank 1 enters the step-4 all_reduce first, dumps from a thread while inside it and freezes "
                    "(SIGSTOP): the all_reduce is enqueued on every rank and completed on none"),
    "shape": ("shape", 3, "collective_mismatch",
              "rank 3 all_reduces its first gradient at step 4 with one extra element (129 for 128)"),
    "op": ("op", 0, "collective_mismatch",
           "rank 0 calls broadcast where the others call all_reduce at step 4 (the odd rank sorts first)"),
    "kill": ("kill", 1, "crashed_process",
             "rank 1 SIGKILLs itself before its step-4 all_reduce and writes no dump; the others time out"),
    "subgroup-hang": ("subgroup-hang", 3, "hung_process",
                      "pairs {0,1} and {2,3}; rank 3 sleeps for ever before the pair all_reduce of step 4: rank 2 "
                      "waits in it, ranks 0 and 1 in the next step's global all_reduce"),
    "p2p-hang": ("p2p-hang", 2, "hung_process",
                 "a token goes round the ring every step (send to r+1, recv from r-1); rank 2 sleeps for ever before "
                 "its step-4 send: gloo records send/recv in pg_status only, not as entries"),
    # Issue 24's cases, each with a near-miss that must not fire (their `expect` is STATED below).
    "subgroup-long": ("subgroup-hang", 3, "hung_process",
                      "pairs {0,1} and {2,3} with a 30-minute timeout (PAIR_TIMEOUT_S=1800); rank 3 sleeps for ever "
                      "before the pair all_reduce of step 4: rank 2 waits in it and never times out, ranks 0 and 1 "
                      "time out in the next step's global all_reduce"),
    "subgroup-long-partner": ("subgroup-hang", 2, "hung_process",
                              "pairs {0,1} and {2,3} with a 30-minute timeout (PAIR_TIMEOUT_S=1800); rank 2 sleeps "
                              "for ever before the pair all_reduce of step 4: rank 3 waits in it and never times "
                              "out, ranks 0 and 1 time out in the next step's global all_reduce"),
    "clean": ("none", -1, "none", "no fault: 8 steps, every collective completes, each rank writes its dump at the "
              "end of the job and exits 0"),
    "raise-after": ("raise-after", 1, "crashed_process",
                    "every collective completes and every rank writes its dump at the end; then rank 1 raises "
                    "OSError (No space left on device) uploading its results: the job fails after its work"),
    "shape-early": ("shape", 1, "collective_mismatch",
                    "rank 1 all_reduces its first gradient at step 4 with one extra element (129 for 128)"),
    "dynamic-hang": ("dynamic-hang", 2, "hung_process",
                     "every step first all_reduces a count whose size changes with the step (8 + step elements, "
                     "the same on every rank); rank 2 sleeps for ever before the one of step 4"),
    "shape-wide": ("shape", 7, "collective_mismatch",
                   "world size 8; rank 7 all_reduces its first gradient at step 4 with one extra element (129 for "
                   "128)"),
    "hang-agree": ("hang-before", 1, "hung_process",
                   "rank 1 sleeps for ever before its step-4 gradient all_reduce; the others wait in it and time out"),
    "hang-periodic": ("hang-before", 2, "hung_process",
                      "every rank also wrote a dump after step 2 (a periodic dump, under fr/periodic/: every "
                      "collective completed then); rank 2 sleeps for ever before its step-4 gradient all_reduce, "
                      "the others wait in it and time out and write a second dump"),
}
JSON_SCENARIO = "hang-before"
# World sizes other than WORLD, by scenario.
WORLDS: dict[str, int] = {"shape-wide": 8}
# Knobs of fr_job.py beyond FAULT*, by scenario.
ENV: dict[str, dict[str, str]] = {
    "subgroup-long": {"PAIR_TIMEOUT_S": "1800"},
    "subgroup-long-partner": {"PAIR_TIMEOUT_S": "1800"},
    "hang-periodic": {"FR_PERIODIC_STEP": "2"},
}
# The cuts written, where not every one: "" logs and dumps, "-dumps" dumps alone, "-dumps-no-culprit",
# "-logs-no-culprit-dump" the logs and every dump but the culprit's.
CUTS: dict[str, tuple[str, ...]] = {
    "subgroup-long": ("",),
    "subgroup-long-partner": ("",),
    "clean": ("", "-dumps"),
    "raise-after": ("",),
    "shape-early": ("", "-dumps"),
    "shape-wide": ("", "-dumps"),
    "dynamic-hang": ("", "-dumps"),
    "hang-agree": ("", "-logs-no-culprit-dump"),
    "hang-periodic": ("", "-dumps"),
}
_DUMP = {"rule": "fr-entry"}


def _rank(r: int) -> dict[str, Any]:
    return {"status": "diagnosed", "phase": "execution", "category": "hung_process",
            "culprits": [{"kind": "rank", "rank": r}], "culprits_exact": True}


# `expect:` of issue 24's bundles: what their sources prove (the truth), not what triage said when they
# were written; `--expect` leaves them alone.
STATED: dict[str, dict[str, Any]] = {
    # (1) rank 2 waits in the pair's all_reduce (in flight in its dump): it is cleared; rank 3 alone.
    "fr-subgroup-long-rank3": _rank(3),
    # its near-miss: the partner that really stalled is named, not the one that waits for it.
    "fr-subgroup-long-partner-rank2": _rank(2),
    # (4) every op completed, no error in any log, every rank exited 0.
    "fr-clean": {"status": "no_failure", "culprits": [], "culprits_exact": True},
    # The dumps alone cannot prove a clean end: gloo counts a work that failed as completed, and two
    # ranks' dumps still show the last barrier in flight (recorded before its completion was seen).
    # No culprit, and no failure stated either.
    "fr-clean-dumps": {"status": "inconclusive", "culprits": [], "culprits_exact": True},
    # its near-miss: every dump shows completed work, but rank 1's log shows it failed.
    "fr-raise-after-rank1": {"status": "diagnosed", "category": "crashed_process",
                             "culprits": [{"kind": "rank", "rank": 1}], "culprits_exact": True},
    # (5) a real gradient-size mismatch that ends ranks 0 and 1 (gloo's size check aborts both, the odd
    # rank among them): no dump of either. The logs say "collective mismatch" for both; neither source
    # shows which of the two ran the odd size: a collective mismatch, inconclusive.
    "fr-shape-early-rank1": {"status": "inconclusive", "phase": "execution", "category": "collective_mismatch"},
    # the dumps alone: ranks 2 and 3 end at one collective with nothing in flight, ranks 0 and 1 left
    # none: those two are named; no dump shows a size of theirs, nor whether they crashed or hung.
    "fr-shape-early-rank1-dumps": {"status": "diagnosed", "phase": "execution",
                                   "culprits": [{"kind": "rank", "rank": 0}, {"kind": "rank", "rank": 1}],
                                   "culprits_exact": True,
                                   "unchecked": {"category": "the two ranks gloo's size check ended (the odd one "
                                                             "among them) left no dump"}},
    # the same fault where the odd rank's dump is there (world 8, rank 7; rank 6 left none): named by
    # majority.
    "fr-shape-wide-rank7": {"status": "diagnosed", "phase": "execution", "category": "collective_mismatch",
                            "culprits": [{"kind": "rank", "rank": 7}], "culprits_exact": True},
    "fr-shape-wide-rank7-dumps": {"status": "diagnosed", "phase": "execution", "category": "collective_mismatch",
                                  "culprits": [{"kind": "rank", "rank": 7}], "culprits_exact": True},
    # its near-miss: sizes that differ from step to step (alike on every rank) are no mismatch.
    "fr-dynamic-hang-rank2": _rank(2),
    "fr-dynamic-hang-rank2-dumps": _rank(2),
    # (6) logs and dumps both name rank 1: both are cited.
    "fr-hang-agree-rank1": {**_rank(1), "cites": [{"source": "stdout.log"},
                                                   {"source": "fr/comm_lib_trace_rank_1", **_DUMP}]},
    # its near-miss: without rank 1's dump, no dump of rank 1 is cited (the peers' dumps show them waiting).
    "fr-hang-agree-rank1-logs-no-culprit-dump": {**_rank(1), "cites": [{"source": "stdout.log"},
                                                                       {"source": "fr/comm_lib_trace_rank_0", **_DUMP}]},
    # Two dumps of every rank (one after step 2, one at the hang): one timeline per rank, its latest dump.
    # (the earlier dumps show ALL_REDUCE #16 in flight, long completed: read as the wait, they misled)
    "fr-hang-periodic-rank2": _rank(2),
    "fr-hang-periodic-rank2-dumps": {**_rank(2), "says": {"reasoning": [
        "waited in ALL_REDUCE #21", "left more than one dump (8 in all): each rank's latest was read"]}},
}


def bundle_name(scenario: str, cut: str = "") -> str:
    _fault, rank, _, _ = SCENARIOS[scenario]
    return f"fr-{scenario}{f'-rank{rank}' if rank >= 0 else ''}{cut}"


def run(scenario: str, tmp: Path) -> str:
    fault, rank, _, _ = SCENARIOS[scenario]
    shutil.copy(HERE / JOB, tmp / JOB)
    fault_env = {"FAULT": fault, "FAULT_RANK": str(rank), "FAULT_STEP": str(STEP)}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAULT", "FR_", "TORCH_FR", "TORCH_NCCL"))}
    fault_env.update(ENV.get(scenario, {}))
    env.update(fault_env, FR_DIR=str(tmp / "fr"), FR_JSON="1" if scenario == JSON_SCENARIO else "0")
    world = WORLDS.get(scenario, WORLD)
    cmd = [torchrun_bin(), "--nproc-per-node", str(world), "--master-port", str(free_port()),
           "--log-dir", str(tmp / "tl"), "--redirects", "3", "--tee", "3", JOB]
    (tmp / "node01").mkdir()
    with open(tmp / "node01" / "console.log", "wb") as console:
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=console, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(RUN_LIMIT_S)
        except subprocess.TimeoutExpired:
            kill_group(proc)
    shown = " ".join(f"{k}={v}" for k, v in fault_env.items())
    return (f"{shown} FR_DIR=<tmp>/fr torchrun --nproc-per-node {world} --master-port <free> "
            f"--log-dir <tmp>/tl --redirects 3 --tee 3 {JOB}")


def write_bundles(scenario: str, tmp: Path, command: str, tv: str) -> list[str]:
    fault, rank, category, story = SCENARIOS[scenario]
    dumps = sorted(p for p in (tmp / "fr").glob("comm_lib_trace_rank_*") if not p.name.endswith(".json"))
    periodic = sorted((tmp / "fr" / "periodic").glob("comm_lib_trace_rank_*"))  # FR_PERIODIC_STEP's
    cuts: dict[str, list[tuple[Path, str]]] = {"": [], "-dumps": [(p, p.name) for p in dumps]
                                               + [(p, f"periodic/{p.name}") for p in periodic]}
    if fault not in ("kill", "none"):
        cuts["-dumps-no-culprit"] = [(p, p.name) for p in dumps if p.name != f"comm_lib_trace_rank_{rank}"]
    for tree in (tmp / "tl").iterdir():  # torchrun's <log-dir>/<run id>/attempt_0/<rank>/…
        cuts[""] += [(f, f"node01/{f.relative_to(tmp / 'tl')}") for f in sorted(tree.rglob("*.log"))]
    cuts[""] += [(tmp / "node01" / "console.log", "node01/console.log")]
    logs_only = list(cuts[""])
    cuts[""] += [(p, f"node01/fr/{p.name}") for p in dumps] + [(p, f"node01/fr/periodic/{p.name}") for p in periodic]
    cuts["-logs-no-culprit-dump"] = logs_only + [(p, f"node01/fr/{p.name}") for p in dumps
                                                 if p.name != f"comm_lib_trace_rank_{rank}"]
    wanted = CUTS.get(scenario, ("", "-dumps", "-dumps-no-culprit", "-json-dumps"))
    cuts = {cut: files for cut, files in cuts.items() if cut in wanted}
    if scenario == JSON_SCENARIO:
        cuts["-json-dumps"] = [(p, p.name) for p in sorted((tmp / "fr").glob("*.json"))]
    made = []
    for cut, files in cuts.items():
        name = bundle_name(scenario, cut) if cut != "-json-dumps" else f"fr-json-{scenario}-rank{rank}-dumps"
        dest = FIXTURES / name
        if dest.exists():
            shutil.rmtree(dest)
        for src, rel in files:
            (dest / "logs" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dest / "logs" / rel)
        what = {"": "the logs (console and torchrun --log-dir tree) and every dump",
                "-dumps": "the dumps alone", "-dumps-no-culprit": f"the dumps without rank {rank}'s",
                "-logs-no-culprit-dump": f"the logs and every dump but rank {rank}'s",
                "-json-dumps": "the JSON-form dumps (_dump_fr_trace_json) alone"}[cut]
        present = [int(rel.rsplit("_", 1)[1].split(".")[0]) for _, rel in files if "comm_lib_trace_rank_" in rel]
        spec: dict[str, Any] = {
            "description": (f"Real torchrun + gloo run on torch {tv} (CPU), world size {WORLDS.get(scenario, WORLD)}: "
                            f"{story}. Each rank "
                            f"wrote its own real flight-recorder dump (fr_job.py). This bundle holds {what}"
                            + (f" (dumps of ranks {sorted(set(present))})." if present else ".")),
            "made_by": f"tests/generators/make_fr.py {scenario}: {command}",
            "truth": {"fault": fault, "rank": rank, "phase": "execution", "category": category,
                      "step": STEP, "dumps_of": sorted(set(present))} if fault != "none" else
                     {"fault": "none", "rank": None, "phase": None, "steps": 8, "dumps_of": sorted(set(present))},
            "expect": STATED.get(name, {"status": "inconclusive"}),
        }
        if cut == "-dumps-no-culprit" and rank == WORLD - 1:
            # gloo dumps state no membership: without the highest rank's dump, only the user can say
            # the world had WORLD ranks (`--world-size`), as one does on a real job.
            spec = {**{k: v for k, v in spec.items() if k != "expect"}, "args": {"world_size": WORLD},
                    "expect": spec["expect"]}
        (dest / "expected.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, width=110), encoding="utf-8")
        made.append(name)
    return made


def set_expect(name: str) -> None:
    """`expect:` of a bundle: what triage says on it now (the injected truth stays under `truth:`)."""
    from triage.api import analyze

    dest = FIXTURES / name
    if name in STATED:
        return  # its expect: is the truth, written with the bundle
    spec = yaml.safe_load((dest / "expected.yaml").read_text(encoding="utf-8"))
    verdict = analyze([dest / "logs"], world_size=(spec.get("args") or {}).get("world_size")).verdict
    expect: dict[str, Any] = {"status": verdict.status.value}
    if verdict.status.value == "diagnosed":
        expect["phase"] = verdict.phase.value
        expect["category"] = verdict.category.value
        expect["culprits"] = [{"kind": "rank", "rank": c.rank} for c in verdict.culprits if c.kind == "rank"]
        expect["culprits_exact"] = True
    spec["expect"] = expect
    (dest / "expected.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, width=110), encoding="utf-8")


def main(argv: list[str]) -> int:
    if "--stated" in argv:  # rewrite expect: of the STATED bundles from the table, without a run
        for name, expect in STATED.items():
            path = FIXTURES / name / "expected.yaml"
            spec = yaml.safe_load(path.read_text(encoding="utf-8"))
            spec["expect"] = expect
            path.write_text(yaml.safe_dump(spec, sort_keys=False, width=110), encoding="utf-8")
        return 0
    if "--expect" in argv:
        for dest in sorted(FIXTURES.glob("fr-*/expected.yaml")):
            set_expect(dest.parent.name)
        return 0
    names = argv or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    tv = torch_version()
    for scenario in names:
        t0 = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f"triage-fr-{scenario}-"))
        command = run(scenario, tmp)
        made = write_bundles(scenario, tmp, command, tv)
        for name in made:
            set_expect(name)
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"{scenario}: {', '.join(made)} in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
