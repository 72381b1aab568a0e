"""`triage repro` end to end: real ranks, real torch.distributed (gloo on CPU), real faults.

Each fault case is one standalone run of 4 ranks with deadlines of a few seconds. A run must name
the injected rank and phase through `analyze`'s engine, return within its deadline (measured:
deadlines are the feature under test) and leave no process behind.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from repro_helpers import MARK, ROOT, Run, full_matrix, repro, start, wait_gone

from triage import exitcodes
from triage.repro import bandwidth, bisect, findings, launcher_env, placement, stragglers
from triage.repro.inject import ENV_HOLD_GIL
from triage.repro.options import OptionError, format_size, parse_sizes

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="triage repro needs PyTorch (pip install 'triage[repro]')")

DEADLINE_S = 3.0
LONG_DEADLINE_S = 300.0  # for runs that a signal must end, long before any deadline would
PHASES = ("comm_init", "operator_load", "execution")
# The cases run by default (--full-matrix: all 12): every kind and phase, and each branch the test
# checks (a hang's deadline in two phases, a crash's stack, a late init, both wrong-value categories).
SLICE = {("hang", "comm_init"), ("hang", "execution"), ("crash", "operator_load"), ("slow", "comm_init"),
         ("slow", "execution"), ("wrong-value", "comm_init"), ("wrong-value", "execution")}
CATEGORY = {"hang": "hung_process", "crash": "crashed_process"}


def assert_clean_exit(run: Run) -> None:
    assert run.leftovers == [], f"processes left behind: {run.leftovers}"
    assert "Traceback" not in run.stdout + run.stderr


# -- a clean run ----------------------------------------------------------------------------

@needs_torch
@pytest.mark.slow
def test_clean_run_passes(tmp_path: Path) -> None:
    run = repro(tmp_path, "--timeout", "20", fmt="terminal")
    assert run.code == exitcodes.NO_FAILURE, run.stdout + run.stderr
    assert_clean_exit(run)
    out = run.stdout
    for phase in PHASES:
        assert f"{phase}" in out
    assert out.count(" pass ") >= 3 or out.count("pass") >= 3
    assert "busbw = algbw x 2(n-1)/n" in out and "64K" in out
    assert "no reference figure" in out  # gloo: said, not guessed
    assert "NO FAILURE" in out
    assert "PASS: all 4 ranks passed" in run.log("rank0.log")
    assert sorted(p.name for p in run.log_dir.iterdir()) == [
        "coordinator.log", "rank0.log", "rank1.log", "rank2.log", "rank3.log",
        "triage-report.json", "triage-report.txt"]
    assert f"report: {run.log_dir / 'triage-report.txt'}" in out
    assert "NO FAILURE" in run.log("triage-report.txt")


# -- every fault kind in every phase, at rank 2 ----------------------------------------------

@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("kind", ["hang", "crash", "slow", "wrong-value"])
def test_injected_fault_is_named(tmp_path: Path, request: pytest.FixtureRequest, kind: str, phase: str) -> None:
    if (kind, phase) not in SLICE and not full_matrix(request.config):
        pytest.skip("not in the suite's slice of the fault matrix (--full-matrix runs it)")
    # A late arrival at init is flagged past a quarter of the deadline (at least 1 s): give the
    # injected lateness (half the deadline) a margin well above start-up jitter. Phases with no
    # fault end at once: a long deadline there costs nothing, and a loaded machine cannot miss it.
    deadline = 6.0 if (kind, phase) == ("slow", "comm_init") else DEADLINE_S
    args = ["--timeout", "30", f"--timeout-{phase.replace('_', '-')}", str(deadline), "--inject", kind,
            "--inject-rank", "2", "--inject-phase", phase]
    run = repro(tmp_path, *args)
    assert run.code == exitcodes.DIAGNOSED, run.stdout + run.stderr
    assert_clean_exit(run)
    verdict = run.verdict
    assert run.culprit_ranks() == [2], verdict
    assert verdict["phase"] == phase, verdict
    if kind in CATEGORY:
        assert verdict["category"] == CATEGORY[kind]
    if kind == "wrong-value":
        assert verdict["category"] == ("config_mismatch" if phase == "comm_init" else "device_error")
    if kind == "hang":
        _assert_deadline_kept(run, phase, deadline)
    if kind == "crash":
        assert "was killed by SIGSEGV" in run.log("coordinator.log")
        assert "Fatal Python error: Segmentation fault" in run.log("rank2.log")  # its stack


def _assert_deadline_kept(run: Run, phase: str, deadline: float) -> None:
    """The stuck rank's watchdog fired on time and wrote its stack; so did its peers'."""
    line = next(x for x in run.log("rank2.log").splitlines() if "watchdog: rank 2 stuck" in x)
    assert f"in phase {phase}" in line and "outside any collective" in line
    waited_ms = int(line.split(" for ")[1].split(" ms")[0])
    # Never early; how late depends on the machine's load, which a test must not (run()'s timeout
    # is the guard against a run that never ends).
    assert waited_ms >= deadline * 1000
    assert "inject.py" in run.log("rank2.log")  # the Python stack shows where it hung
    # Its peers either reached their own deadline inside the collective, or (when rank 2's deadline
    # came a few ms first and it ended) lost it as a peer.
    for r in (0, 1, 3):
        log = run.log(f"rank{r}.log")
        assert "waiting on its peers" in log or "FAILED (lost a peer)" in log, f"rank {r}"


@needs_torch
@pytest.mark.slow
def test_a_hang_that_holds_the_gil_is_ended_by_the_outer_backstop(tmp_path: Path) -> None:
    # The rank's watchdog thread cannot run: faulthandler's C timer must end it, and the
    # coordinator must still name it.
    run = repro(tmp_path, "--timeout", str(DEADLINE_S), "--inject", "hang", "--inject-rank", "2",
                "--inject-phase", "operator_load", env={ENV_HOLD_GIL: "1"})
    assert run.code == exitcodes.DIAGNOSED, run.stdout + run.stderr
    assert_clean_exit(run)
    assert run.culprit_ranks() == [2] and run.verdict["phase"] == "operator_load"
    assert "rank 2 hung hard in phase operator_load" in run.log("coordinator.log")
    assert "Timeout (" in run.log("rank2.log") and "inject.py" in run.log("rank2.log")


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_no_rank_outlives_its_coordinator(tmp_path: Path, how: signal.Signals) -> None:
    # Deadlines far beyond the waits below: whatever ends the run is the signal, never a deadline.
    proc, mark, _ = start(tmp_path, "--timeout", str(LONG_DEADLINE_S), "--inject", "hang", "--inject-rank",
                          "2", "--inject-phase", "comm_init")
    try:
        proc.send_signal(how)
        _, err = proc.communicate(timeout=LONG_DEADLINE_S / 2)
    finally:
        if proc.poll() is None:
            proc.kill()
    if how == signal.SIGINT:
        assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
    # Ctrl-C: the coordinator ends its ranks; SIGKILL: the ranks notice they are orphans.
    assert wait_gone(mark, within=LONG_DEADLINE_S / 2) == []


INTERRUPTED_AT_START = """
import json, os, subprocess, sys
from pathlib import Path
from triage.repro import coordinator
from triage.repro.options import ReproOptions
from triage.repro.protocol import PHASES

