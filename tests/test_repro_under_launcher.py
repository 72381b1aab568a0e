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
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from repro_helpers import MARK, Job, free_port, full_matrix, torchrun_job, wait_gone

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="triage repro needs PyTorch (pip install 'triage[repro]')")

DEADLINE_S = 2.0  # the deadline of the phase a fault is injected in (the others': CALM_S)
CALM_S = "30"  # the deadline of phases with no fault: they end at once, but a loaded machine may be slow
PHASES = ("comm_init", "operator_load", "execution")
KINDS = ("crash", "hang", "wrong-value", "slow")
SOAK_IN_SUITE = 4  # healthy runs of the soak below that the suite runs by default
CATEGORY = {"hang": "hung_process", "crash": "crashed_process"}
# (agents, ranks per agent, the "other" rank): one node of 2 ranks, or two nodes of 1 rank each
LAYOUTS = {"1-agent": (1, 2, 1), "2-agents": (2, 1, 1)}


def _fault_args(kind: str, phase: str, rank: int) -> list[str]:
    deadline = "6" if (kind, phase) == ("slow", "comm_init") else str(DEADLINE_S)
    # Late at init is flagged past a quarter of the deadline (at least 1 s): half of a 6 s deadline
    # stands well clear of start-up jitter.
    return ["--timeout", CALM_S, f"--timeout-{phase.replace('_', '-')}", deadline, "--inject", kind,
            "--inject-rank", str(rank), "--inject-phase", phase]


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
def test_every_fault_is_named_under_torchrun(tmp_path: Path, request: pytest.FixtureRequest, kind: str,
                                            phase: str, at: str, layout: str) -> None:
    # Each (fault, phase) runs once, at one rank under one layout, both alternating so that each
    # rank and each layout sees every fault and every phase; --full-matrix runs all 48.
    k, p = KINDS.index(kind), PHASES.index(phase)
    assigned = (["rank0", "other"][(k + p) % 2], list(LAYOUTS)[((p + 1) // 2 + k) % 2])
    if (at, layout) != assigned and not full_matrix(request.config):
        pytest.skip(f"runs at {assigned[0]} under {assigned[1]} in the suite (--full-matrix runs them all)")
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
def test_a_rank_killed_as_by_the_oom_killer_is_named(tmp_path: Path) -> None:
    """SIGKILL, no handler, no stack: only its supervisor can say what happened to it."""
    job = torchrun_job(tmp_path, 1, 2, "--timeout", CALM_S, "--timeout-execution", str(DEADLINE_S), "--inject", "kill",
                       "--inject-rank", "1")
    assert job.code == 1, job.console
    assert_delivered(job)
    assert job.culprit_ranks() == [1] and job.verdict["phase"] == "execution", job.console
    assert job.verdict["category"] == "crashed_process"
    assert "rank 1 was killed by SIGKILL" in (job.report_path.parent / "coordinator.log").read_text()


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("repeat", range(20))
def test_a_healthy_job_is_never_a_failure(tmp_path: Path, request: pytest.FixtureRequest, repeat: int) -> None:
    # A soak: 20 runs by default would be a fifth of the suite's time; the suite runs 4 (two per
    # layout), --full-matrix all 20.
    if repeat >= SOAK_IN_SUITE and not full_matrix(request.config):
        pytest.skip(f"the suite runs {SOAK_IN_SUITE} of the soak's runs (--full-matrix runs 20)")
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
def test_a_taken_rendezvous_port_is_chosen_again(tmp_path: Path) -> None:
    """The port the test gives torchrun's agents is taken (another job's listener) when agent 0 binds
    it: agent 0 fails at once, and agent 1 would retry the address for 900 s. The job is started
    again on another port, and runs."""
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))  # noqa: S104 - as the store would bind it
        taken.listen()
        job = torchrun_job(tmp_path, 2, 1, "--timeout", "20", port=taken.getsockname()[1], timeout=120)
    assert job.code == 0, job.console
    assert_delivered(job)
    assert job.verdict["status"] == "no_failure", job.console



@needs_torch
def test_the_others_wait_for_rank_0_to_start_beyond_the_comm_init_deadline(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Under torchrun the agent's store is up before any process; rank 0's may come seconds after
    rank 1's (a busy node). Rank 1 waits for the log folder as long as a rank may take to start,
    not the 2 s comm_init deadline that the store's client was given."""
    import threading
    from types import SimpleNamespace

    from triage.repro import store as stores
    from triage.repro.under_launcher import agree_on_log_dir

    monkeypatch.chdir(tmp_path)
    hosted = stores.host(0, 1.0)
    mine = stores.reach("127.0.0.1", hosted.port, 1.0)  # its timeout: the comm_init deadline
    late = threading.Timer(2.5, agree_on_log_dir, (hosted, SimpleNamespace(rank=0), Path("logs")))
    late.start()
    try:
        started = time.monotonic()
        path, log_name = agree_on_log_dir(mine, SimpleNamespace(rank=1), None)
    finally:
        late.join()
    assert time.monotonic() - started >= 2.0
    assert path == Path("logs") and path.is_dir() and log_name == "coordinator.log"

def test_the_rendezvous_port_is_below_the_ephemeral_range() -> None:
    """Where no other process's bind(0) or connect() can take it before torchrun's agent 0 binds it."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    if low - 10_000 < 1024:
        pytest.skip(f"the ephemeral range starts at {low}: no room below it")
    assert all(free_port() < low for _ in range(20))

@needs_torch
@pytest.mark.slow
def test_a_rank_whose_process_is_killed_is_named(tmp_path: Path) -> None:
    """SIGKILL the process torchrun watches for rank 1 (as the OOM killer would): torchrun then
    SIGTERMs the others; rank 0's process must still report, naming rank 1."""
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
    job = Job(proc.returncode, out, [out], 0.0, [cwd], wait_gone(mark, within=30.0))
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


# -- srun and mpirun (their environments, as they set them), and errors at the step they happen --

def _launcher_env(launcher: str, rank: int, world: int, port: int) -> dict[str, str]:
    if launcher == "srun":
        return {"SLURM_PROCID": str(rank), "SLURM_NTASKS": str(world), "SLURM_LOCALID": str(rank),
                "SLURM_STEP_ID": "0", "SLURM_JOB_ID": "4242", "SLURM_STEP_NUM_NODES": "1",
                "SLURM_STEP_NODELIST": "localhost", "MASTER_PORT": str(port)}
    if launcher == "mpirun":
        return {"OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": str(world),
                "OMPI_COMM_WORLD_LOCAL_RANK": str(rank), "OMPI_COMM_WORLD_LOCAL_SIZE": str(world),
                "MASTER_PORT": str(port)}
    return {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}


def _launch_ranks(tmp_path: Path, launcher: str, world: int, ranks: list[int], *args: str,
                  port: int | None = None) -> tuple[list[subprocess.CompletedProcess[str]], list[int]]:
    """Start `ranks` of a `world`-rank job as `launcher` would (its environment), wait for them."""
    mark = uuid.uuid4().hex
    port = port or free_port()
    procs = []
    for rank in ranks:
        env = dict(os.environ, **{MARK: mark, "CI": "1"}, **_launcher_env(launcher, rank, world, port))
        for name in ("RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID"):
            if name not in _launcher_env(launcher, rank, world, port):
                env.pop(name, None)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "triage", "repro", "--backend", "gloo", "--sizes", "1K", "--iters", "2",
             *args], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done, wait_gone(mark, within=30.0)


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["srun", "mpirun"])
def test_under_srun_and_mpirun_a_crash_is_named(tmp_path: Path, launcher: str) -> None:
    done, leftovers = _launch_ranks(tmp_path, launcher, 3, [0, 1, 2], "--timeout", CALM_S, "--timeout-execution",
                                    str(DEADLINE_S), "--inject", "crash", "--inject-rank", "2")
    assert leftovers == []
    assert [p.returncode for p in done] == [1, 1, 1], [p.stderr for p in done]
    console = done[0].stdout
    assert "Culprit: rank 2 " in console and "phase execution" in console, console
    assert f"under {launcher} (1 node)" in console
    assert done[1].stdout == done[2].stdout == ""  # rank 0 reports for all


