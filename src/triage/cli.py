"""The `triage` command line: a thin layer over `triage.api`.

It parses options, calls the library, hands the Report to a formatter and picks the exit code.
Every failure becomes one line on stderr and exit code 2: no traceback reaches a user
(`TRIAGE_DEBUG=1` shows it).
"""

from __future__ import annotations

import contextlib
import copy
import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from triage import __version__, exitcodes
from triage.cli_help import HelpGroup, help_command
from triage.ras import DEFAULT_HOST as RAS_HOST
from triage.ras import DEFAULT_PORT as RAS_PORT
from triage.report import FORMATS, SCHEDULER_FORMATS

# The analysis (rules, scanner, diagnosis, formatters) is imported by the commands that run it, not
# here: `triage --help` and a usage error stay fast. So is rich, which only what prints to a
# terminal needs (`_console`, `_text`): an analysis written to files does without it.

app = typer.Typer(
    cls=HelpGroup,  # value names from types: PATH..., N, [terminal|json] (triage.cli_help)
    name="triage",
    help="Name the rank, link and phase that broke a distributed PyTorch/NCCL/HCCL job.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
rules_app = typer.Typer(help="List, show and test the signature rules; draft a new one from a log line.",
                        no_args_is_help=True)
app.add_typer(rules_app, name="rules")
ras_app = typer.Typer(help="Live snapshots of a running or hanging job from NCCL's RAS service (NCCL >= 2.24).",
                      no_args_is_help=True)
app.add_typer(ras_app, name="ras")

_EXIT_HELP = "Exit codes: " + "; ".join(f"{code} {text}" for code, text in exitcodes.TABLE) + "."


class UserError(Exception):
    """A problem with what the user gave; its message is shown as is."""


_FAIL_ON_DEFAULT = "diagnosed,inconclusive"


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
    paths: Annotated[list[str], typer.Argument(
        help="Log folders, files or archives, or triage extracts; - reads stdin.", show_default=False)],
    fmt: Annotated[str | None, typer.Option(
        "--format", "-f", help=f"Format on stdout: {', '.join(FORMATS)} (default terminal); or the decision "
        f"alone, for a scheduler: {', '.join(SCHEDULER_FORMATS)}.",
        show_default=False)] = None,
    world_size: Annotated[int | None, typer.Option(
        "--world-size", "-n", min=1, help="Number of ranks the job had, when the logs do not say.")]
    = None,
    policy: Annotated[Path | None, typer.Option(
        "--policy", metavar="FILE", help="Decision policy (YAML) in place of the built-in one: which verdicts "
        "requeue, exclude nodes, stop or need a person (docs/decision.md).")] = None,
    exit_code_from: Annotated[str, typer.Option(
        "--exit-code-from", metavar="verdict|decision",
        help="decision: exit with the decision's code instead of the verdict's (built-in policy: 0 none, 75 "
             "requeue, 76 requeue-excluding, 93 stop or investigate: do not requeue); errors still exit 2.")]
    = "verdict",
    rules: Annotated[list[Path] | None, typer.Option(
        "--rules", help="Extra folder of rule YAML files (repeatable).")] = None,
    output: Annotated[list[str] | None, typer.Option(
        "--output", "-o", metavar="[FORMAT=]PATH",
        help="Also write the report as FORMAT to PATH (repeatable), e.g. -o junit=triage.xml; a bare PATH "
             "gets the --format output instead of stdout. Written even when the input is bad (with the "
             "error).")] = None,
    fail_on: Annotated[str, typer.Option(
        "--fail-on", metavar="STATUSES",
        help=f"Verdicts that exit non-zero: comma-separated {', '.join(exitcodes.FAIL_ON_CHOICES)}.")]
    = _FAIL_ON_DEFAULT,
    exit_zero: Annotated[bool, typer.Option(
        "--exit-zero", help="Exit 0 whatever the verdict (errors still exit 2); as --fail-on none.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No progress; with --output files, nothing on stdout unless --format.")] = False,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", min=1, metavar="N",
        help="Processes reading files at once (default: one per usable CPU, up to 8; inputs under 32 MiB "
             "are read by one).")] = None,
) -> None:
    from triage.api import NoInput, analyze
    from triage.decision import PolicyError, load_policy
    from triage.report import outputs as report_outputs
    from triage.rules import RuleError

    try:
        outputs = report_outputs.plan(fmt, output or [], quiet=quiet)
    except report_outputs.OutputError as exc:
        raise UserError(str(exc)) from None
    try:
        failing = exitcodes.parse_fail_on(fail_on)
        by_decision = exitcodes.parse_exit_code_from(exit_code_from, exit_zero or fail_on != _FAIL_ON_DEFAULT)
        table = load_policy(policy) if policy is not None else None
        report = analyze(paths, world_size=world_size, rules_dirs=rules or [],
                         progress=None if quiet else _progress_printer(), jobs=jobs, policy=table)
    except (ValueError, PolicyError) as exc:  # --fail-on, --exit-code-from, --policy
        report_outputs.write_error(str(exc), __version__, outputs)
        raise UserError(str(exc)) from None
    except (NoInput, RuleError, OSError) as exc:
        report_outputs.write_error(_error_message(exc), __version__, outputs)
        raise
    if by_decision:
        code = exitcodes.decision_exit_code(report)
    else:
        code = 0 if exit_zero else exitcodes.exit_code(report, failing)
    try:
        report_outputs.write_report(report, outputs)
    except BrokenPipeError:
        # `triage analyze … | head`: the reader stopped reading. The verdict stands, and so does
        # its exit code: the pipe closing is not a failure of the analysis.
        _quiet_stdout()
    except SystemExit as stop:
        if stop.code != 1:  # rich's own answer to a closed pipe: stdout to /dev/null, then exit 1
            raise
    raise typer.Exit(code)


