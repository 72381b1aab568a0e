"""`triage repro`: the command. Parses options, picks the mode, hands the logs to `analyze`.

torch is imported inside the command only, so that `triage analyze` neither needs nor loads it.
"""

from __future__ import annotations

import importlib.util
import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TextIO

import typer

from triage import exitcodes
from triage.report import FORMATS, SCHEDULER_FORMATS
from triage.repro import launcher_env, placement
from triage.repro.options import (
    BACKENDS,
    DEFAULT_ITERS,
    DEFAULT_SIZES,
    DEFAULT_TIMEOUT_S,
    INJECT_KINDS,
    Injection,
    OptionError,
    ReproOptions,
    deadlines_from,
    parse_sizes,
)
from triage.repro.protocol import PHASES
from triage.status import Status

# What runs the ranks, analyses and presents is imported by the functions that do it: `triage
# --help` registers this command without loading the analysis.
if TYPE_CHECKING:
    from triage.decision import Policy
    from triage.model import Report
    from triage.report import outputs as report_outputs
    from triage.repro.coordinator import Outcome

INSTALL_HINT = "triage repro needs PyTorch: pip install 'triage[repro]'"
INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C
HELP = (
    "Check live that every rank can reach every other: communicator init, first collective, then "
    "timed and verified all-reduces, each phase under its own deadline; names the rank, link and "
    "phase at fault with the same engine as `analyze`. Standalone it launches --world-size local "
    "ranks (one per GPU with NCCL); under torchrun, srun or mpirun each process is one rank, and rank 0 "
    "reports for all. The verdict is printed and written to triage-report.txt in the log folder. "
    + exitcodes.help_text("usage error (bad option, PyTorch missing, ranks that cannot be placed or "
                          "launched)", extra=((INTERRUPTED, "interrupted (Ctrl-C)"),))
)


class ReproError(Exception):
    """A usage error of `triage repro`: shown as one line, exit code 2."""


def register(app: typer.Typer) -> None:
    app.command("repro", help=HELP)(repro)


