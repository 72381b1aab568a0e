"""`--format junit`: one test case per rank, for GitLab (`artifacts:reports:junit`) and Jenkins.

The culprit, the ranks that failed on their own and the victims fail, each with its evidence and
its timeline; healthy ranks pass; ranks with no log are skipped. A job whose ranks are unknown gets
one test case for the verdict. Valid against the Jenkins xUnit plugin's junit-10.xsd.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TextIO

from triage.model import Status
from triage.report.views import FAILING_ROLES, RankView, ReportView

_SUITE = "triage"
_MAX_TEXT = 2000  # characters of one evidence line


def _xml_safe(text: str) -> str:
    """XML 1.0 allows no control characters but tab, LF and CR: logs have them (ANSI, NUL)."""
    return "".join(c if c in "\t\n\r" or (c >= " " and c not in "\ufffe\uffff") else "\ufffd"
                   for c in text[:_MAX_TEXT])


def _case(parent: ET.Element, name: str, classname: str) -> ET.Element:
    return ET.SubElement(parent, "testcase", name=_xml_safe(name), classname=_xml_safe(classname), time="0")


def _rank_body(view: ReportView, rank: RankView) -> str:
    lines = [f"{f.location.label} [{f.rule_id or 'no rule'}]\n    {f.evidence.text}"
             for f in view.findings if f.rank == rank.rank]
    lines += [f"{e.evidence.source}:{e.evidence.line} [{e.rule_id}] {e.message}\n    {e.evidence.text}"
              for e in rank.timeline]
    if not lines:
        lines = [f"last line: {ev.source}:{ev.line}\n    {ev.text}" for ev in rank.last_lines[:2]]
    return _xml_safe("\n".join(lines))


def _message(view: ReportView, rank: RankView) -> str:
    if rank.role == "culprit":
        return f"culprit: {view.headline}"
    if rank.role == "victim":
        return "victim: timed out or lost a peer because of the culprit"
    return f"{rank.role}: {view.headline}"


def document(view: ReportView) -> ET.Element:
    suite = ET.Element("testsuite", name=_SUITE, tests="0", failures="0", errors="0", skipped="0",
                       time="0")
    props = ET.SubElement(suite, "properties")
    for key, value in (("triage.version", view.version), ("triage.status", view.status.value),
                       ("triage.verdict", view.headline)):
        ET.SubElement(props, "property", name=key, value=_xml_safe(value))
    if view.decision is not None and (decision := view.report.decision) is not None:
        for key, value in (("triage.decision", decision.action), ("triage.decision.summary", view.decision),
                           ("triage.decision.reason", decision.reason),
                           ("triage.decision.exclude", ",".join(decision.hosts)),
                           ("triage.decision.ranks", ",".join(map(str, decision.ranks)))):
            ET.SubElement(props, "property", name=key, value=_xml_safe(value))
    for i, line in enumerate(view.progress):  # per process group, from the flight-recorder dumps
        ET.SubElement(props, "property", name=f"triage.group.{i}", value=_xml_safe(line))
    for i, line in enumerate(view.config):
        ET.SubElement(props, "property", name=f"triage.job.config.{i}", value=_xml_safe(line))
    failures = skipped = 0
    for rank in view.ranks:
        case = _case(suite, f"rank {rank.rank}", f"{_SUITE}.{rank.host or 'ranks'}")
        if rank.role in FAILING_ROLES:
            failures += 1
            failure = ET.SubElement(case, "failure", message=_xml_safe(_message(view, rank)), type=rank.role)
            failure.text = _rank_body(view, rank)
        elif rank.role == "missing":
            skipped += 1
            ET.SubElement(case, "skipped", message="no log from this rank")
    if not view.ranks:
        case = _case(suite, "verdict", _SUITE)
        if view.status is not Status.NO_FAILURE:
            failures += 1
            failure = ET.SubElement(case, "failure", message=_xml_safe(view.headline), type=view.status.value)
            failure.text = _xml_safe("\n".join(f"{f.location.label}\n    {f.evidence.text}"
                                               for f in view.findings) or view.report.verdict.reasoning)
    out = ET.SubElement(suite, "system-out")
    decided = f"\nDecision: {view.decision} — {view.report.decision.reason}" if view.report.decision and view.decision \
        else ""
    out.text = _xml_safe(f"{view.headline}\n{view.report.verdict.reasoning}{decided}")
    suite.set("tests", str(len(view.ranks) or 1))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    return suite


def _write(root: ET.Element, out: TextIO) -> None:
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")


class JUnit:
    name = "junit"
    summary = "JUnit XML, one test case per rank (GitLab, Jenkins)"

    def write(self, view: ReportView, out: TextIO, *, color: bool | None = None) -> None:
        _write(document(view), out)

    def write_error(self, message: str, version: str, out: TextIO) -> None:
        suite = ET.Element("testsuite", name=_SUITE, tests="1", failures="0", errors="1", time="0")
        case = _case(suite, "analyze", _SUITE)
        error = ET.SubElement(case, "error", message=_xml_safe(message), type="usage-or-input-error")
        error.text = _xml_safe(f"triage {version} could not analyse the logs: {message}")
        _write(suite, out)


FORMATTER = JUnit()