@app.command("extract", help="Scan one node's logs where they are and write what was found (its sources, "
             "events, milestones, facts) to a compact extract file; `triage analyze` reads extracts of many "
             "nodes (alone, gzipped, in archives or folders, mixed with raw logs) and gives the verdict it "
             "would give on all the logs. See docs/extract.md. Exit codes: 0 extract written; 2 usage or "
             "input error (nothing readable: the extract is still written, saying why; bad option, invalid "
             "rule, output not writable).")
def extract_command(
    paths: Annotated[list[str], typer.Argument(help="Log folders, files or archives; - reads stdin.",
                                               show_default=False)],
    output: Annotated[str, typer.Option(
        "--output", "-o", metavar="FILE",
        help="Where to write the extract; gzipped when FILE ends in .gz; - writes it to stdout.",
        show_default=False)],
    host: Annotated[str | None, typer.Option(
        "--host", metavar="NAME",
        help="This node's name, put in front of every source name (NAME/path), as a folder named after the "
             "host would be: for logs whose paths do not name their host. Use the name the logs use "
             "(`hostname -s`).")] = None,
    rules: Annotated[list[Path] | None, typer.Option(
        "--rules", help="Extra folder of rule YAML files (repeatable).")] = None,
) -> None:
    from triage.api import NoInput, extract

    try:
        done = extract(paths, output, host=host, rules_dirs=rules or [])
    except ValueError as exc:  # --host
        raise UserError(str(exc)) from None
    err = _console(stderr=True, highlight=False, soft_wrap=True)
    skipped = sum(1 for s in done.sources if s.skipped)
    where = "stdout" if output == "-" else output
    shrunk = done.bytes_out and done.bytes_in >= 2 * done.bytes_out
    ratio = f", 1/{done.bytes_in // done.bytes_out:,}" if shrunk else ""
    err.print(_text(f"triage: extract: {len(done.sources) - skipped} sources read ({skipped} skipped), "
                   f"{done.events:,} events: {_size(done.bytes_in)} of logs -> {_size(done.bytes_out)} "
                   f"in {where}{ratio}"))
    if not done.readable:
        raise UserError(str(NoInput(done.sources)))


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB"):
        if size < 1000:
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


@rules_app.command("list", help="One line per rule: id, family, kind, phase, title.")
def rules_list(
    rules: Annotated[list[Path] | None, typer.Option("--rules", help="Extra rule folder.")] = None,
) -> None:
    from triage.rules import load_rules

    out = _console(highlight=False, soft_wrap=True)
    loaded = load_rules(rules or [])
    for rule in sorted(loaded, key=lambda r: (r.family, r.id)):
        out.print(_text(f"{rule.id:<48} {rule.family:<9} {rule.kind.value:<14} {rule.phase:<13} "
                       f"{rule.title}"))
    out.print(_text(f"{len(loaded)} rules", style="dim"))


