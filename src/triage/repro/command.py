"""`triage repro`: the command. Parses options, picks the mode, hands the logs to `analyze`.

torch is imported inside the command only, so that `triage analyze` neither needs nor loads it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import regex
import typer
from rich.text import Text

from triage import exitcodes
from triage.api import analyze
from triage.report import render
from triage.repro import launch, present
from triage.repro.coordinator import PhaseRow, run_standalone
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
from triage.repro.protocol import PHASES, StatusPipe
from triage.repro.supervise import SpawnError

if TYPE_CHECKING:
    from triage.model import Report
    from triage.repro.worker import Rank

INSTALL_HINT = "triage repro needs PyTorch: pip install 'triage[repro]'"
INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C
REPORT_WAIT_S = 5.0  # under a launcher, rank 0 waits this long for the other ranks' last lines
FORMATS = ("terminal", "json")
HELP = (
    "Check live that every rank can reach every other: communicator init, first collective, then "
    "timed and verified all-reduces, each phase under its own deadline; names the rank, link and "
    "phase at fault with the same engine as `analyze`. Standalone it launches --world-size local "
    "ranks (one per GPU with NCCL); under torchrun, srun or mpirun each process is one rank. "
    "Exit codes: " + "; ".join(f"{code} {text}" for code, text in exitcodes.TABLE) + "."
)


class ReproError(Exception):
    """A usage error of `triage repro`: shown as one line, exit code 2."""


def register(app: typer.Typer) -> None:
    app.command("repro", help=HELP)(repro)


def repro(
    world_size: Annotated[int | None, typer.Option(
        "--world-size", "-n", min=1, help="Ranks to launch (default: one per visible GPU; 2 on CPU).")] = None,
    backend: Annotated[str, typer.Option(help="auto (nccl when a GPU is visible), nccl or gloo.")] = "auto",
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
        help="Where the ranks write their logs (default: a new temporary folder).")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="Output: terminal or json.")] = "terminal",
    keep_logs: Annotated[bool, typer.Option(
        "--keep-logs", help="Keep the temporary log folder of a run that passed.")] = False,
) -> None:
    if importlib.util.find_spec("torch") is None:
        _fail(INSTALL_HINT)
    try:
        if fmt not in FORMATS:
            raise OptionError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
        if backend not in BACKENDS:
            raise OptionError(f"--backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        if inject is not None and inject not in INJECT_KINDS:
            raise OptionError(f"--inject must be one of {', '.join(INJECT_KINDS)}, not {inject!r}")
        if inject_phase not in PHASES:
            raise OptionError(f"--inject-phase must be one of {', '.join(PHASES)}, not {inject_phase!r}")
        deadlines = deadlines_from(timeout, {"comm_init": timeout_comm_init,
                                             "operator_load": timeout_operator_load,
                                             "execution": timeout_execution})
        env = launch.detect(os.environ)
    except (OptionError, launch.LaunchError) as exc:
        _fail(str(exc))
    settings = _Settings(world_size, backend, deadlines, sizes, iters, bisect,
                         Injection(inject, inject_rank, inject_phase) if inject else None,
                         log_dir, fmt, keep_logs)
    try:
        if env is not None:
            _launched(settings, env)  # never returns: each rank ends its own process
        code = _standalone(settings)
    except (OptionError, ReproError) as exc:
        _fail(str(exc))
    raise typer.Exit(code)


class _Settings:
    def __init__(self, world_size: int | None, backend: str, deadlines: dict[str, float],
                 sizes: str | None, iters: int, bisect: bool, inject: Injection | None,
                 log_dir: Path | None, fmt: str, keep_logs: bool) -> None:
        self.world_size, self.backend, self.deadlines = world_size, backend, deadlines
        self.sizes, self.iters, self.bisect, self.inject = sizes, iters, bisect, inject
        self.log_dir, self.fmt, self.keep_logs = log_dir, fmt, keep_logs

    def options(self, backend: str, world: int, log_dir: Path) -> ReproOptions:
        if self.inject is not None and not 0 <= self.inject.rank < world:
            raise OptionError(f"--inject-rank {self.inject.rank} is outside the {world} ranks (0-{world - 1})")
        return ReproOptions(backend=backend, deadlines=self.deadlines,
                            sizes=parse_sizes(self.sizes or DEFAULT_SIZES[backend]), iters=self.iters,
                            log_dir=str(log_dir), inject=self.inject, group=list(range(world)),
                            job_world_size=world)


def _fail(message: str) -> NoReturn:
    present.console(sys.stderr).print(Text(f"triage: error: {message}"))
    raise typer.Exit(exitcodes.USAGE_OR_INPUT_ERROR)


def _gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries (empty without CUDA)."""
    import torch  # here only: the CLI must load, and `analyze` run, without torch

    if not torch.cuda.is_available():
        return []
    count = torch.cuda.device_count()
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return visible[:count] if visible else [str(i) for i in range(count)]


