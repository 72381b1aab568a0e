"""Record what real Slurm makes of host lists, for tests/test_decision_outputs.py (which then needs no Slurm).

Needs `scontrol` (Debian: `apt-get install slurm-client`); it reads host lists without a controller,
given any slurm.conf (a minimal one is written to a temporary folder). For each case it records:
the names, Slurm's own compressed list of them (`scontrol show hostlist`) and what that expands to
(`scontrol show hostnames`), and triage's list of them (`triage.decision.hostlist.compress`) with
what Slurm expands that to. Run from tests/:

    python -m generators.make_slurm_hostlists [--check]
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from triage.decision.hostlist import compress

OUT = Path(__file__).resolve().parents[1] / "data" / "slurm-hostlists.json"
EDGES = [
    ["node01", "node02", "node03", "node07", "gpu-a9", "gpu-a10", "gpu-a11"],
    ["n9", "n10", "n010"], ["a1", "a01", "a001", "a2", "a02"], ["n0", "n00", "n1", "n01"],
    ["x", "host", "host1"], ["n099", "n100", "n101"], ["10.0.0.1", "10.0.0.2", "10.0.0.9"],
    ["node1-ib", "node2-ib"], ["gpu-node-02"], ["a.b.c1", "a.b.c2"], ["rack1n1", "rack1n2", "rack2n1"],
    ["n12345678901234567", "n12345678901234568"], ["n7", "n8", "n9", "n10", "n11", "n99", "n100"],
]


def _cases(seed: int = 25, count: int = 60) -> list[list[str]]:
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    cases = [list(e) for e in EDGES]
    for _ in range(count):
        names = set()
        for _ in range(rng.randint(1, 25)):
            prefix = rng.choice(["node", "gpu-", "n", "rack3-node", "c", ""])
            width = rng.choice([0, 0, 2, 3, 4])
            number = rng.randint(0, rng.choice([9, 30, 150, 1200]))
            names.add(prefix + (str(number).zfill(width) if width else str(number)) if prefix or number else "x")
        cases.append(sorted(names, key=lambda _: rng.random()))
    return cases


def _scontrol(conf: str, *args: str) -> str:
    done = subprocess.run(["scontrol", "show", *args], capture_output=True, text=True, check=True,
                          env=dict(os.environ, SLURM_CONF=conf), timeout=30)
    return done.stdout


def build() -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        conf = str(Path(folder) / "slurm.conf")
        Path(conf).write_text("ClusterName=t\nSlurmctldHost=localhost\nNodeName=localhost CPUs=1\n"
                              "PartitionName=p Nodes=ALL\n", encoding="utf-8")
        version = subprocess.run(["scontrol", "--version"], capture_output=True, text=True, check=True,
                                 env=dict(os.environ, SLURM_CONF=conf)).stdout
        cases = []
        for names in _cases():
            theirs = _scontrol(conf, "hostlist", ",".join(names)).strip()
            ours = compress(names)
            cases.append({"names": names, "slurm": theirs,
                          "slurm_expands": _scontrol(conf, "hostnames", theirs).split(),
                          "triage": ours, "slurm_expands_triage": _scontrol(conf, "hostnames", ours).split()})
    return {"made_by": "tests/generators/make_slurm_hostlists.py", "slurm": version.strip(), "cases": cases}


def main() -> int:
    data = build()
    text = json.dumps(data, indent=1) + "\n"
    if "--check" in sys.argv:
        return 0 if OUT.read_text(encoding="utf-8") == text else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"{OUT}: {len(data['cases'])} cases ({data['slurm']})")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