@rules_app.command("show", help="Everything about one rule: what it means, its usual causes and what to do "
                  "next, its references, its examples with the fields the rule gives on each, and its file.")
def rules_show(
    rule_id: Annotated[str, typer.Argument(help="A rule id, as `triage rules list` shows it.")],
    rules: Annotated[list[Path] | None, typer.Option("--rules", help="Extra rule folder.")] = None,
) -> None:
    from triage.parse.scan import Matcher
    from triage.rule_examples import example_line, fields_on
    from triage.rules import load_rules

    loaded = load_rules(rules or [])
    by_id = {r.id: r for r in loaded}
    if rule_id not in by_id:
        close = _close_matches(rule_id, list(by_id), n=3, cutoff=0.6)
        if not close:  # a fragment of an id: the ids holding it
            close = [r for r in by_id if rule_id and rule_id in r][:3]
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise UserError(f"no rule {rule_id!r}; {hint}`triage rules list` shows them")
    rule = by_id[rule_id]
    out = _console(highlight=False, soft_wrap=True)
    out.print(_text(f"{rule.id} — {rule.title}", style="bold"))
    out.print(_text(f"family {rule.family} · kind {rule.kind.value} · phase {rule.phase} · "
                   f"severity {rule.severity}"
                   + (f" · category {rule.category.value}" if rule.category else "")))
    out.print(_text(f"file {rule.path}", style="dim"))
    for key in ("meaning", "causes", "next_steps"):
        if rule.explain.get(key):
            out.print(_text(f"\n{key.replace('_', ' ').capitalize()}: ", style="bold")
                      + _text(str(rule.explain[key]).strip()))
    if rule.references:
        out.print(_text("\nReferences:", style="bold"))
        for ref in rule.references:
            out.print(_text(f"  {ref}"))
    matcher = Matcher(loaded)
    for way, heading in (("match", "Matches (and the fields it gives)"), ("nomatch", "Does not match")):
        examples = rule.examples.get(way) or []
        if examples:
            out.print(_text(f"\n{heading}:", style="bold"))
        for example in examples:
            out.print(_text(f"  {example_line(example)}"))
            if way == "match":
                fields = fields_on(matcher, rule, example)
                shown = ("  ".join(f"{k}={v}" for k, v in fields.items()) or "(no fields)" if fields is not None
                         else "(does not fire: run `triage rules test`)")
                out.print(_text(f"    {shown}", style="cyan"))


# `explain` was the first name of `show`: kept working, out of the command list.
rules_app.command("explain", hidden=True, help="Same as `triage rules show`.")(rules_show)


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
    from triage.rules import FAMILIES, load_rule, load_rules
    from triage.unexplained import (
        DraftError,
        draft_rule,
        example_problems,
        explained_by,
        render_rule,
    )

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
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:  # the file as written must load and fire
        trial = Path(scratch) / path.name
        trial.write_text(text, encoding="utf-8")
        problems = example_problems(load_rule(trial))
    if problems:
        raise UserError("the drafted rule does not hold: " + "; ".join(problems))
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(path)
    err = _console(stderr=True, highlight=False, soft_wrap=True)
    if already := explained_by(from_line, known):
        err.print(_text(f"note: built-in rule {', '.join(already)} already matches this line; "
                       "both will fire", style="yellow"))
    err.print(_text(f"edit it (regex, kind, phase, explain), then: triage analyze --rules {out} …",
                   style="dim"))


@rules_app.command("test", help="Run a folder's rules against their own examples, and hold each rule file to the "
                  "conventions, exactly as the project's own tests do: a match example must fire and give the "
                  "fields it lists, a nomatch example must not fire; the file must follow the rule schema, name "
                  "only registered fields (or info_fields), and have regexes that compile and answer each "
                  "example within the time limit; every match example and one nomatch example must hold a "
                  "prefilter literal. Prints one line per failure, then a summary. Exit codes: 0 all pass; "
                  "1 some fail; 2 DIR is not a folder, or a rule file is not readable YAML.")