@needs_torch
@pytest.mark.slow
def test_a_rank_that_never_comes_is_named_by_the_others(tmp_path: Path) -> None:
    """Ranks 0 and 1 of 3 start; rank 2 never does (its node is down): that is the finding."""
    done, leftovers = _launch_ranks(tmp_path, "env", 3, [0, 1], "--timeout", str(DEADLINE_S))
    assert leftovers == []
    console = done[0].stdout
    assert done[0].returncode == 1, console + done[0].stderr
    assert "Culprit: rank 2 " in console and "phase comm_init" in console, console
    assert "never reached the rendezvous" in console


@needs_torch
@pytest.mark.slow
def test_a_rendezvous_that_never_completes_is_one_line(tmp_path: Path) -> None:
    done, leftovers = _launch_ranks(tmp_path, "env", 2, [1], "--timeout", "2")
    assert leftovers == []
    (rank1,) = done
    assert rank1.returncode == 2
    (line,) = rank1.stderr.strip().splitlines()
    assert line.startswith("triage: error: rank 1: could not reach the rendezvous at 127.0.0.1:"), line
    assert " within 2 s (" in line and line.endswith("): check MASTER_ADDR/MASTER_PORT"), line


@needs_torch
@pytest.mark.slow
def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))  # noqa: S104 - as the store would bind it
        taken.listen()
        port = taken.getsockname()[1]
        done, leftovers = _launch_ranks(tmp_path, "srun", 2, [0], "--timeout", "2", port=port)
    assert leftovers == []
    (rank0,) = done
    assert rank0.returncode == 2
    assert rank0.stderr.strip().splitlines() == [
        f"triage: error: rank 0: port {port} is already in use on this host (another job, or an earlier run "
        "that has not ended): check MASTER_ADDR/MASTER_PORT in the job's environment"]


@needs_torch
@pytest.mark.slow
def test_nccl_without_a_gpu_is_one_line_per_host_under_torchrun(tmp_path: Path) -> None:
    job = torchrun_job(tmp_path, 1, 2, "--backend", "nccl")
    assert job.code != 0 and job.leftovers == []
    errors = [line for line in job.console.splitlines() if line.startswith("triage: error:")]
    assert errors == ["triage: error: --backend nccl: no GPU is visible to this process; "
                      "use --backend gloo to test on CPU"]
