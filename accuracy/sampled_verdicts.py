"""Verdicts on jobs no fixture holds: random jobgen jobs (fault x era x layout x size x culprit).

    python accuracy/sampled_verdicts.py [SEED] [--jobs N]

The committed fixtures are what the diagnosis was tuned on; this draws fresh jobs and scores the
culprit and the phase against the generator's own truth, flagging any wrong culprit stated with
confidence >= 0.7. Each job is written to a temporary folder and read back by `analyze`.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the job generator: tests/generators/

from generators import jobgen

from triage.api import analyze
from triage.model import Verdict

SIZES = ((1, 8), (2, 4), (2, 8), (4, 4))


def draw(rng: random.Random) -> dict[str, object] | None:
    fault = rng.choice(jobgen.FAULTS)
    hosts, gpus = rng.choice(SIZES)
    layout = rng.choice(("torchrun", "per-rank") if fault == "subgroup" else jobgen.LAYOUTS)
    culprit: int | str | None = None
    if fault == "ib":
        if hosts == 1:
            return None  # a link fault needs two hosts
        culprit = f"gpu-node-{rng.randrange(hosts) + 1:02d}"
    elif fault != "none":
        culprit = rng.randrange(hosts * gpus)
        if fault == "store" and culprit == 0:
            culprit = 1  # rank 0 hosts the store
    return {"hosts": hosts, "gpus": gpus, "era": rng.choice(list(jobgen.ERAS)), "fault": fault,
            "culprit": culprit, "layout": layout, "seed": rng.randrange(10**6), "noise_lines": 30}


def right(truth: jobgen.Truth, verdict: Verdict) -> bool:
    if truth.fault == "none":
        return verdict.status.value == "no_failure"
    ranks = {c.rank for c in verdict.culprits if c.kind == "rank"}
    hosts = {c.host for c in verdict.culprits if c.kind in ("host", "link")}
    if truth.culprit_host is not None and truth.culprit_rank is None:
        return verdict.status.value == "diagnosed" and truth.culprit_host in hosts
    return verdict.status.value == "diagnosed" and ranks == {truth.culprit_rank}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("seed", nargs="?", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=40)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)  # noqa: S311 - a reproducible sample, not a secret
    culprits = phases = confident_wrong = done = 0
    while done < args.jobs:
        job = draw(rng)
        if job is None:
            continue
        folder = Path(tempfile.mkdtemp(prefix="triage-sample-"))
        try:
            truth = jobgen.generate(folder / "job", **job)  # type: ignore[arg-type]
            verdict = analyze([folder / "job"]).verdict
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        done += 1
        ok = right(truth, verdict)
        phase_ok = truth.fault == "none" or verdict.phase.value == truth.phase
        wrong = verdict.status.value == "diagnosed" and not ok and verdict.confidence >= 0.7
        culprits, phases, confident_wrong = culprits + ok, phases + phase_ok, confident_wrong + wrong
        mark = ("C" if ok else "c") + ("P" if phase_ok else "p") + ("!" if wrong else " ")
        who = ", ".join(str(c.rank if c.kind == "rank" else c.host) for c in verdict.culprits)
        print(f"{mark} {job['fault']:16} {job['era']} {job['layout']:12} {job['hosts']}x{job['gpus']} "
              f"culprit {job['culprit']} -> {verdict.status.value} {verdict.phase.value} [{who}] "
              f"{verdict.confidence:.2f} {verdict.hypothesis or '-'}")
    print(f"\n{done} jobs: culprit right {culprits}, phase right {phases}, "
          f"wrong culprit with confidence >= 0.7: {confident_wrong}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
