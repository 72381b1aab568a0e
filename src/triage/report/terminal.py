"""The terminal report: verdict first, then evidence, next steps, and a per-rank picture.

Log text is printed literally (rich `Text`, never markup: `[rank0]` must survive). The rank
picture is a host-by-local-rank grid with one character per rank; runs of hosts whose rows are
identical fold into one line, so a 1,024-rank job still fits on a screen.
"""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.text import Text

from triage.extract import NOTE_FROM
from triage.model import Culprit, Report, Status, Unexplained
from triage.ranks import fmt_ranks
from triage.report.views import GridFold, ReportView, grid, job_size, victims_line, who
from triage.unexplained import rule_command

_ROLE_MARK = {"culprit": "X", "failed": "E", "victim": "T", "ok": "·", "missing": "?",
              "unknown": "·"}
_ROLE_STYLE = {"culprit": "bold red", "failed": "yellow", "victim": "dim", "ok": "green",
               "missing": "magenta", "unknown": "dim"}
_STATUS_STYLE = {Status.DIAGNOSED: "bold white on red", Status.INCONCLUSIVE: "bold black on yellow",
                 Status.NO_FAILURE: "bold black on green"}
_MAX_EVIDENCE = 6
_MAX_UNEXPLAINED = 8  # signatures shown; JSON has them all


class Terminal:
    name = "terminal"
    summary = "the report for a person: verdict, evidence, next steps, rank picture (default)"

    def write(self, view: ReportView, out: TextIO, *, color: bool | None = None) -> None:
        for block in render(view.report, view):
            _console(out, color).print(block)

    def write_error(self, message: str, version: str, out: TextIO) -> None:
        _console(out, False).print(Text(f"triage {version}: error: {message}"))


FORMATTER = Terminal()


def _console(out: TextIO, color: bool | None) -> Console:
    return Console(file=out, highlight=False, soft_wrap=True,
                   no_color=None if color is None else not color,
                   force_terminal=color if color else None)


def write(report: Report, out: TextIO, *, color: bool | None = None) -> None:
    console = _console(out, color)
    for block in render(report):
        console.print(block)


def render(report: Report, view: ReportView | None = None) -> list[Text]:
    if view is None:
        from triage.report.views import build
        view = build(report)
    v = report.verdict
    blocks: list[Text] = [_header(report)]
    head = Text()
    head.append(f" {v.status.value.upper().replace('_', ' ')} ", style=_STATUS_STYLE[v.status])
    if v.status is not Status.NO_FAILURE:
        head.append(f"  phase {v.phase.value} · {v.category.value} · confidence {v.confidence:.2f}")
    blocks.append(head)
    blocks.extend(_culprit_line(c) for c in v.culprits)
    if victims := victims_line(view):
        blocks.append(Text(f"Victims: {victims}", style="dim"))
    blocks.append(Text("Why: ", style="bold") + Text(v.reasoning))
    if view.decision is not None and report.decision is not None:
        blocks.append(_decision(view.decision, report.decision.reason))
    evidence = view.findings[:_MAX_EVIDENCE]
    if evidence:
        blocks.append(Text("\nEvidence:", style="bold"))
        for finding in evidence:
            ev = finding.evidence
            line = Text(f"  {ev.source}:{ev.line}", style="cyan")
            if finding.repeats:
                line.append(f"  \u00d7{finding.count:,} (lines {ev.line}\u2013{finding.last_line}){finding.during}",
                            style="yellow")
            line.append("\n    ")
            line.append(ev.text)  # literal: no markup is interpreted
            blocks.append(line)
    if view.progress:
        blocks.append(Text("\nProcess groups (flight recorder):", style="bold"))
        blocks.extend(Text(f"  {line}") for line in view.progress)
    if view.config:
        blocks.append(Text("\nConfiguration that differs across ranks:", style="bold"))
        blocks.extend(Text(f"  {line}") for line in view.config)
    if v.missing:
        blocks.append(Text("\nMissing evidence:", style="bold"))
        blocks.extend(Text(f"  • {m}") for m in v.missing)
    if v.advice:
        blocks.append(Text("\nNext steps:", style="bold"))
        blocks.extend(Text(f"  • {a}") for a in v.advice)
    if report.ranks and v.status is not Status.NO_FAILURE:
        blocks.extend(_rank_picture(report))
    if v.lost:
        blocks.append(Text("\nOther hypotheses:", style="bold"))
        for h in v.lost[:4]:
            who = ", ".join(_who(c) for c in h.culprits) or "no culprit"
            blocks.append(Text(f"  {h.name} ({h.score:.2f}): {who}", style="dim"))
    blocks.extend(_unexplained(report.unexplained))
    blocks.extend(_sources(report))
    return blocks


def _header(report: Report) -> Text:
    hosts = {s.host for s in report.ranks.values() if s.host}
    read = sum(1 for s in report.sources if s.skipped is None)
    where = f" on {len(hosts)} host{'s' if len(hosts) != 1 else ''}" if hosts else ""
    return Text(f"triage {report.version} — {job_size(report)}{where}, {read} source"
                f"{'s' if read != 1 else ''} read", style="dim")


def _decision(label: str, reason: str) -> Text:
    text = Text("Decision: ", style="bold")
    text.append(label, style="bold")
    text.append(f" — {reason}")  # the reason names the settings of a requeued hang
    return text


