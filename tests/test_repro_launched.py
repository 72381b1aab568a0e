"""`triage repro` under real torchrun: one agent (one node) and two agents (two nodes on this host).

Each launched process supervises its rank; rank 0's reports for all. Whatever the fault, and
wherever it is (rank 0 itself, a rank on rank 0's node, a rank on the other node), the console of
rank 0's node must show the verdict naming the rank and the phase, the report must be in a file
at the printed path, torchrun must exit non-zero, and nothing may be left running. A healthy job
must never be reported as a failure.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import time
from pathlib import Path

import pytest
from repro_helpers import MARK, Job, marked_processes, torchrun_job, wait_gone

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="triage repro needs PyTorch (pip install 'triage[repro]')")

DEADLINE_S = 2.0
PHASES = ("comm_init", "operator_load", "execution")
KINDS = ("crash", "hang", "wrong-value", "slow")
CATEGORY = {"hang": "hung_process", "crash": "crashed_process"}
# (agents, ranks per agent, the "other" rank): one node of 2 ranks, or two nodes of 1 rank each
LAYOUTS = {"1-agent": (1, 2, 1), "2-agents": (2, 1, 1)}


def _fault_args(kind: str, phase: str, rank: int) -> list[str]:
    args = ["--timeout", str(DEADLINE_S), "--inject", kind, "--inject-rank", str(rank), "--inject-phase", phase]
    if (kind, phase) == ("slow", "comm_init"):
        # Late at init is flagged past a quarter of the deadline (at least 1 s): half of a 6 s
        # deadline stands well clear of start-up jitter.
        args += ["--timeout-comm-init", "6"]
    return args


def assert_delivered(job: Job) -> None:
    """A verdict on rank 0's console, the same in the report file, and nothing left behind."""
    assert job.leftovers == [], f"processes left behind: {job.leftovers}"
    assert "Traceback (most recent call last):\n  File \"<frozen runpy>\"" not in job.console.split(
        "triage 0.1.0")[0], job.console  # nothing of ours crashed before the verdict
    assert job.report_path.is_file()
    printed = job.report_path.read_text()
    assert printed.split("triage 0.1.0", 1)[1].split("report:")[0].strip() in job.console
    for cwd in job.cwd:
        assert [p.name for p in cwd.iterdir() if not p.name.startswith("triage-repro-")] == []


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("at", ["rank0", "other"])
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("kind", KINDS)
def test_every_fault_is_named_under_torchrun(tmp_path: Path, kind: str, phase: str, at: str, layout: str) -> None:
    agents, nproc, other = LAYOUTS[layout]
    rank = 0 if at == "rank0" else other
    job = torchrun_job(tmp_path, agents, nproc, *_fault_args(kind, phase, rank))
    assert job.code == 1, job.console
    assert_delivered(job)
    verdict = job.verdict
    assert verdict["status"] == "diagnosed", job.console
    assert job.culprit_ranks() == [rank], job.console
    assert verdict["phase"] == phase, job.console
    if kind in CATEGORY:
        assert verdict["category"] == CATEGORY[kind], job.console
    assert f"Culprit: rank {rank} " in job.console
    assert f"phase {phase}" in job.console


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("repeat", range(20))
def test_a_healthy_job_is_never_a_failure(tmp_path: Path, repeat: int) -> None:
    layout = list(LAYOUTS)[repeat % 2]
    agents, nproc, _ = LAYOUTS[layout]
    job = torchrun_job(tmp_path, agents, nproc, "--timeout", "20")
    assert job.code == 0, job.console
    assert_delivered(job)
    assert job.verdict["status"] == "no_failure", job.console
    assert "NO FAILURE" in job.console
    if agents == 2:
        # The reporter gathered the other node's logs next to its own.
        assert list(job.report_path.parent.glob("*/rank1.log")), job.console


@needs_torch
@pytest.mark.slow
def test_a_rank_whose_process_is_killed_is_named(tmp_path: Path) -> None:
    """SIGKILL the process torchrun watches for rank 1 (as the OOM killer would): torchrun then
    SIGTERMs the others; rank 0's process must still report, naming rank 1."""
    # (see test body: the kill happens once every rank is in its execution phase)
    import subprocess
    import sys
    import uuid

    mark = uuid.uuid4().hex
    env = dict(os.environ, **{MARK: mark, "CI": "1", "PYTHONUNBUFFERED": "1"})
    cwd = tmp_path / "node0"
    cwd.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                             "3", "-m", "triage", "repro", "--backend", "gloo", "--sizes", "1K", "--iters", "2",
                             "--timeout", "30", "--inject", "hang", "--inject-rank", "2"],
                            env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    supervisor = _wait_for_supervisor(cwd, rank=1)
    os.kill(supervisor, signal.SIGKILL)
    out, _ = proc.communicate(timeout=90)
    job = Job(proc.returncode, out, [out], 0.0, [cwd], wait_gone(mark, within=5.0))
    assert job.code != 0
    assert_delivered(job)
    assert job.culprit_ranks() == [1], out
    assert "sent no word after it started" in (job.report_path.parent / "coordinator.log").read_text()


def _wait_for_supervisor(cwd: Path, rank: int) -> int:
    """The pid of rank `rank`'s `triage repro` process, once its rank is in execution."""
    until = time.monotonic() + 60
    while time.monotonic() < until:
        logs = list(cwd.glob("triage-repro-*/rank*.log"))
        if len(logs) == 3 and all("phase execution start" in p.read_text(errors="replace") for p in logs):
            text = (next(cwd.glob(f"triage-repro-*/rank{rank}.log"))).read_text()
            rank_pid = int(text.split(" pid ", 1)[1].split(",", 1)[0])
            return int(Path(f"/proc/{rank_pid}/stat").read_text().split(") ", 1)[1].split()[1])
        time.sleep(0.1)
    raise AssertionError("the ranks did not reach execution within 60 s")


__all__ = ["marked_processes"]