def _resolve_backend(requested: str, have_gpus: bool) -> str:
    if requested == "auto":
        return "nccl" if have_gpus else "gloo"
    if requested == "nccl" and not have_gpus:
        raise ReproError("--backend nccl: no GPU is visible to this process (use --backend gloo on CPU)")
    return requested


# -- standalone ---------------------------------------------------------------------------------

def _standalone(s: _Settings) -> int:
    gpus = _gpus() if s.backend in ("auto", "nccl") else []
    backend = _resolve_backend(s.backend, bool(gpus))
    if backend == "nccl":
        world = s.world_size or len(gpus)
        if world > len(gpus):
            raise ReproError(f"--world-size {world}: only {len(gpus)} GPUs are visible (one rank per GPU)")
    else:
        world = s.world_size or 2
    if world < 2:
        raise ReproError("--world-size must be at least 2: a collective needs two ranks")
    log_dir, temporary = _log_dir(s.log_dir)
    opts = s.options(backend, world, log_dir)
    con = present.console(sys.stdout)
    if s.fmt == "terminal":
        present.header(con, opts, "on this host")
    _progress(f"running {world} ranks; logs in {log_dir}")
    try:
        outcome = run_standalone(opts, gpus[:world] if backend == "nccl" else None, s.bisect)
    except SpawnError as exc:
        raise ReproError(f"{exc}: the reason is in {log_dir / 'coordinator.log'}") from None
    except KeyboardInterrupt:
        # The supervisor has already ended every rank (its `finally`); say where the logs are.
        present.console(sys.stderr).print(Text(f"triage repro: interrupted; the ranks were ended; "
                                               f"logs in {log_dir}"))
        raise typer.Exit(INTERRUPTED) from None
    report = _analyze(log_dir, world)
    code = exitcodes.exit_code(report)
    unexplained = code == exitcodes.NO_FAILURE and (outcome.failed or outcome.slow)
    if unexplained:
        # The run itself saw a failure that no rule recognised: never report that as a pass.
        code = exitcodes.INCONCLUSIVE
    keep = s.keep_logs or not temporary or code != exitcodes.NO_FAILURE
    if s.fmt == "terminal":
        present.phases(con, outcome.phases)
        present.bandwidth(con, outcome.run.result)
        present.bisection(con, outcome.bisection, outcome.judgement)
        con.print()
    _render(report, s.fmt)
    if unexplained:
        present.console(sys.stderr if s.fmt == "json" else sys.stdout).print(Text(
            "triage repro: the run failed (see its phases) but no rule recognised why in its logs: "
            "inconclusive", style="bold"))
    if keep:
        _say_logs(log_dir, s.fmt)
    else:
        shutil.rmtree(log_dir, ignore_errors=True)
        shutil.rmtree(log_dir.with_name(log_dir.name + ".bisect"), ignore_errors=True)
        if s.fmt == "terminal":
            con.print(Text("logs: removed, the run passed (--keep-logs keeps them)", style="dim"))
    return code


def _log_dir(given: Path | None) -> tuple[Path, bool]:
    if given is None:
        return Path(tempfile.mkdtemp(prefix="triage-repro-")), True
    if given.exists() and (not given.is_dir() or any(given.iterdir())):
        raise ReproError(f"--log-dir {given}: not an empty folder (old logs would mix with this run's)")
    given.mkdir(parents=True, exist_ok=True)
    return given, False


def _analyze(log_dir: Path, world: int) -> Report:
    return analyze([log_dir], world_size=world)