def repro(
    world_size: Annotated[int | None, typer.Option(
        "--world-size", "-n", min=1, help="Ranks to launch (default: one per visible GPU; 2 on CPU).")] = None,
    backend: Annotated[str, typer.Option(help="auto (nccl when a GPU is visible), nccl or gloo.")] = "auto",
    ranks_per_gpu: Annotated[int, typer.Option(
        min=1, help="Ranks sharing each GPU (NCCL), each its own NCCL host (NCCL_HOSTID): NCCL then "
                    "connects them over its network transport, so this tests the network path of one "
                    "node (NCCL_SOCKET_IFNAME, NCCL_IB_HCA are respected), not the GPU's links.")] = 1,
    timeout: Annotated[float, typer.Option(help="Deadline of each phase, in seconds.")] = DEFAULT_TIMEOUT_S,
    timeout_comm_init: Annotated[float | None, typer.Option(help="Deadline of comm_init (s).")] = None,
    timeout_operator_load: Annotated[float | None, typer.Option(help="Deadline of operator_load (s).")] = None,
    timeout_execution: Annotated[float | None, typer.Option(help="Deadline of execution (s).")] = None,
    sizes: Annotated[str | None, typer.Option(
        help=f"All-reduce sizes per rank, e.g. 1K,1M,64M (default {DEFAULT_SIZES['nccl']} on GPUs, "
             f"{DEFAULT_SIZES['gloo']} on CPU).")] = None,
    iters: Annotated[int, typer.Option(min=1, help="Timed all-reduces per size.")] = DEFAULT_ITERS,
    bisect: Annotated[bool, typer.Option(
        "--bisect", help="When the group fails or is slow, test every pair to name the rank or link.")] = False,
    inject: Annotated[str | None, typer.Option(
        help=f"Inject a fault, for tests and demos: {', '.join(INJECT_KINDS)}.")] = None,
    inject_rank: Annotated[int, typer.Option(min=0, help="Rank that gets the fault.")] = 1,
    inject_phase: Annotated[str, typer.Option(help=f"Phase of the fault: {', '.join(PHASES)}.")] = "execution",
    log_dir: Annotated[Path | None, typer.Option(
        help="Where the ranks write their logs and the report (default: a new folder "
             "triage-repro-<time> in the current directory; under a launcher, on every node).")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f",
                                     help=f"Format on stdout: {', '.join(FORMATS + SCHEDULER_FORMATS)}.")]
    = "terminal",
    output: Annotated[list[str] | None, typer.Option(
        "--output", "-o", metavar="FORMAT=PATH",
        help="Also write the report as FORMAT to PATH (repeatable), e.g. -o junit=repro.xml.")] = None,
    fail_on: Annotated[str, typer.Option(
        "--fail-on", metavar="STATUSES",
        help=f"Verdicts that exit non-zero: comma-separated {', '.join(exitcodes.FAIL_ON_CHOICES)}.")]
    = "diagnosed,inconclusive",
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No banner, phases or log paths on stdout: the report only.")] = False,
    policy: Annotated[Path | None, typer.Option(
        "--policy", metavar="FILE", help="Decision policy (YAML) in place of the built-in one, as `triage "
        "analyze --policy`.")] = None,
) -> None:
    from triage.decision import PolicyError, load_policy

    if importlib.util.find_spec("torch") is None:
        _fail(INSTALL_HINT)
    try:
        files = _output_files(fmt, output or [])
        failing = exitcodes.parse_fail_on(fail_on)
        table = load_policy(policy) if policy is not None else None
        if backend not in BACKENDS:
            raise OptionError(f"--backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        if inject is not None and inject not in INJECT_KINDS:
            raise OptionError(f"--inject must be one of {', '.join(INJECT_KINDS)}, not {inject!r}")
        if inject_phase not in PHASES:
            raise OptionError(f"--inject-phase must be one of {', '.join(PHASES)}, not {inject_phase!r}")
        deadlines = deadlines_from(timeout, {"comm_init": timeout_comm_init,
                                             "operator_load": timeout_operator_load,
                                             "execution": timeout_execution})
        env = launcher_env.detect(os.environ)
    except (OptionError, launcher_env.LaunchError, ValueError, PolicyError) as exc:
        _fail(str(exc))
    settings = _Settings(world_size, backend, ranks_per_gpu, deadlines, sizes, iters, bisect,
                         Injection(inject, inject_rank, inject_phase) if inject else None, log_dir, fmt,
                         _Delivery(fmt, files, failing, quiet, table))
    if env is not None:
        raise typer.Exit(_under_launcher(settings, env))
    try:
        code = _standalone(settings)
    except (OptionError, ReproError, placement.PlacementError) as exc:
        _fail(str(exc))
    raise typer.Exit(code)


def _output_files(fmt: str, specs: list[str]) -> list[report_outputs.Output]:
    """The --output files (repro always prints its report on stdout too)."""
    from triage.report import outputs as report_outputs

    try:
        planned = report_outputs.plan(fmt, specs)
    except report_outputs.OutputError as exc:
        raise OptionError(str(exc)) from None
    files = [o for o in planned if o.path is not None]
    if len(planned) == len(files):  # a bare PATH: repro keeps stdout and its report files
        raise OptionError("--output takes FORMAT=PATH here (the report is printed and written to the log "
                          "folder anyway)")
    return files


class _Delivery:
    """What the verdict becomes: stdout in `fmt`, the --output files, the exit code."""

    def __init__(self, fmt: str, files: list[report_outputs.Output], fail_on: frozenset[Status],
                 quiet: bool, policy: Policy | None = None) -> None:
        self.fmt, self.files, self.fail_on, self.quiet = fmt, files, fail_on, quiet
        self.policy = policy  # the decision table (None: the built-in one)

    @property
    def banners(self) -> bool:
        """Header, phases and log paths on stdout: only around the terminal report, unless --quiet."""
        return self.fmt == "terminal" and not self.quiet


class _Settings:
    def __init__(self, world_size: int | None, backend: str, ranks_per_gpu: int, deadlines: dict[str, float],
                 sizes: str | None, iters: int, bisect: bool, inject: Injection | None,
                 log_dir: Path | None, fmt: str, delivery: _Delivery | None = None) -> None:
        self.world_size, self.backend, self.ranks_per_gpu = world_size, backend, ranks_per_gpu
        self.deadlines, self.sizes, self.iters, self.bisect = deadlines, sizes, iters, bisect
        self.inject, self.log_dir, self.fmt = inject, log_dir, fmt
        self.delivery = delivery or _Delivery(fmt, [], exitcodes.FAIL_ON_DEFAULT, False)

    def options(self, backend: str, world: int, log_dir: Path) -> ReproOptions:
        if self.inject is not None and not 0 <= self.inject.rank < world:
            raise OptionError(f"--inject-rank {self.inject.rank} is outside the {world} ranks (0-{world - 1})")
        if self.ranks_per_gpu > 1 and backend != "nccl":
            raise OptionError("--ranks-per-gpu shares GPUs between NCCL ranks: it needs --backend nccl "
                              "(or a visible GPU)")
        return ReproOptions(backend=backend, deadlines=self.deadlines,
                            sizes=parse_sizes(self.sizes or DEFAULT_SIZES[backend]), iters=self.iters,
                            log_dir=str(log_dir), inject=self.inject, group=list(range(world)),
                            job_world_size=world, ranks_per_gpu=self.ranks_per_gpu)

    def backend_here(self) -> tuple[str, int]:
        """The backend of this run and how many GPUs this process sees."""
        gpus = placement.visible_gpus() if self.backend in ("auto", "nccl") else 0
        return placement.resolve_backend(self.backend, gpus), gpus


def _fail(message: str, out: TextIO | None = None) -> NoReturn:
    from triage.repro import present

    present.console(out or sys.stderr).print(_text(f"triage: error: {message}"))
    raise typer.Exit(exitcodes.USAGE_OR_INPUT_ERROR)


# -- standalone ---------------------------------------------------------------------------------

def _standalone(s: _Settings) -> int:
    from triage.repro import present
    from triage.repro.coordinator import run_standalone
    from triage.repro.supervise import SpawnError

    backend, gpus = s.backend_here()
    if backend == "nccl":
        world = s.world_size or gpus * s.ranks_per_gpu
        placement.check_local_ranks(world, gpus, s.ranks_per_gpu, "--world-size")
    else:
        world = s.world_size or 2
    if world < 2:
        raise ReproError("--world-size must be at least 2: a collective needs two ranks")
    opts = s.options(backend, world, Path())
    log_dir = new_log_dir(s.log_dir)
    opts.log_dir = str(log_dir)
    con = present.console(sys.stdout)
    if s.delivery.banners:
        present.header(con, opts, "on this host")
    say_logs(log_dir, s.fmt, at_start=True, quiet=s.delivery.quiet)
    try:
        outcome = run_standalone(opts, s.bisect)
    except SpawnError as exc:
        raise ReproError(f"{exc}: the reason is in {log_dir / 'coordinator.log'}") from None
    except KeyboardInterrupt:
        # The supervisor has already ended every rank (its `finally`); say where the logs are.
        present.console(sys.stderr).print(_text(f"triage repro: interrupted; the ranks were ended; "
                                                f"logs in {log_dir}"))
        raise typer.Exit(INTERRUPTED) from None
    return deliver(outcome, log_dir, s.delivery)


def new_log_dir(given: Path | None) -> Path:
    """The folder of this run: the one given (empty or new), else a new one under the current directory."""
    from triage.repro import under_launcher

    if given is None:
        given = Path(under_launcher.fresh_log_dir_name())
    if given.exists() and (not given.is_dir() or any(given.iterdir())):
        raise ReproError(f"--log-dir {given}: not an empty folder (old logs would mix with this run's)")
    given.mkdir(parents=True, exist_ok=True)
    return given


# -- the verdict, in both modes -------------------------------------------------------------------

def deliver(outcome: Outcome, log_dir: Path, how: _Delivery | str) -> int:
    """Analyse the run's logs with `analyze`'s engine; print the verdict and write it to the log folder
    and to the --output files."""
    from triage.api import analyze
    from triage.ingest.discover import REPORT_JSON, REPORT_TEXT  # `analyze` skips these in a folder
    from triage.report import outputs as report_outputs
    from triage.report import render

    if isinstance(how, str):
        how = _Delivery(how, [], exitcodes.FAIL_ON_DEFAULT, False)
    fmt = how.fmt
    report = analyze([log_dir], world_size=outcome.run.opts.job_world_size, policy=how.policy)
    unexplained = report.verdict.status is Status.NO_FAILURE and (outcome.failed or outcome.slow)
    code = exitcodes.exit_code(report, how.fail_on)
    if unexplained and Status.INCONCLUSIVE in how.fail_on:
        # The run itself saw a failure that no rule recognised: never report that as a pass.
        code = exitcodes.INCONCLUSIVE
    text = io.StringIO()
    _print_run(text, outcome, report, unexplained, color=False)
    (log_dir / REPORT_TEXT).write_text(text.getvalue(), encoding="utf-8")
    with open(log_dir / REPORT_JSON, "w", encoding="utf-8") as f:
        render(report, "json", f)
    if fmt == "terminal" and not how.quiet:
        _print_run(sys.stdout, outcome, report, unexplained, color=None)
    else:
        render(report, fmt, sys.stdout)
    report_outputs.write_report(report, how.files)
    sys.stdout.flush()
    say_logs(log_dir, fmt, at_start=False, quiet=how.quiet)
    return code


def _print_run(out: TextIO, outcome: Outcome, report: Report, unexplained: bool, color: bool | None) -> None:
    from triage.report import render
    from triage.repro import present

    con = present.console(out, color=color)
    present.phases(con, outcome.phases)
    present.bandwidth(con, outcome.run.result)
    present.bisection(con, outcome.bisection, outcome.judgement)
    con.print()
    render(report, "terminal", out, color=color)
    if unexplained:
        con.print(_text("triage repro: the run failed (see its phases) but no rule recognised why in its "
                        "logs: inconclusive", style="bold"))


def say_logs(log_dir: Path, fmt: str, *, at_start: bool, quiet: bool = False) -> None:
    from triage.ingest.discover import REPORT_TEXT
    from triage.repro import present

    # Machine formats (and --quiet): stdout holds the report only.
    stream = sys.stdout if fmt == "terminal" and not quiet else sys.stderr
    if at_start:
        present.console(stream).print(_text(f"logs: {log_dir}", style="dim"))
        return
    bisect_dir = log_dir.with_name(log_dir.name + ".bisect")
    extra = f" (bisection: {bisect_dir})" if bisect_dir.is_dir() else ""
    present.console(stream).print(_text(f"report: {log_dir / REPORT_TEXT}\nlogs: {log_dir}{extra}  "
                                        f"(triage analyze {log_dir})"))


# -- under a launcher -----------------------------------------------------------------------------

def _under_launcher(s: _Settings, env: launcher_env.RankEnv) -> int:
    """This process supervises rank `env.rank`; rank 0's also reports for every rank (under_launcher.py)."""
    from triage.repro import present, under_launcher
    from triage.repro.store import StoreError
    from triage.repro.supervise import fork_waiting_rank

    speaks = env.local_rank == 0  # one line per host for what every process on it would say alike
    try:
        if s.world_size is not None and s.world_size != env.world_size:
            raise OptionError(f"--world-size {s.world_size} differs from the {env.world_size} ranks that "
                              f"{env.launcher} launched")
        backend, gpus = s.backend_here()
        if backend == "nccl":
            placement.check_local_ranks(env.local_world_size, gpus, s.ranks_per_gpu, env.option("processes"))
            env.device = launcher_env.gpu_of(env.local_rank, s.ranks_per_gpu)
            if s.ranks_per_gpu > 1:
                env.nccl_hostid = f"triage-repro-{env.run_id}-rank{env.rank}"
        opts = s.options(backend, env.world_size, Path())
    except (OptionError, placement.PlacementError) as exc:
        if speaks:
            _fail(str(exc))
        raise typer.Exit(exitcodes.USAGE_OR_INPUT_ERROR) from None
    waiting = fork_waiting_rank()  # before this process starts threads (the store, below)
    comm_init = s.deadlines["comm_init"]
    try:
        with under_launcher.native_stderr_held() as held:
            store = under_launcher.connect(env, comm_init)
            log_dir, log_name = under_launcher.agree_on_log_dir(store, env, s.log_dir)
    except (StoreError, RuntimeError, OSError) as exc:
        os.close(waiting.go)  # the waiting rank process exits quietly
        what = str(exc) if isinstance(exc, StoreError) else (
            f"the rendezvous at {env.master_addr}:{env.master_port} failed before the ranks started "
            f"({str(exc).splitlines()[0][:200]})")
        _fail(f"rank {env.rank}: {what}: check {env.option('address')}")
    stop = under_launcher.Stop()
    stop.install()  # from now on the launcher's SIGTERM is ours to act on, not a sudden death
    opts.log_dir = str(log_dir)
    log = under_launcher.RecordingLog(log_dir / log_name, "coordinator")
    console_out = under_launcher.keep_native_noise_in(log.fd)
    os.write(2, b"".join(held))  # what the store's client said while we met, now in the log
    nodes = f"{env.nodes} node{'s' if env.nodes > 1 else ''}"
    if env.rank == 0:
        if s.delivery.banners:
            present.header(present.console(sys.stdout), opts, f"under {env.launcher} ({nodes})")
        say_logs(log_dir, s.fmt, at_start=True, quiet=s.delivery.quiet)
        log.line(f"launching {env.world_size} ranks (world size {env.world_size}) under {env.launcher} on "
                 f"{nodes}, backend {backend}, pid {os.getpid()}")
        if s.bisect:
            present.console(console_out).print(_text(
                "triage repro: --bisect runs standalone only (it launches its own smaller groups): "
                "run `triage repro --bisect` on the suspect host"))
    elif speaks and env.nodes > 1:
        present.console(console_out).print(_text(f"triage repro: the logs of this node ({under_launcher.host_name()}) "
                                                 f"are in {log_dir}", style="dim"))
    supervisor = under_launcher.Supervisor(opts, env, store, log_dir, under_launcher.new_run(opts, env, log),
                                         waiting, stop)
    return under_launcher.run(supervisor, log, lambda outcome, folder: deliver(outcome, folder, s.delivery))


def _text(*parts: Any, **options: Any) -> Any:
    """rich's Text, imported where something is printed: `triage --help` lists this command
    without importing rich (~15 ms)."""
    from rich.text import Text

    return Text(*parts, **options)