def rules_test(
    directory: Annotated[Path | None, typer.Argument(
        metavar="DIR", help="Folder of rule YAML files, searched recursively. Default: the built-in rules.",
        show_default=False)] = None,
) -> None:
    from triage.rule_examples import check_folder, summary
    from triage.rules import builtin_rules_dir

    result = check_folder(directory if directory is not None else builtin_rules_dir())
    out = _console(highlight=False, soft_wrap=True)
    err = _console(stderr=True, highlight=False, soft_wrap=True)
    for message in result.invalid:
        err.print(_text(f"triage: error: {message}"))
    for failure in result.failures:
        out.print(_text(failure.line()))
    out.print(_text(summary(result) + (f"; {len(result.invalid)} files not readable" if result.invalid else ""),
                   style="bold" if result.failures or result.invalid else "green"))
    if result.invalid:
        raise typer.Exit(exitcodes.USAGE_OR_INPUT_ERROR)
    raise typer.Exit(exitcodes.RULES_FAIL if result.failures else exitcodes.RULES_PASS)


@app.command("watch", context_settings={"allow_interspersed_args": False},
             help="Run a distributed job (triage watch [OPTIONS] -- COMMAND...) or attach to one (--pid PID), "
             "sample each rank's progress (/proc, stacks, step lines), and when a rank makes no progress while its peers "
             "wait on it (or every rank waits) take every rank's stacks "
             "(py-spy), /proc state, RAS status and flight recorder, and give the verdict; --on-hang kill ends "
             "the job. See docs/watch.md. Exit codes: the job's own when it ends by itself (after a post-mortem "
             "verdict if it failed); with --on-hang kill, the verdict's: 1 hang diagnosed, 3 culprit not "
             "settled; 2 usage error; 130 Ctrl-C.")
def watch_command(
    command: Annotated[list[str] | None, typer.Argument(
        help="The job's command, after --: torchrun ..., srun ..., python train.py ...", show_default=False)]
    = None,
    pid: Annotated[int | None, typer.Option(
        "--pid", min=1, help="Attach to a running job: its launcher's pid (torchrun, srun) or a rank's; "
        "--pid 1 in a pod sharing its process namespace watches every process in it.")] = None,
    stall: Annotated[float, typer.Option(
        "--stall", min=1, metavar="SECONDS",
        help="The window for a rank busy with nothing but its CPU moving (spinning) while a peer waits, and "
             "for every rank waiting; an idle rank (nothing moving) while a peer waits is named after 30 s (or "
             "this, if shorter). Each window grows to twice the longest pause of its kind the job came out of "
             "(docs/watch.md, 'Choosing --stall').")] = 120.0,
    on_hang: Annotated[str, typer.Option(
        "--on-hang", metavar="report|kill|wait",
        help="report: print the verdict and keep watching; kill: print it and, on a diagnosed hang (see "
             "--kill-confidence), end the job's process tree (SIGTERM, SIGKILL after --grace); wait: take the "
             "snapshot and keep watching quietly.")] = "report",
    kill_confidence: Annotated[float, typer.Option(
        "--kill-confidence", min=0.0, max=1.0, metavar="P",
        help="--on-hang kill ends the job only on a diagnosed verdict at least this sure, naming ranks "
             "seen making no progress while a peer waits.")] = 0.7,
    grace: Annotated[float, typer.Option("--grace", min=0, metavar="SECONDS",
                                         help="Between SIGTERM and SIGKILL with --on-hang kill.")] = 10.0,
    native: Annotated[bool, typer.Option("--native", help="Stacks with C/C++ frames too (py-spy --native).")]
    = False,
    logs: Annotated[list[Path] | None, typer.Option(
        "--logs", metavar="DIR", help="The job's own log folder, followed and analysed too (repeatable).")] = None,
    folder: Annotated[Path | None, typer.Option(
        "--dir", metavar="DIR", help="Where the job's output, watch.log and the snapshots are kept "
        "(default: ./triage-watch-<UTC time>).")] = None,
    fmt: Annotated[str | None, typer.Option(
        "--format", "-f", help=f"Format of the verdict on stdout: {', '.join(FORMATS + SCHEDULER_FORMATS)} "
        "(default terminal).",
        show_default=False)] = None,
    output: Annotated[list[str] | None, typer.Option(
        "--output", "-o", metavar="[FORMAT=]PATH", help="Also write the verdict as FORMAT to PATH (repeatable), "
        "as `triage analyze -o`.")] = None,
    fail_on: Annotated[str, typer.Option(
        "--fail-on", metavar="STATUSES", help="Verdicts that exit non-zero after --on-hang kill.")]
    = "diagnosed,inconclusive",
    world_size: Annotated[int | None, typer.Option(
        "--world-size", "-n", min=1, help="Number of ranks the job has, when its logs do not say.")] = None,
    rules: Annotated[list[Path] | None, typer.Option(
        "--rules", help="Extra folder of rule YAML files (repeatable).")] = None,
    extract_to: Annotated[Path | None, typer.Option(
        "--extract", metavar="FILE", help="Also write this node's evidence as a triage extract after each "
        "snapshot and at the end (many nodes: `triage analyze` over every node's extract).")] = None,
    host: Annotated[str | None, typer.Option(
        "--host", metavar="NAME", help="This node's name in the snapshot and the extract (default: hostname).")]
    = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="With --output files, no verdict on stdout.")]
    = False,
    policy: Annotated[Path | None, typer.Option(
        "--policy", metavar="FILE", help="Decision policy (YAML) in place of the built-in one, as `triage "
        "analyze --policy`.")] = None,
) -> None:
    from triage.decision import PolicyError, load_policy
    from triage.report import outputs as report_outputs
    from triage.watch import Options, watch
    from triage.watch.run import ON_HANG

    if (pid is None) == (not command):
        raise UserError("give the job's command after -- (triage watch -- torchrun ...) or --pid PID, not both")
    if on_hang not in ON_HANG:
        raise UserError(f"--on-hang must be one of {', '.join(ON_HANG)}, not {on_hang!r}")
    if host is not None:
        from triage.api import check_host

        try:
            check_host(host)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    try:
        outputs = report_outputs.plan(fmt, output or [], quiet=quiet)
        failing = exitcodes.parse_fail_on(fail_on)
        table = load_policy(policy) if policy is not None else None
    except (ValueError, PolicyError) as exc:
        raise UserError(str(exc)) from None
    options = Options(command=list(command or []), pid=pid, stall_s=stall, on_hang=on_hang, grace_s=grace,
                      native=native, logs=list(logs or []), folder=folder, outputs=outputs, fail_on=failing,
                      world_size=world_size, rules_dirs=list(rules or []), extract=extract_to, host=host,
                      kill_confidence=kill_confidence, policy=table)
    try:
        code = watch(options)
    except (FileNotFoundError, PermissionError, ProcessLookupError) as exc:
        raise UserError(f"cannot watch: {exc}") from None
    raise typer.Exit(code)