def _render(report: Report, fmt: str) -> None:
    render(report, fmt, sys.stdout)
    sys.stdout.flush()


def _say_logs(log_dir: Path, fmt: str) -> None:
    stream = sys.stderr if fmt == "json" else sys.stdout  # json: stdout holds the report only
    bisect_dir = log_dir.with_name(log_dir.name + ".bisect")
    extra = f" (bisection: {bisect_dir})" if bisect_dir.is_dir() else ""
    present.console(stream).print(Text(f"logs: {log_dir}{extra}  (triage analyze {log_dir})"))


def _progress(message: str) -> None:
    """Progress on stderr, only for a person at a terminal."""
    if sys.stderr.isatty() and not os.environ.get("CI"):
        present.console(sys.stderr).print(Text(message, style="dim"))


# -- under a launcher ---------------------------------------------------------------------------

def _launched(s: _Settings, env: launch.RankEnv) -> NoReturn:
    from triage.repro.worker import Rank  # imports torch

    gpus = _gpus() if s.backend in ("auto", "nccl") else []
    backend = _resolve_backend(s.backend, bool(gpus))
    if s.world_size is not None and s.world_size != env.world_size:
        raise ReproError(f"--world-size {s.world_size} differs from the {env.world_size} ranks that "
                         f"{env.launcher} launched")
    # Every rank on a host must find the same folder without talking: derive it from the job id
    # and the launcher process they share on this host (torchrun's run id is often just "none").
    safe = regex.sub(r"[^\w.-]+", "_", f"{env.run_id}-{os.getppid()}")
    log_dir = s.log_dir or Path(tempfile.gettempdir()) / f"triage-repro-{safe}"
    log_dir.mkdir(parents=True, exist_ok=True)
    opts = s.options(backend, env.world_size, log_dir)
    if env.rank == 0 and s.bisect:
        present.console(sys.stderr).print(Text(
            "triage repro: --bisect runs standalone only (it launches its own smaller groups): "
            "run `triage repro --bisect` on the suspect host"))

    def report(code: int, rank: Rank) -> int:
        return _report_launched(s, opts, env, rank, code)

    Rank(opts, env, env.rank, StatusPipe(None), on_end=report if env.rank == 0 else None).run()


def _report_launched(s: _Settings, opts: ReproOptions, env: launch.RankEnv, rank: Rank, code: int) -> int:
    log_dir = Path(opts.log_dir)
    _wait_for_last_lines(log_dir)
    report = _analyze(log_dir, env.world_size)
    if s.fmt == "terminal":
        con = present.console(sys.stdout)
        present.header(con, opts, f"under {env.launcher} ({env.nodes} node{'s' if env.nodes > 1 else ''})")
        present.phases(con, _own_phases(rank))
        present.bandwidth(con, rank.result)
        con.print()
    _render(report, s.fmt)
    _say_logs(log_dir, s.fmt)
    if env.nodes > 1:
        present.console(sys.stderr).print(Text(
            "the logs of other nodes stay on those nodes: gather them and run `triage analyze` over all"))
    return exitcodes.exit_code(report)


def _wait_for_last_lines(log_dir: Path) -> None:
    """Until every rank log in the folder ends with its `finished:` line, or REPORT_WAIT_S."""
    until = time.monotonic() + REPORT_WAIT_S
    while time.monotonic() < until:
        pending = [p for p in log_dir.glob("rank*.log") if b" finished: " not in _tail(p)]
        if not pending:
            return
        time.sleep(0.1)


def _tail(path: Path, size: int = 4096) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - size))
            return f.read()
    except OSError:
        return b""


def _own_phases(rank: Rank) -> list[PhaseRow]:
    """Rank 0's own view of the phases (under a launcher there is no coordinator to ask)."""
    rows = []
    current = rank.watchdog.phase
    for phase in PHASES:
        if phase in rank.phase_secs:
            rows.append(PhaseRow(phase, "pass", rank.phase_secs[phase]))
        elif phase == current:
            status = "stuck" if rank.end_status == "stuck" else "FAILED"
            rows.append(PhaseRow(phase, status, None, f"at rank 0: {rank.watchdog.step}"))
        else:
            rows.append(PhaseRow(phase, "not reached", None))
    return rows
