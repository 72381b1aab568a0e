"""The `triage` command line: a thin layer over `triage.api`.

It parses options, calls the library, hands the Report to a formatter and picks the exit code.
Every failure becomes one line on stderr and exit code 2: no traceback reaches a user
(`TRIAGE_DEBUG=1` shows it).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from triage import __version__, exitcodes
from triage.api import NoInput, analyze
from triage.ras import collect as ras
from triage.report import FORMATS, render
from triage.rules import FAMILIES, RuleError, load_rule, load_rules
from triage.unexplained import DraftError, draft_rule, example_problems, explained_by, render_rule

app = typer.Typer(
    name="triage",
    help="Name the rank, link and phase that broke a distributed PyTorch/NCCL/HCCL job.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
rules_app = typer.Typer(help="List and explain the signature rules.", no_args_is_help=True)
app.add_typer(rules_app, name="rules")
ras_app = typer.Typer(help="Live snapshots of a running or hanging job from NCCL's RAS service (NCCL >= 2.24).",
                      no_args_is_help=True)
app.add_typer(ras_app, name="ras")

_EXIT_HELP = "Exit codes: " + "; ".join(f"{code} {text}" for code, text in exitcodes.TABLE) + "."


class UserError(Exception):
    """A problem with what the user gave; its message is shown as is."""


def _version(value: bool) -> None:
    if value:
        print(f"triage {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    pass


@app.command("analyze", help="Diagnose a failed job from its logs: folders, files, archives, or - for stdin. "
             + _EXIT_HELP)
def analyze_command(
    paths: Annotated[list[str], typer.Argument(help="Log folders, files or archives; - reads stdin.",
                                               show_default=False)],
    fmt: Annotated[str, typer.Option("--format", "-f", help=f"Output: {', '.join(FORMATS)}.")]
    = "terminal",
    world_size: Annotated[int | None, typer.Option(
        "--world-size", "-n", min=1, help="Number of ranks the job had, when the logs do not say.")]
    = None,
    rules: Annotated[list[Path] | None, typer.Option(
        "--rules", help="Extra folder of rule YAML files (repeatable).")] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the report to this file instead of stdout.")] = None,
    exit_zero: Annotated[bool, typer.Option(
        "--exit-zero", help="Exit 0 whatever the verdict (errors still exit 2).")] = False,
) -> None:
    if fmt not in FORMATS:
        raise UserError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    report = analyze(paths, world_size=world_size, rules_dirs=rules or [],
                     progress=_progress_printer())
    if output is not None:
        with open(output, "w", encoding="utf-8") as out:
            render(report, fmt, out, color=False)
    else:
        render(report, fmt, sys.stdout)
    raise typer.Exit(0 if exit_zero else exitcodes.exit_code(report))


@rules_app.command("list", help="One line per rule: id, family, kind, phase, title.")
def rules_list(
    rules: Annotated[list[Path] | None, typer.Option("--rules", help="Extra rule folder.")] = None,
) -> None:
    out = Console(highlight=False, soft_wrap=True)
    loaded = load_rules(rules or [])
    for rule in sorted(loaded, key=lambda r: (r.family, r.id)):
        out.print(Text(f"{rule.id:<48} {rule.family:<9} {rule.kind.value:<14} {rule.phase:<13} "
                       f"{rule.title}"))
    out.print(Text(f"{len(loaded)} rules", style="dim"))


@rules_app.command("explain", help="What a rule means, its usual causes and what to do next.")
def rules_explain(
    rule_id: Annotated[str, typer.Argument(help="A rule id, as `triage rules list` shows it.")],
    rules: Annotated[list[Path] | None, typer.Option("--rules", help="Extra rule folder.")] = None,
) -> None:
    by_id = {r.id: r for r in load_rules(rules or [])}
    if rule_id not in by_id:
        raise UserError(f"no rule {rule_id!r}; `triage rules list` shows them")
    rule = by_id[rule_id]
    out = Console(highlight=False, soft_wrap=True)
    out.print(Text(f"{rule.id} — {rule.title}", style="bold"))
    out.print(Text(f"family {rule.family} · kind {rule.kind.value} · phase {rule.phase} · "
                   f"severity {rule.severity}"))
    for key in ("meaning", "causes", "next_steps"):
        if rule.explain.get(key):
            out.print(Text(f"\n{key.replace('_', ' ').capitalize()}: ", style="bold")
                      + Text(str(rule.explain[key]).strip()))
    for ref in rule.references:
        out.print(Text(f"  {ref}", style="dim"))
    out.print(Text("\nExample: ", style="bold") + Text(_example_line(rule.examples["match"][0])))


@rules_app.command("new", help="Draft a rule from a log line that no rule knows: writes DIR/<id>.yaml, "
                  "a valid rule to edit, and prints its path.")
def rules_new(
    from_line: Annotated[str, typer.Option("--from-line", help="The log line, as the log has it.",
                                           show_default=False)],
    out: Annotated[Path, typer.Option("--out", help="Folder to write the rule into (default: the current one).")] = Path(),
    rule_id: Annotated[str | None, typer.Option(
        "--id", help="Rule id (kebab-case; the file is <id>.yaml). Default: from the family and message.")]
    = None,
    family: Annotated[str | None, typer.Option(
        "--family", help="Rule family. Default: the family of the line's format.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing rule file.")] = False,
) -> None:
    known = load_rules()
    try:
        draft = draft_rule(from_line, rule_id=rule_id, family=family, families=FAMILIES,
                           taken={r.id for r in known})
    except DraftError as exc:
        raise UserError(str(exc)) from None
    path = out / f"{draft.rule_id}.yaml"
    if path.exists() and not force:
        raise UserError(f"{path} exists; pass --force to overwrite it, or --id to name another rule")
    text = render_rule(draft)
    with tempfile.TemporaryDirectory() as scratch:  # the file as written must load and fire
        trial = Path(scratch) / path.name
        trial.write_text(text, encoding="utf-8")
        problems = example_problems(load_rule(trial))
    if problems:
        raise UserError("the drafted rule does not hold: " + "; ".join(problems))
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(path)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if already := explained_by(from_line, known):
        err.print(Text(f"note: built-in rule {', '.join(already)} already matches this line; "
                       "both will fire", style="yellow"))
    err.print(Text(f"edit it (regex, kind, phase, explain), then: triage analyze --rules {out} …",
                   style="dim"))


@ras_app.command("collect", help="Query NCCL's RAS service --count times, --every seconds apart, and save each "
                 "answer, byte for byte, as soon as it ends, in the --out folder as ras-<UTC time>Z.txt (.json); "
                 "an answer cut short is kept as ras-<UTC time>Z.partial.txt. `triage analyze` reads the folder. "
                 "Exit codes: 0 all snapshots taken (some may be partial); 2 RAS unreachable or not answering, "
                 "or a bad option; 130 Ctrl-C, 143 SIGTERM (what was saved stays).")
def ras_collect(
    out: Annotated[Path, typer.Option("--out", help="Folder for the snapshots (created if missing).",
                                      show_default=False)],
    host: Annotated[str, typer.Option(help="Host of the RAS listener: the job's NCCL_RAS_ADDR.")]
    = ras.DEFAULT_HOST,
    port: Annotated[int, typer.Option(min=1, max=65535, help="Its port.")] = ras.DEFAULT_PORT,
    every: Annotated[float, typer.Option(min=0, help="Seconds between snapshots (start to start).")] = 10.0,
    count: Annotated[int, typer.Option(min=1, help="Snapshots to take.")] = 3,
    verbose: Annotated[bool, typer.Option("--verbose", help="VERBOSE STATUS: details on more outliers.")]
    = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text, or json (NCCL >= 2.28.7; older: text).")]
    = "text",
    timeout: Annotated[float | None, typer.Option(
        min=0, help="Seconds RAS may wait for the job's processes (as ncclras -t; default RAS's 5, 0 no "
                    "limit); triage waits that long for the handshake, 6 s more for a report.")] = None,
) -> None:
    if fmt not in ras.FORMATS:
        raise UserError(f"--format must be one of {', '.join(ras.FORMATS)}, not {fmt!r}")
    err = Console(stderr=True, highlight=False, soft_wrap=True)

    def show(event: ras.Event) -> None:
        if event.snapshot is not None:
            print(event.snapshot.path, flush=True)
        if event.kind != "saved":
            err.print(Text(f"triage: {event.message}"))

    with ras.stop_on_sigterm():
        result = ras.collect(host, port, out_dir=out, count=count, every_s=every, verbose=verbose, fmt=fmt,
                             timeout_s=timeout, on_event=show)
    if result.error:
        raise UserError(f"{result.error}" + (f" ({result.summary()})" if result.snapshots else ""))
    err.print(Text(f"triage: {result.summary()}"))
    raise typer.Exit(result.exit_code)


def _example_line(example: object) -> str:
    return str(example["line"] if isinstance(example, dict) else example)


def _progress_printer() -> Callable[[str], None] | None:
    """Progress on stderr, only for a person at a terminal."""
    if not sys.stderr.isatty() or os.environ.get("CI"):
        return None
    console = Console(stderr=True)

    def show(name: str) -> None:
        console.print(Text(f"reading {name}"[: console.width - 1]), end="\r", soft_wrap=True)

    return show


def _register_repro() -> None:
    try:
        from triage.repro.command import register
    except ImportError:
        return
    register(app)


def main() -> None:
    _register_repro()
    try:
        code = app(standalone_mode=False)
    except typer.Exit as done:
        code = done.exit_code
    except SystemExit:
        raise
    except BaseException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            print(_usage_message(exc))  # `triage` alone: the help, as a usage error
            sys.exit(exitcodes.USAGE_OR_INPUT_ERROR)
        sys.exit(_fail(exc))
    sys.exit(code if isinstance(code, int) else 0)


def _fail(exc: BaseException) -> int:
    if os.environ.get("TRIAGE_DEBUG"):
        raise exc
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if isinstance(exc, KeyboardInterrupt):
        err.print(Text("triage: interrupted"))
        return 130
    if isinstance(exc, (UserError, RuleError, NoInput)):
        message = str(exc)
    elif _is_usage_error(exc):
        message = f"{_usage_message(exc)} (see `triage --help`)"
    elif isinstance(exc, OSError):
        message = f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")
    else:
        message = f"internal error: {type(exc).__name__}: {exc} (rerun with TRIAGE_DEBUG=1 and report it)"
    err.print(Text(f"triage: error: {message}"))
    return exitcodes.USAGE_OR_INPUT_ERROR


def _is_usage_error(exc: BaseException) -> bool:
    return type(exc).__name__ in ("UsageError", "BadParameter", "NoSuchOption", "MissingParameter",
                                  "BadOptionUsage", "BadArgumentUsage")


def _usage_message(exc: BaseException) -> str:
    formatter = getattr(exc, "format_message", None)
    return str(formatter() if callable(formatter) else exc)
