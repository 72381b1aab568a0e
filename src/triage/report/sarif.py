"""`--format sarif`: SARIF 2.1.0, for code-scanning UIs (GitHub code scanning, GitLab, Azure DevOps).

The rules that matched an evidence line are `tool.driver.rules[]` (title, meaning, next steps from
the rule file, as the analysis loaded it: a user rule from `--rules DIR` is documented as a built-in
one is); each evidence line is a `result` (level error for the culprit of a diagnosed job,
warning when inconclusive) located at its log file and line, an archive member as the archive with
the member in the message. The verdict is in `runs[0].properties`; a run that could not analyse
its input is a failed `invocation` with a `toolExecutionNotification`.
"""

from __future__ import annotations

from typing import Any, TextIO
from urllib.parse import quote

from triage.model import RuleDoc, Status
from triage.report import indented_json
from triage.report.json_format import decision_dict
from triage.report.views import Finding, ReportView

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Status.DIAGNOSED: "error", Status.INCONCLUSIVE: "warning", Status.NO_FAILURE: "note"}


def _rule(rule_id: str, doc: RuleDoc | None) -> dict[str, Any]:
    rule: dict[str, Any] = {"id": rule_id, "shortDescription": {"text": doc.title if doc else rule_id}}
    if doc and doc.meaning:
        rule["fullDescription"] = {"text": doc.meaning}
    if doc and doc.next_steps:
        rule["help"] = {"text": doc.next_steps}
    if doc and doc.references:
        rule["helpUri"] = doc.references[0]
    return rule


def _uri(path: str) -> str:
    return quote(path.replace("\\", "/"), safe="/:@-._~!$&'()*+,;=")


def _result(view: ReportView, finding: Finding, rule_index: dict[str, int]) -> dict[str, Any]:
    loc = finding.location
    where = f" ({loc.member}:{loc.line} in archive {loc.file})" if loc.member else ""
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(loc.file)}}
    if loc.member is None:
        physical["region"] = {"startLine": loc.line, "snippet": {"text": finding.evidence.text}}
    result: dict[str, Any] = {
        "ruleId": finding.rule_id or "triage-verdict",
        "level": _LEVEL[view.status],
        "message": {"text": f"{finding.culprit}: {finding.evidence.text}{where}"},
        "locations": [{"physicalLocation": physical}],
    }
    if finding.rule_id in rule_index:
        result["ruleIndex"] = rule_index[finding.rule_id]
    return result


def _driver(version: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "triage", "version": version, "rules": rules}


def document(view: ReportView) -> dict[str, Any]:
    rule_ids = sorted({f.rule_id for f in view.findings if f.rule_id})
    rule_index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    rules = [_rule(r, view.report.rules.get(r)) for r in rule_ids]
    if any(f.rule_id is None for f in view.findings):
        rules.append({"id": "triage-verdict", "shortDescription": {"text": "evidence of the verdict"}})
    v = view.report.verdict
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": _driver(view.version, rules)},
            "invocations": [{"executionSuccessful": True}],
            "results": [_result(view, f, rule_index) for f in view.findings],
            "properties": {"verdict": {"status": view.status.value, "phase": v.phase.value,
                                       "category": v.category.value, "confidence": v.confidence,
                                       "culprits": view.culprits, "reasoning": v.reasoning,
                                       "summary": view.headline},
                           **({"decision": decision_dict(view.report.decision)} if view.report.decision else {}),
                           **({"groups": view.progress} if view.progress else {}),
                           **({"config": view.config} if view.config else {})},
        }],
    }


def _dump(doc: dict[str, Any], out: TextIO) -> None:
    out.write(indented_json.dumps(doc))  # one write (see json_format.write)
    out.write("\n")


class Sarif:
    name = "sarif"
    summary = "SARIF 2.1.0: rules and evidence, for code-scanning UIs"

    def write(self, view: ReportView, out: TextIO, *, color: bool | None = None) -> None:
        _dump(document(view), out)

    def write_error(self, message: str, version: str, out: TextIO) -> None:
        _dump({"$schema": SCHEMA, "version": "2.1.0", "runs": [{
            "tool": {"driver": _driver(version, [])},
            "invocations": [{"executionSuccessful": False, "toolExecutionNotifications": [
                {"level": "error", "message": {"text": message}}]}],
            "results": [],
        }]}, out)


FORMATTER = Sarif()
