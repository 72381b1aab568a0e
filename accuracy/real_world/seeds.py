"""Cases from texts nobody here wrote: real NCCL 2.28.9 runs on an H100 (tests/fixtures/real-gpu-nccl2289-*,
tests/fixtures/ras-captured-nccl2.28.9: cut in ways their fixtures do not), and the example status
reports printed in NCCL's RAS guide (quoted exactly, with the truth the guide states).

The Huawei HCCL fault guide ("HCCL集合通信常见问题定位思路", 2024-09-30) was read too: it describes the
three phases and where to look, but prints no example log output, so it gives no case.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import yaml
from cut import PHASE_SAID, failure_visible, wrap
from make import CASES, ROOT, SEED

FIX = ROOT / "tests" / "fixtures"
GPU_SRC = ("real run on an H100 (torch 2.11.0+cu130, NCCL 2.28.9, 4 ranks sharing the GPU over NET/Socket), "
           "kept in tests/fixtures/{fx} (its description holds the command)")
RAS_SRC = ("real NCCL 2.28.9 RAS output captured on an H100 (tests/fixtures/ras-captured-nccl2.28.9, "
           "whose README holds the job and the commands)")

# The NCCL RAS guide ("RAS", NCCL user guide, troubleshooting section), its "Sample Output" examples.
RAS_GUIDE = {
    "healthy": ("""Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      4          8            1         32       32

Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         8         4         1         4        32   RUNNING      OK
""", None, None, None, "a job that is progressing normally (the guide's words)"),
    "mismatch-in-flight": ("""Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4         8        32        32   RUNNING  MISMATCH

Warnings
========

#0-0 (27a079b828ff1a75) MISMATCH
  Communicator ranks have different collective operation counts
  26 ranks have launched up to operation 6650
  6 ranks have launched up to operation 6649
  Rank 0 -- GPU 0 managed by process 483072 on node 172.16.64.210
  Rank 2 -- GPU 2 managed by process 483074 on node 172.16.64.210
  Rank 3 -- GPU 3 managed by process 483075 on node 172.16.64.210
  Rank 4 -- GPU 4 managed by process 483076 on node 172.16.64.210
  Rank 5 -- GPU 5 managed by process 483077 on node 172.16.64.210
  Rank 7 -- GPU 7 managed by process 483079 on node 172.16.64.210
""", None, None, None, "an actively communicating job: 'should not be a cause for concern, as long as the counts "
                       "increase across repeated queries' (one snapshot: no failure shown, no culprit)"),
    "transition": ("""Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4       1-2        32        32  FINALIZE  MISMATCH
    1         7         4         1         4        28   RUNNING      OK
    2         1         4         1         4         4      INIT      OK

#0-0 (9e17999afaa87dbb) MISMATCH
  Communicator ranks have different status
  26 ranks have status UNKNOWN
  4 ranks have status RUNNING
  Rank 0 -- GPU 0 managed by process 507285 on node 172.16.64.210
  Rank 8 -- GPU 0 managed by process 1598388 on node 172.16.64.212
  Rank 16 -- GPU 0 managed by process 3500071 on node 172.16.64.213
  Rank 24 -- GPU 0 managed by process 2405067 on node 172.16.64.222
  2 ranks have status FINALIZE
  Rank 4 -- GPU 4 managed by process 507289 on node 172.16.64.210
  Rank 20 -- GPU 4 managed by process 3500075 on node 172.16.64.213