@ras_app.command("collect", help="Query NCCL's RAS service --count times, --every seconds apart, and save each "
                 "answer, byte for byte, as soon as it ends, in the --out folder as ras-<UTC time>Z.txt (.json); "
                 "an answer cut short is kept as ras-<UTC time>Z.partial.txt. `triage analyze` reads the folder. "
                 "Exit codes: 0 all snapshots taken (some may be partial); 2 RAS unreachable or not answering, "
                 "or a bad option; 130 Ctrl-C, 143 SIGTERM (what was saved stays).")
def ras_collect(
    out: Annotated[Path, typer.Option("--out", help="Folder for the snapshots (created if missing).",
                                      show_default=False)],
    host: Annotated[str, typer.Option(help="Host of the RAS listener: the job's NCCL_RAS_ADDR.")]
    = RAS_HOST,
    port: Annotated[int, typer.Option(min=1, max=65535, help="Its port.")] = RAS_PORT,
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
    from triage.ras import collect as ras

    if fmt not in ras.FORMATS:
        raise UserError(f"--format must be one of {', '.join(ras.FORMATS)}, not {fmt!r}")
    err = _console(stderr=True, highlight=False, soft_wrap=True)

    def show(event: ras.Event) -> None:
        if event.snapshot is not None:
            print(event.snapshot.path, flush=True)
        if event.kind != "saved":
            err.print(_text(f"triage: {event.message}"))

    with ras.stop_on_sigterm():
        result = ras.collect(host, port, out_dir=out, count=count, every_s=every, verbose=verbose, fmt=fmt,
                             timeout_s=timeout, on_event=show)
    if result.error:
        raise UserError(f"{result.error}" + (f" ({result.summary()})" if result.snapshots else ""))
    err.print(_text(f"triage: {result.summary()}"))
    raise typer.Exit(result.exit_code)


def _progress_printer() -> Callable[[str], None] | None:
    """Progress on stderr, only for a person at a terminal."""
    if not sys.stderr.isatty() or os.environ.get("CI"):
        return None
    console = _console(stderr=True)

    def show(name: str) -> None:
        console.print(_text(f"reading {name}"[: console.width - 1]), end="\r", soft_wrap=True)

    return show


def _console(**options: Any) -> Any:
    from rich.console import Console

    return Console(**options)


def _text(*parts: Any, **options: Any) -> Any:
    from rich.text import Text

    return Text(*parts, **options)


def _close_matches(word: str, words: list[str], **options: Any) -> list[str]:
    import difflib

    return difflib.get_close_matches(word, words, **options)


def _register_repro() -> None:
    try:
        from triage.repro.command import register
    except ImportError:
        return
    register(app)


def _app_for(first: list[str]) -> typer.Typer:
    """The command tree a run needs: where its first argument names a command or group, the root
    with that one alone; else (help, --version, a usage error) the whole tree.

    Typer builds every command's parameters from its signature on each run (~18 ms for the whole
    tree, ~4 ms for `analyze` alone); what one command prints (its help, its usage errors) is
    the same under either root. `repro` and its torch-side options (~30 ms to import) are
    registered only when it, or the whole tree, is asked for.
    """
    name = first[0] if first else None
    commands = [c for c in app.registered_commands if c.name == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if not (commands or groups):
        _register_repro()
        commands = [c for c in app.registered_commands if c.name == name]
        if not commands:
            return app
    trimmed = copy.copy(app)
    trimmed.registered_commands, trimmed.registered_groups = commands, groups
    return trimmed


def main() -> None:
    # An analysis makes hundreds of thousands of objects that live until the report is written and
    # form no cycles: the collector's default pace (every 700 allocations, full passes as the heap
    # grows) spent ~15% of a 1,024-rank job's time finding nothing. Collect rarely instead.
    gc.set_threshold(100_000, 50, 100)
    # Text that cannot be encoded (a lone surrogate some document smuggled in) is escaped when
    # written, never a traceback: the inputs are checked for it, this is the last guard.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    try:
        code = _app_for(sys.argv[1:2])(prog_name="triage", standalone_mode=False)
    except typer.Exit as done:
        code = done.exit_code
    except SystemExit:
        raise
    except BaseException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            print(_usage_message(exc))  # `triage` alone: the help, as a usage error
            sys.exit(exitcodes.USAGE_OR_INPUT_ERROR)
        sys.exit(_fail(exc))
    # The collections the interpreter runs on its way out walk every object still tracked (~50,000
    # after a 256-rank job, ~15 ms a pass) to find next to nothing to free: frozen, they are
    # skipped. Nothing is left unwritten: files are closed where they are written, and the
    # interpreter still flushes stdout and stderr and frees what it frees by reference counts.
    gc.freeze()
    sys.exit(code if isinstance(code, int) else 0)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _fail(exc: BaseException) -> int:
    if os.environ.get("TRIAGE_DEBUG"):
        raise exc
    err = _console(stderr=True, highlight=False, soft_wrap=True)
    if isinstance(exc, KeyboardInterrupt):
        err.print(_text("triage: interrupted"))
        return 130
    if _is_usage_error(exc):
        said = _usage_message(exc).rstrip()
        message = f"{said}{'' if said.endswith('.') else '.'} Try '{help_command(exc) or 'triage --help'}'."
    else:
        message = _error_message(exc)
    err.print(_text(f"triage: error: {message}"))
    return exitcodes.USAGE_OR_INPUT_ERROR


def _error_message(exc: BaseException) -> str:
    from triage.api import NoInput
    from triage.rules import RuleError

    if isinstance(exc, (UserError, RuleError, NoInput)):
        return str(exc)
    if isinstance(exc, OSError):
        return f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")
    return f"internal error: {type(exc).__name__}: {exc} (rerun with TRIAGE_DEBUG=1 and report it)"


def _is_usage_error(exc: BaseException) -> bool:
    return type(exc).__name__ in ("UsageError", "BadParameter", "NoSuchOption", "MissingParameter",
                                  "BadOptionUsage", "BadArgumentUsage")


def _usage_message(exc: BaseException) -> str:
    formatter = getattr(exc, "format_message", None)
    return str(formatter() if callable(formatter) else exc)