def _who(c: Culprit) -> str:
    return who(c)


def _culprit_line(c: Culprit) -> Text:
    text = Text("Culprit: ", style="bold")
    text.append(_who(c), style="bold red")
    text.append(f" — {c.reason}")
    return text


def _rank_picture(report: Report) -> list[Text]:
    legend = Text("\nRanks ", style="bold")
    legend.append("X culprit  E failed  T timed out / lost a peer  · ok  ? no log", style="dim")
    return [legend, *_fold(grid(report)), *_progress(report)]


def _progress(report: Report) -> list[Text]:
    """How far the ranks got: one line per milestone, furthest first."""
    by_stop: dict[tuple[int, str], list[int]] = {}
    for rank, state in report.ranks.items():
        if state.milestone is None:
            continue
        label = state.milestone.label.replace("_", " ")
        if state.step is not None:
            label += f" (step {state.step})"
        by_stop.setdefault((-state.milestone.value, label), []).append(rank)
    if len(by_stop) < 1:
        return []
    line = Text("  got to: ", style="dim")
    line.append("; ".join(f"{label} — rank{'s' if len(rs) > 1 else ''} {fmt_ranks(rs)}"
                          for (_, label), rs in sorted(by_stop.items())), style="dim")
    return [line]


def _fold(folds: list[GridFold]) -> list[Text]:
    """One line per fold of identical rows (views.grid)."""
    width = max((len(f.label) for f in folds), default=0)
    lines: list[Text] = []
    for fold in folds:
        line = Text(f"  {fold.label:<{width}}  ")
        for role in fold.rows[0].roles:
            line.append(_ROLE_MARK.get(role, "·"), style=_ROLE_STYLE.get(role, ""))
        line.append(f"  {fold.count}ranks {fmt_ranks(fold.ranks)}", style="dim")
        lines.append(line)
    return lines


def _unexplained(entries: list[Unexplained]) -> list[Text]:
    """Errors no rule knows: each signature once, with who logged it and its first line."""
    if not entries:
        return []
    lines = sum(u.count for u in entries)
    head = Text("\nUnexplained errors (no rule knows these): ", style="bold")
    head.append(f"{len(entries)} message{'s' if len(entries) != 1 else ''}, {lines} line"
                f"{'s' if lines != 1 else ''}", style="bold")
    blocks = [head]
    for u in entries[:_MAX_UNEXPLAINED]:
        entry = Text(f"  [{u.marker}] ", style="yellow")
        entry.append(u.signature)  # literal: no markup is interpreted
        plural = "s" if u.count != 1 else ""
        entry.append(f"\n    {u.count} line{plural} · {_logged_by(u)} · first {u.first.source}:{u.first.line}",
                     style="dim")
        entry.append("\n      ")
        entry.append(u.first.text, style="dim")
        blocks.append(entry)
    if len(entries) > _MAX_UNEXPLAINED:
        blocks.append(Text(f"  … and {len(entries) - _MAX_UNEXPLAINED} more (--format json lists them)",
                           style="dim"))
    hint = Text("  Teach triage one of them: ", style="dim")
    hint.append(rule_command(entries[0].first.text))
    hint.append(" --out DIR, then analyze with --rules DIR", style="dim")
    blocks.append(hint)
    return blocks


def _logged_by(u: Unexplained) -> str:
    who = (f"rank {u.ranks[0]}" if len(u.ranks) == 1 else f"ranks {fmt_ranks(u.ranks)}" if u.ranks
           else "rank unknown")
    if len(u.hosts) > 1:
        return f"{who} on {len(u.hosts)} hosts"
    return f"{who} on {u.hosts[0]}" if u.hosts else who


def _sources(report: Report) -> list[Text]:
    skipped = [s for s in report.sources if s.skipped]
    # Where a source came from (`triage extract`) is said once for all, not on each source.
    extracts: dict[str, int] = {}
    noted: list[tuple[str, list[str]]] = []
    for s in report.sources:
        notes = []
        for note in s.notes:
            if note.startswith(NOTE_FROM):
                extracts[note[len(NOTE_FROM):]] = extracts.get(note[len(NOTE_FROM):], 0) + 1
            else:
                notes.append(note)
        if notes and not s.skipped and notes != ["empty"]:
            noted.append((s.name, notes))
    read = len(report.sources) - len(skipped)
    lines = [Text(f"\nSources: {read} read, {len(skipped)} skipped", style="bold")]
    if extracts:
        shown = ", ".join(f"{n} from {name}" for name, n in list(extracts.items())[:3])
        more = len(extracts) - 3
        more_text = f" and {more} more extract{'s' if more > 1 else ''}" if more > 0 else ""
        lines.append(Text(f"  from triage extracts: {shown}{more_text}", style="dim"))
    lines.extend(Text(f"  skipped {s.name}: {s.skipped}", style="yellow") for s in skipped[:10])
    if len(skipped) > 10:
        lines.append(Text(f"  … and {len(skipped) - 10} more skipped", style="yellow"))
    lines.extend(Text(f"  {name}: {'; '.join(notes)}", style="dim") for name, notes in noted[:5])
    conflicted = [s for s in report.sources if s.conflicts and not s.skipped]
    lines.extend(Text(f"  {s.name}: who wrote it is disputed: {'; '.join(s.conflicts)}",
                      style="yellow") for s in conflicted[:5])
    return lines