def interrupted(self, input=None, timeout=None):
    # Ctrl-C once the zygote has forked every rank and exited, before its pids are read
    self.stdin.write(input)
    self.stdin.close()
    self.wait()
    raise KeyboardInterrupt

subprocess.Popen.communicate = interrupted
opts = ReproOptions(backend="gloo", deadlines={p: 600.0 for p in PHASES}, sizes=[1024], iters=1,
                    log_dir=sys.argv[1], group=[0, 1, 2, 3], job_world_size=4)
try:
    coordinator.run_standalone(opts, False)
except KeyboardInterrupt:
    pass
alive = []  # our child processes still there: `pid (comm) state ppid ...` in /proc/<pid>/stat
for entry in Path("/proc").iterdir():
    try:
        if entry.name.isdigit() and (entry / "stat").read_text().rsplit(")", 1)[-1].split()[1] == str(os.getpid()):
            alive.append(int(entry.name))
    except OSError:
        pass  # gone meanwhile
print(json.dumps(alive))
"""


@needs_torch
@pytest.mark.slow
def test_ctrl_c_while_the_ranks_are_forked_ends_them(tmp_path: Path) -> None:
    # The zygote has forked the ranks but the coordinator has not read their pids: the ranks are
    # its children all the same, and it ends them before it goes, not they once it is gone.
    mark = uuid.uuid4().hex
    proc = subprocess.run([sys.executable, "-c", INTERRUPTED_AT_START, str(tmp_path / "logs")],
                          capture_output=True, text=True, timeout=600, check=False, cwd=ROOT,
                          env=dict(os.environ, **{MARK: mark}))
    try:
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == [], "ranks still running after the interrupt"
    finally:
        assert wait_gone(mark, within=LONG_DEADLINE_S / 2) == []


# -- bisection ----------------------------------------------------------------------------------

@needs_torch
@pytest.mark.slow
def test_bisect_names_the_injected_rank(tmp_path: Path) -> None:
    run = repro(tmp_path, "--timeout", "5", "--inject", "slow", "--inject-rank", "1", "--bisect")
    assert run.code == exitcodes.DIAGNOSED, run.stdout + run.stderr
    assert_clean_exit(run)
    assert run.culprit_ranks() == [1]
    coordinator = run.log("coordinator.log")
    assert "bisect: rank 1 is at fault in phase execution" in coordinator
    assert any("repro-bisect-rank" in c["reason"] for c in run.verdict["culprits"])
    assert (tmp_path / "logs.bisect" / "group-0-1" / "rank1.log").is_file()


# -- usage ------------------------------------------------------------------------------------

def test_without_torch_one_line_says_how_to_install_it() -> None:
    code = ("import sys; sys.modules['torch'] = None; sys.argv = ['triage', 'repro']; "
            "from triage.cli import main; main()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          check=False, cwd=ROOT)
    assert proc.returncode == exitcodes.USAGE_OR_INPUT_ERROR
    assert proc.stderr.strip().splitlines() == [
        "triage: error: triage repro needs PyTorch: pip install 'triage[repro]'"]


@needs_torch
@pytest.mark.parametrize(("args", "message"), [
    (["--inject", "hang", "--inject-rank", "7"], "--inject-rank 7 is outside the 4 ranks"),
    (["--inject", "explode"], "--inject must be one of"),
    (["--sizes", "1K,lots"], "--sizes: 'lots' is not a size"),
    (["--backend", "mpi"], "--backend must be one of"),
    (["--timeout-execution", "0"], "a deadline must be positive"),
    (["--ranks-per-gpu", "2"], "--ranks-per-gpu shares GPUs between NCCL ranks: it needs --backend nccl"),
])
def test_bad_options_are_one_line_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "triage", "repro", "--backend", "gloo", "--world-size", "4",
         "--log-dir", str(tmp_path / "logs"), *args],
        capture_output=True, text=True, timeout=60, check=False, cwd=ROOT)
    assert proc.returncode == exitcodes.USAGE_OR_INPUT_ERROR, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_the_cli_does_not_import_torch() -> None:
    code = "import sys; import triage.cli; triage.cli._register_repro(); print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          check=True, cwd=ROOT)
    assert proc.stdout.strip() == "False"


# -- the pieces that need no process ----------------------------------------------------------

def test_sizes_are_binary_units() -> None:
    assert parse_sizes("1K,1M,64M,1G") == [1 << 10, 1 << 20, 64 << 20, 1 << 30]
    assert parse_sizes("512, 1.5K, 2MiB") == [512, 1536, 2 << 20]
    assert [format_size(s) for s in (1 << 10, 1536, 64 << 20, 3)] == ["1K", "1.5K", "64M", "3B"]
    with pytest.raises(OptionError):
        parse_sizes("2")


def test_bus_bandwidth_is_the_nccl_tests_definition() -> None:
    row = bandwidth.row(1 << 30, 0.005, 8)
    assert row.algbw == pytest.approx((1 << 30) / 0.005 / 1e9)
    assert row.busbw == pytest.approx(row.algbw * 2 * 7 / 8)
    assert bandwidth.bus_factor(2) == 1.0


def test_expectations_by_gpu_and_interconnect() -> None:
    h100, _ = bandwidth.expectation("NVIDIA H100 80GB HBM3", "P2P", "nvlink", 8, 1)
    assert h100 is not None and 360 <= h100.low <= h100.high <= 480
    a100, _ = bandwidth.expectation("NVIDIA A100-SXM4-80GB", "P2P", "nvlink", 8, 1)
    assert a100 is not None and a100.high == 230
    pcie, _ = bandwidth.expectation("NVIDIA L40S", "P2P", "pcie", 4, 1)
    assert pcie is not None and pcie.high < 25
    # The H100 that NCCL joined with sockets (one H100, ranks joined over NET/Socket): no PCIe or NVLink figure to fall short of.
    sockets, why_sockets = bandwidth.expectation("NVIDIA H100 80GB HBM3", "NET/Socket", None, 2, 1,
                                                 interfaces=["lo:127.0.0.1"])
    assert sockets is None and "no reference figure" in why_sockets and "network path" in why_sockets
    none, why = bandwidth.expectation(None, None, None, 4, 1)
    assert none is None and "no reference figure" in why
    slow = bandwidth.shortfall([bandwidth.row(1 << 30, (1 << 30) / 100e9, 8)], h100)
    assert slow is not None and slow.percent < 50
    fine = bandwidth.shortfall([bandwidth.row(1 << 30, (1 << 30) / 270e9, 8)], h100)
    assert fine is None


def test_the_late_rank_is_the_one_that_waits_least() -> None:
    assert stragglers.late_once([3.0, 3.1, 0.05, 3.0], 1.0) is not None
    assert stragglers.late_once([3.0, 3.1, 0.05, 3.0], 1.0).index == 2  # type: ignore[union-attr]
    assert stragglers.late_once([0.1, 0.12, 0.09, 0.11], 1.0) is None
    waits = [[0.06, 0.061, 0.059] for _ in range(4)]
    waits[1] = [0.01, 0.011, 0.009]
    late = stragglers.late_often(waits, 0.002)
    assert late is not None and late.index == 1 and late.late == 3
    assert stragglers.late_often([[0.01, 0.012, 0.011], [0.011, 0.01, 0.012]], 0.002) is None
    # A pair where one rank is always a little later: under the CPU floor, it is noise.
    assert stragglers.late_often([[0.009, 0.009, 0.009], [0.004, 0.004, 0.004]], 0.010) is None


def test_bandwidth_rows_use_the_timed_collectives_only() -> None:
    # Per size: a checked all-reduce, 2 timed, a checked one. The checks must not count.
    waits = [[9.0, 0.5, 0.5, 9.0], [9.0, 1.0, 1.0, 9.0]]
    timings = findings.Timings([0.0, 0.0], [0.0, 0.0], waits)
    (row,) = findings.bandwidth_rows(timings, [1 << 20], 2, {1 << 20: (1 << 20) // 4})
    assert row.seconds == pytest.approx(1.0)  # the slowest rank, as the group sees it


def test_pairs_cover_every_pair_once_in_disjoint_rounds() -> None:
    for n in (2, 3, 4, 5, 8):
        rounds = bisect.pair_rounds(list(range(n)))
        pairs = [p for r in rounds for p in r]
        assert len(pairs) == len(set(pairs)) == n * (n - 1) // 2
        for r in rounds:
            members = [m for p in r for m in p]
            assert len(members) == len(set(members))


def test_bisection_names_a_rank_a_link_or_nothing() -> None:
    def result(a: int, b: int, bad: bool) -> bisect.GroupResult:
        return bisect.GroupResult((a, b), failed=bad, phase="execution" if bad else None)

    pairs = [p for r in bisect.pair_rounds([0, 1, 2, 3]) for p in r]
    rank = bisect.judge([result(a, b, 2 in (a, b)) for a, b in pairs])
    assert (rank.kind, rank.ranks) == ("rank", [2])
    link = bisect.judge([result(a, b, (a, b) == (1, 3)) for a, b in pairs])
    assert (link.kind, link.links) == ("link", [(1, 3)])
    assert bisect.judge([result(a, b, False) for a, b in pairs]).kind == "none"
    assert bisect.judge([result(a, b, True) for a, b in pairs]).kind == "all"


@needs_torch
def test_ranks_per_gpu_gives_each_rank_its_own_nccl_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from triage.repro import coordinator, supervise
    from triage.repro.logfile import LineLog
    from triage.repro.options import ReproOptions

    monkeypatch.delenv("NCCL_DEBUG", raising=False)
    opts = ReproOptions(backend="nccl", deadlines=dict.fromkeys(PHASES, 5.0), sizes=[1024], iters=1,
                        log_dir=str(tmp_path), group=[0, 1, 2, 3], job_world_size=4, ranks_per_gpu=2)
    run = coordinator._new_run(opts, LineLog(tmp_path / "coordinator.log", "coordinator"))
    assert [e.device for e in run.envs] == [0, 0, 1, 1]  # two ranks on each GPU
    assert len({e.nccl_hostid for e in run.envs}) == 4  # each its own NCCL host
    env, log_path = supervise._rank_env(run, run.envs[3], status_fd=9)
    assert env["NCCL_HOSTID"] == run.envs[3].nccl_hostid and log_path.name == "rank3.log"
    assert env["NCCL_DEBUG"] == "INFO"  # its transport lines are read back for the bandwidth verdict
    assert launcher_env.RankEnv.from_json(env["TRIAGE_REPRO_RANK_ENV"]).master_port == run.store.port


@pytest.mark.parametrize(("launcher", "words"), [
    ("torchrun", "torchrun --nproc-per-node"), ("srun", "srun --ntasks-per-node"),
    ("mpirun", "mpirun -npernode"), ("triage repro", "--world-size")])
def test_more_local_ranks_than_gpus_is_said_in_the_launchers_words(launcher: str, words: str) -> None:
    env = launcher_env.RankEnv(launcher=launcher, rank=0, world_size=8, local_rank=0, local_world_size=8,
                         master_addr="127.0.0.1", master_port=29500, run_id="x")
    with pytest.raises(placement.PlacementError) as raised:
        placement.check_local_ranks(8, 4, 1, env.option("processes"))
    message = str(raised.value)
    assert message.startswith("8 ranks on this host but 4 GPUs visible: set " + words), message
    assert "to 4, or add --ranks-per-gpu 2" in message
    placement.check_local_ranks(8, 4, 2, env.option("processes"))  # two per GPU: they fit
    assert [launcher_env.gpu_of(r, 2) for r in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_launcher_environments() -> None:
    torch_env = {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4",
                 "MASTER_ADDR": "node01", "MASTER_PORT": "29400", "TORCHELASTIC_RUN_ID": "job7",
                 "TORCHELASTIC_USE_AGENT_STORE": "True"}
    env = launcher_env.detect(torch_env)
    assert env is not None and (env.launcher, env.rank, env.world_size, env.nodes) == ("torchrun", 3, 8, 2)
    assert env.use_agent_store and env.master_port == 29400
    slurm = {"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1", "SLURM_STEP_ID": "0",
             "SLURM_JOB_ID": "991", "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_NODELIST": "gpu[07-08]"}
    env = launcher_env.detect(slurm)
    assert env is not None and (env.launcher, env.rank, env.local_rank, env.master_addr) == ("srun", 5, 1, "gpu07")
    assert env.master_port == launcher_env.detect(slurm).master_port  # type: ignore[union-attr]
    batch = {"SLURM_PROCID": "0", "SLURM_NTASKS": "16", "SLURM_JOB_ID": "991"}
    assert launcher_env.detect(batch) is None  # a batch script is not a rank
    ompi = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "2",
            "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}
    env = launcher_env.detect(ompi)
    assert env is not None and (env.launcher, env.rank, env.master_addr) == ("mpirun", 2, "127.0.0.1")
    with pytest.raises(launcher_env.LaunchError):
        launcher_env.detect({**ompi, "OMPI_COMM_WORLD_LOCAL_SIZE": "2"})  # across nodes: needs MASTER_ADDR
    assert launcher_env.detect({}) is None
    assert launcher_env.first_host("cpu1,gpu[03-06,9]") == "cpu1"
