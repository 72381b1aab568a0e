"""`--format markdown`: the verdict as GitHub-flavoured Markdown, for a PR comment or a job summary.

Log text only ever appears inside code spans or fenced blocks (fences longer than any backtick run
in the text), so no log line is read as Markdown or HTML. The size stays well under GitHub's 1 MiB
step-summary limit: evidence lines are capped in number and length.
"""

from __future__ import annotations

from typing import TextIO

from triage.model import Status
from triage.ranks import fmt_ranks
from triage.report.views import FAILING_ROLES, ReportView, victims_line

_ICON = {Status.DIAGNOSED: "❌", Status.INCONCLUSIVE: "⚠️", Status.NO_FAILURE: "✅"}
_MAX_FINDINGS = 12
_MAX_LINE = 400  # characters of one log line


def code_span(text: str) -> str:
    """`text` as an inline code span that survives any backticks inside it."""
    text = text.replace("\n", " ")
    ticks = "`" * (_longest_run(text, "`") + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(lines: list[str]) -> list[str]:
    body = "\n".join(lines)
    ticks = "`" * max(3, _longest_run(body, "`") + 1)
    return [f"{ticks}text", *lines, ticks]


def _longest_run(text: str, char: str) -> int:
    best = run = 0
    for c in text:
        run = run + 1 if c == char else 0
        best = max(best, run)
    return best


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_LINE else text[:_MAX_LINE] + " …"


def _plain(text: str) -> str:
    """Prose from the engine (reasons, advice): escape what Markdown/HTML would act on."""
    for char in "\\`*_<>[]|#":
        text = text.replace(char, "\\" + char)
    return text.replace("\n", " ")


def verdict_summary(view: ReportView) -> str:
    v = view.report.verdict
    out = [f"### {_ICON[view.status]} triage: {_plain(view.headline)}", ""]
    out.extend(f"**Culprit:** {_plain(culprit)}  " for culprit in view.culprits)
    if victims := victims_line(view):
        out.append(f"**Victims:** {_plain(victims)}  ")
    out += ["", f"**Why:** {_plain(v.reasoning)}", ""]
    if view.decision is not None and (d := view.report.decision) is not None:
        out += [f"**Decision:** {code_span(view.decision)} — {_plain(d.reason)}", ""]
    if view.findings:
        out += ["**Evidence**", ""]
        for f in view.findings[:_MAX_FINDINGS]:
            rule = f" · rule {code_span(f.rule_id)}" if f.rule_id else ""
            against = f" · against {_plain(f.culprit)}" if len(view.culprits) > 1 else ""
            repeats = f" · {f.repeats}" if f.repeats else ""
            out.append(f"- {code_span(f.location.label)}{rule}{against}{repeats}")
            out += ["", *("  " + line for line in fence([_clip(f.evidence.text)])), ""]
        if len(view.findings) > _MAX_FINDINGS:
            out.append(f"- … and {len(view.findings) - _MAX_FINDINGS} more (`--format json` lists them)")
        out.append("")
    for title, items in (("Process groups (flight recorder)", view.progress),
                         ("Configuration that differs across ranks", view.config),
                         ("Missing evidence", v.missing), ("Next steps", v.advice)):
        if items:
            out += [f"**{title}**", "", *(f"- {_plain(item)}" for item in items), ""]
    out += _rank_table(view)
    read = sum(1 for s in view.report.sources if s.skipped is None)
    skipped = len(view.report.sources) - read
    out.append(f"<sub>triage {_plain(view.version)} · {read} sources read"
               + (f", {skipped} skipped" if skipped else "") + "</sub>")
    return "\n".join(out) + "\n"


def _rank_table(view: ReportView) -> list[str]:
    if not view.ranks or view.status is Status.NO_FAILURE:
        return []
    by_role: dict[str, list[int]] = {}
    for r in view.ranks:
        by_role.setdefault(r.role, []).append(r.rank)
    order = [*FAILING_ROLES, "ok", "missing", "unknown"]
    rows = [f"| {role} | {len(ranks)} | {fmt_ranks(ranks)} |"
            for role in sorted(by_role, key=lambda x: order.index(x) if x in order else len(order))
            for ranks in [by_role[role]]]
    hosts = f" on {len(view.hosts)} hosts" if view.hosts else ""
    return ["<details><summary>Ranks: " + f"{len(view.ranks)}{hosts}</summary>", "",
            "| role | count | ranks |", "|---|---|---|", *rows, "", "</details>", ""]


class Markdown:
    name = "markdown"
    summary = "a verdict summary for a PR comment or a CI job summary"

    def write(self, view: ReportView, out: TextIO, *, color: bool | None = None) -> None:
        out.write(verdict_summary(view))

    def write_error(self, message: str, version: str, out: TextIO) -> None:
        out.write(f"### ⛔ triage could not analyse the logs\n\n{code_span(message)}\n\n"
                  f"<sub>triage {_plain(version)}</sub>\n")


FORMATTER = Markdown()
