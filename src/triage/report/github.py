"""`--format github`: GitHub Actions workflow commands — annotations on the evidence, folded groups.

The verdict is the first annotation (GitHub keeps 10 errors and 10 warnings per step), then one per
evidence line with `file=` and `line=` (an archive member: the archive as `file=`, the member and
line in the title, since the line number is not a line of the archive). Everything a log wrote is
escaped (`%`, CR, LF; in properties also `:` and `,`), and the free text in the `::group::` folds
sits between `::stop-commands::` markers, so no log line can issue a workflow command.
Under `GITHUB_ACTIONS=true` the CLI also appends the markdown summary to `$GITHUB_STEP_SUMMARY`
(`append_step_summary`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from triage.model import Status
from triage.report.markdown import verdict_summary
from triage.report.views import Finding, Location, ReportView, victims_line

_LEVEL = {Status.DIAGNOSED: "error", Status.INCONCLUSIVE: "warning", Status.NO_FAILURE: "notice"}
_MAX_RANKS = 64  # ranks in the fold
_MAX_ANNOTATIONS = 9  # evidence annotations after the verdict's: GitHub shows 10 per level and step


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: str | int | None) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items()
                     if value is not None)
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def workspace_path(file: str, env: Mapping[str, str] | None = None) -> str:
    """`file` relative to $GITHUB_WORKSPACE when it lies inside it (annotations link to repo paths)."""
    env = os.environ if env is None else env
    workspace = env.get("GITHUB_WORKSPACE")
    if not workspace:
        return file
    try:
        return Path(file).resolve().relative_to(Path(workspace).resolve()).as_posix()
    except (ValueError, OSError):
        return file


def _annotation(level: str, finding: Finding) -> str:
    loc: Location = finding.location
    rule = f" [{finding.rule_id}]" if finding.rule_id else ""
    if loc.member is not None:
        title = f"triage: {finding.culprit}{rule} — {loc.member}:{loc.line} in {loc.file}"
        return command(level, finding.evidence.text, file=workspace_path(loc.file), title=title)
    return command(level, finding.evidence.text, file=workspace_path(loc.file), line=loc.line,
                   title=f"triage: {finding.culprit}{rule}")


def _group(title: str, lines: list[str]) -> list[str]:
    """A fold whose body is inert: workflow commands are off inside it."""
    token = "triage-" + hashlib.sha256("\n".join(lines).encode()).hexdigest()[:20]
    return [f"::group::{escape_data(title)}", f"::stop-commands::{token}", *lines, f"::{token}::",
            "::endgroup::"]


def lines(view: ReportView) -> list[str]:
    v = view.report.verdict
    level = _LEVEL[view.status]
    out = [command(level, v.reasoning, title=f"triage: {view.headline}")]
    out += [_annotation(level, f) for f in view.findings[:_MAX_ANNOTATIONS]]
    decision = view.report.decision
    if view.decision is not None and decision is not None:
        out.append(command("notice", decision.reason, title=f"triage decision: {view.decision}"))
    verdict = [view.headline, *(f"Culprit: {c}" for c in view.culprits)]
    if victims := victims_line(view):
        verdict.append(f"Victims: {victims}")
    verdict.append(f"Why: {v.reasoning}")
    if view.decision is not None and decision is not None:
        verdict.append(f"Decision: {view.decision} — {decision.reason}")
    verdict += [*(f"Group: {g}" for g in view.progress),
                *(f"Config: {c}" for c in view.config), *(f"Missing: {m}" for m in v.missing),
                *(f"Next: {a}" for a in v.advice)]
    out += _group(f"triage: {view.status_label}", verdict)
    if view.findings:
        out += _group(f"triage: evidence ({len(view.findings)} lines)",
                      [f"{f.location.label} ({f.culprit}{', ' + f.rule_id if f.rule_id else ''})\n"
                       f"    {f.evidence.text}" for f in view.findings])
    if view.ranks and view.status is not Status.NO_FAILURE:
        timeline = []
        for r in view.ranks[:_MAX_RANKS]:
            where = f" on {r.host}" if r.host else ""
            got = f", got to {r.milestone}" + (f" (step {r.step})" if r.step is not None else "") \
                if r.milestone else ""
            timeline.append(f"rank {r.rank}{where}: {r.role}{got}")
            timeline += [f"    {e.rule_id}: {e.evidence.source}:{e.evidence.line}" for e in r.timeline[:3]]
        if len(view.ranks) > _MAX_RANKS:
            timeline.append(f"… and {len(view.ranks) - _MAX_RANKS} more ranks (--format json lists them)")
        out += _group(f"triage: ranks ({len(view.ranks)})", timeline)
    return out


def append_step_summary(view: ReportView, env: Mapping[str, str] | None = None) -> Path | None:
    """Under GitHub Actions, append the markdown summary to $GITHUB_STEP_SUMMARY; the file, or None."""
    path = _step_summary(env)
    if path is not None:
        with open(path, "a", encoding="utf-8") as f:
            f.write(verdict_summary(view))
    return path


def append_step_summary_error(message: str, version: str, env: Mapping[str, str] | None = None) -> None:
    path = _step_summary(env)
    if path is not None:
        from triage.report.markdown import FORMATTER as markdown

        with open(path, "a", encoding="utf-8") as f:
            markdown.write_error(message, version, f)


def _step_summary(env: Mapping[str, str] | None) -> Path | None:
    env = os.environ if env is None else env
    if env.get("GITHUB_ACTIONS") != "true" or not env.get("GITHUB_STEP_SUMMARY"):
        return None
    return Path(env["GITHUB_STEP_SUMMARY"])


class GitHub:
    name = "github"
    summary = "GitHub Actions annotations and folds (plus the step summary under GITHUB_ACTIONS)"

    def write(self, view: ReportView, out: TextIO, *, color: bool | None = None) -> None:
        out.write("\n".join(lines(view)) + "\n")

    def write_error(self, message: str, version: str, out: TextIO) -> None:
        out.write(command("error", message, title=f"triage {version}: could not analyse the logs") + "\n")


FORMATTER = GitHub()