""", None, None, None, "a transitional situation: the 32-GPU communicator being replaced by eight 4-GPU ones "
                       "(the guide's example line '[...]' between the table and the warning left out)"),
    "incomplete-stopped": ("""Communicators... (2.05s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4       7-8        32        32   RUNNING  INCOMPLETE

Errors
======

INCOMPLETE
  Missing communicator data from 1 job process
  Process 3487984 on node 172.16.64.213 managing GPU 5

#0-0 (cf264af53edbe986) INCOMPLETE
  Missing communicator data from 1 rank
  The missing rank: 21

Warnings
========

TIMEOUT
  Encountered 2 communication timeouts while gathering communicator data
""", 21, "execution", "hung_process", "right after artificially creating a problem with one job process: the "
                                      "process was stopped; RAS names missing rank 21 (process 3487984, node "
                                      "172.16.64.213, GPU 5)"),
    "dead": ("""Errors
======

DEAD
  1 job process is considered dead (unreachable via the RAS network)
  Process 3487984 on node 172.16.64.213 managing GPU 5

#0-0 (cf264af53edbe986) INCOMPLETE
  Missing communicator data from 1 rank
  The missing rank: 21
""", 21, "execution", "hung_process", "60 s later, the same stopped process declared dead; rank 21"),
}


def case(name: str, source: str, how: str, files: dict[str, bytes | Path], truth: dict,
         extra: dict | None = None) -> None:
    d = CASES / name
    if d.exists():
        shutil.rmtree(d)
    inp = d / "input"
    for rel, content in files.items():
        (inp / rel).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy(content, inp / rel)
        else:
            (inp / rel).write_bytes(content)
    said = any(PHASE_SAID.search(p.read_text(errors="replace")) for p in inp.rglob("*") if p.is_file())
    truth = {"failed": truth["failed"], "failure_visible": truth["failed"] and failure_visible(inp), **truth,
             "phase_knowable": truth["failed"] and said}
    suffix = name.split("--")[-1]
    kind = ("ras-dump" if name.startswith("ras-captured") else "ras-guide-example" if name.startswith("ras-guide")
            else {"rank0": "victim", "rank2": "victim", "rank2-rank3": "two-ranks", "ras-one": "ras-snapshot",
                  "mixed-ras-console": "mixed", "ras-snapshots": "ras-snapshots"}.get(suffix, suffix))
    doc = {"case": name, "source": source, **(extra or {}), "seed": SEED, "cut": {"kind": kind, "how": how},
           "truth": truth}
    (d / "truth.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, width=110, allow_unicode=True))
    print(f"{name}: knowable={truth['knowable']}")


def T(rank, phase, category, knowable, why, failed=True):
    return {"failed": failed, "culprit": None if rank is None else {"kind": "rank", "rank": rank},
            "phase": phase, "category": category, "knowable": knowable, "why": why}


def rankfiles(fx: str, r: int) -> dict[str, Path]:
    base = next((FIX / fx / "logs").glob(f"none_*/attempt_0/{r}"))
    rel = base.relative_to(FIX / fx / "logs")
    return {f"{rel}/{f}": base / f for f in ("stdout.log", "stderr.log")}


def make_seeds() -> None:
    CASES.mkdir(exist_ok=True)
    # ---- real GPU runs, cut anew ---------------------------------------------------------------
    jobs = {"crash": ("crashed_process", True), "hang": ("hung_process", False), "kill": ("crashed_process", False)}
    for kind, (cat, speaks) in jobs.items():
        fx = f"real-gpu-nccl2289-job-{kind}-rank2"
        src = GPU_SRC.format(fx=fx)
        cons = FIX / fx / "logs" / "console.txt"
        text = cons.read_text(errors="replace")
        lines = text.splitlines(keepends=True)
        rng = random.Random(f"{SEED}:{fx}")  # noqa: S311 (a recorded cut choice, not a secret)
        full = T(2, "execution", cat, True, "the console holds every rank's lines and torchrun's records")
        case(f"gpu-{kind}-r2--console", src, "only the torchrun console (console.txt)", {"console.txt": cons}, full)
        n = {"crash": 50, "hang": 60, "kill": 40}[kind]
        tail = "".join(lines[-n:])
        if kind == "crash":
            k = "[rank2]" in tail and "RuntimeError" in tail
            tr = T(2, "execution", cat, k, "rank 2's own RuntimeError is in the excerpt" if k else
                   "only victims' and torchrun's lines are left in the excerpt")
        else:
            tr = T(2, "execution", cat, False, "the tail holds the SIGTERMs and torchrun's summary (its root cause "
                                              "is the first process reaped, not the culprit)")
        case(f"gpu-{kind}-r2--screen{n}", src, f"a screen excerpt: the last {n} lines of console.txt",
             {"screen.txt": tail.encode()}, tr)
        width, q = rng.choice([(80, ""), (100, "> "), (100, "")])
        case(f"gpu-{kind}-r2--paste{width}{'q' if q else ''}", src,
             f"console.txt hard-wrapped at {width} columns" + (" with a '> ' prefix" if q else ""),
             {"paste.txt": wrap(text, width, q).encode()}, full)
        victim = rng.choice([0, 1, 3])
        case(f"gpu-{kind}-r2--victim{victim}", src, f"one rank's files: rank {victim}'s stdout.log and stderr.log",
             rankfiles(fx, victim), T(2, "execution", cat, False, "a victim's files alone"))
        case(f"gpu-{kind}-r2--culprit", src, "one rank's files: rank 2's stdout.log and stderr.log",
             rankfiles(fx, 2), T(2, "execution", cat, speaks,
                                 "rank 2's own RuntimeError" if speaks else "the culprit's file does not say it is the cause"))
        if kind != "kill":
            other = rng.choice([0, 1, 3])
            errf = rankfiles(fx, other)
            mixed = cons.read_bytes() + next(p for r, p in errf.items() if r.endswith("stderr.log")).read_bytes()
            case(f"gpu-{kind}-r2--mixed", src, f"one file: console.txt followed by rank {other}'s stderr.log",
                 {"job-output.txt": mixed}, full)

    fx = "real-gpu-nccl2289-ras-job-hang-rank2"
    src = GPU_SRC.format(fx=fx)
    ras = sorted((FIX / fx / "logs" / "ras").glob("*.txt"))
    case("gpu-ras-hang-r2--ras-snapshots", src, "only the three RAS text snapshots taken 12 s apart",
         {f"ras/{p.name}": p for p in ras},
         T(2, "execution", "hung_process", True, "rank 2 one AllReduce behind in every snapshot, counts not moving"))
    case("gpu-ras-hang-r2--ras-one", src, "one RAS text snapshot",
         {"ras.txt": ras[0]}, T(2, "execution", "hung_process", False,
                                "one snapshot: a rank behind is a lead, not a hang (take another)"))
    cons = FIX / fx / "logs" / "console.txt"
    case("gpu-ras-hang-r2--mixed-ras-console", src,
         "one file: the last RAS snapshot pasted above the torchrun console",
         {"job-output.txt": ras[-1].read_bytes() + b"\n" + cons.read_bytes()},
         T(2, "execution", "hung_process", True, "RAS shows rank 2 behind; the console holds every rank's lines"))
    case("gpu-ras-hang-r2--console", src, "only the torchrun console", {"console.txt": cons},
         T(2, "execution", "hung_process", True, "the console holds every rank's lines"))

    fx = "real-gpu-nccl2289-repro-hang-rank2"
    src = GPU_SRC.format(fx=fx)
    case("gpu-repro-hang-r2--coordinator", src, "only triage repro's coordinator.log",
         {"coordinator.log": FIX / fx / "logs" / "coordinator.log"},
         T(2, "execution", "hung_process", False, "every rank reports 'stuck'; the coordinator does not say who"))
    case("gpu-repro-hang-r2--rank0", src, "one rank's log: rank0.log", {"rank0.log": FIX / fx / "logs" / "rank0.log"},
         T(2, "execution", "hung_process", False, "a victim's log alone"))
    case("gpu-repro-hang-r2--rank2-rank3", src, "two ranks' logs: rank2.log and rank3.log",
         {f"rank{r}.log": FIX / fx / "logs" / f"rank{r}.log" for r in (2, 3)},
         T(2, "execution", "hung_process", False, "two of four ranks; no world to hold silence against"))
    fx = "real-gpu-nccl2289-repro-torchrun-kill-rank1"
    src = GPU_SRC.format(fx=fx)
    case("gpu-repro-kill-r1--coordinator", src, "only triage repro's coordinator.log",
         {"coordinator.log": FIX / fx / "logs" / "coordinator.log"},
         T(1, "execution", "crashed_process", True, "the coordinator says rank 1 was SIGKILLed first"))
    case("gpu-repro-kill-r1--rank2", src, "one rank's log: rank2.log", {"rank2.log": FIX / fx / "logs" / "rank2.log"},
         T(1, "execution", "crashed_process", False, "a victim's log alone"))

    # ---- real RAS dumps, one file each (as someone would hand over one ncclras output) --------------
    rc = FIX / "ras-captured-nccl2.28.9"
    ras_cases = {
        "run1-straggler.txt": T(3, "execution", "hung_process", False, "one snapshot: rank 3 one operation behind is a lead"),
        "run1-straggler.json": T(3, "execution", "hung_process", False, "one snapshot: rank 3 one operation behind is a lead"),
        "run1-killed.json": T(3, "execution", "crashed_process", True, "rank 3 unresponsive in the world and in [2,3]"),
        "run1-killed.txt": T(3, "execution", "crashed_process", False,
                             "garbled by the 2.26-2.28 text bug: the world communicator is missing"),
        "run2-ahead.txt": T(None, "execution", "collective_mismatch", False,
                            "two ranks against two: no minority to name"),
        "run2-killed.txt": T(3, "execution", "crashed_process", True, "INCOMPLETE: rank 3 missing"),
        "run2-killed.json": T(3, "execution", "crashed_process", True, "rank 3 missing"),
        "run2-dead.txt": T(3, "execution", "crashed_process", True, "DEAD: rank 3's process"),
        "run2-dead-verbose.txt": T(3, "execution", "crashed_process", True, "DEAD: rank 3's process"),
    }
    for f, tr in ras_cases.items():
        case(f"ras-captured--{f.replace('.', '-')}", RAS_SRC, f"one RAS dump: {f}", {f: rc / f}, tr)

    # ---- the NCCL RAS guide's sample outputs -------------------------------------------------------
    for key, (text, rank, phase, cat, what) in RAS_GUIDE.items():
        tr = T(rank, phase, cat, rank is not None, what, failed=rank is not None)
        case(f"ras-guide--{key}", "NCCL RAS guide (NCCL user guide, 'RAS', Sample Output), quoted exactly",
             ("the example output as printed in the guide, saved as a file (where the guide splits one output "
             "with its commentary, the output's blocks are joined and the commentary left out)"), {"ras-status.txt": text.encode()}, tr)
