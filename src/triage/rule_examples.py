"""Run a folder of rules against their own examples, and hold each file to the rule conventions.

This is the one code path behind `triage rules test [DIR]` and the project's own tests
(tests/test_rules.py): a rule author sees exactly what the test suite would say.

For each rule file it checks, in order:

1. the file reads as YAML (strictly, as a user rule is read) - a file that does not is *invalid*:
   nothing else can be said about it, and `triage rules test` exits 2;
2. the document is a valid rule: the JSON Schema, the id matches the file name, every regex
   compiles, every named group is a registered field (triage/fields.py) or an `info_fields` entry,
   the message template (`triage.rules.validate`); built-in rules also live in rules/<family>/;
3. every match example holds a prefilter literal, and a nomatch example is a near miss
   (`triage.rules.example_problems`);
4. each example, run through the real scanner: a match example fires (on its first line) and gives
   the fields it lists, a nomatch example does not fire, and the regex answers every example
   within the per-line time limit (`triage.rules.MATCH_TIMEOUT_S`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triage.model import Identity
from triage.parse.scan import Matcher, ScanStats, scan_text
from triage.rules import (
    MATCH_TIMEOUT_S,
    Rule,
    RuleError,
    builtin_rules_dir,
    compile_rule,
    example_problems,
    read_rule_document,
    validate,
)

WAYS = ("match", "nomatch")


@dataclass(frozen=True)
class Failure:
    """One thing that does not hold: a rule file, or one of its examples."""

    rule_id: str  # the rule's id, or the file's stem when the file has no usable id
    path: Path
    where: str  # "match[0]", "nomatch[2]", or "rule" for the file as a whole
    detail: str  # what differed

    def line(self) -> str:
        return f"FAIL {self.rule_id} {self.path} {self.where}: {self.detail}"


@dataclass
class FolderResult:
    """What `check_folder` found: the rules and examples it ran, and what failed."""

    directory: Path
    files: int = 0
    rules: list[Rule] = field(default_factory=list)
    examples: int = 0
    failures: list[Failure] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)  # files that are not readable YAML: one message each

    @property
    def failed_rules(self) -> int:
        return len({(f.rule_id, f.path) for f in self.failures})


def example_line(example: Any) -> str:
    """The log line of an example (a plain string, or a mapping with `line`)."""
    return str(example["line"] if isinstance(example, dict) else example)


def example_lines(example: Any) -> list[str]:
    """The lines an example feeds the scanner: its line, then its `following` lines (block rules)."""
    following = example.get("following", []) if isinstance(example, dict) else []
    return [example_line(example), *map(str, following)]


def example_fields(example: Any) -> dict[str, str]:
    """The fields a match example says the rule gives, as strings (captured values always are)."""
    given = example.get("fields") if isinstance(example, dict) else None
    return {str(k): str(v) for k, v in (given or {}).items()}


def fields_on(matcher: Matcher, rule: Rule, example: Any) -> dict[str, str] | None:
    """The fields `rule` gives on the example's first line, through the real scanner; None when it
    does not fire there."""
    text = "\n".join(example_lines(example)) + "\n"
    events = scan_text(matcher, "example.log", Identity(), [text], ScanStats())
    # A record whose block cites another line (`cite`) quotes that line as its evidence.
    last = 1 + (rule.block.lines if rule.block and rule.block.cite else 0)
    fired = [e for e in events if e.rule_id == rule.id and 1 <= e.evidence.line <= last]
    return dict(fired[0].fields) if fired else None


def check_example(matcher: Matcher, rule: Rule, way: str, example: Any) -> list[str]:
    """What differs between one example and what the rule does with it (empty when it holds).

    `matcher` holds the rule (and may hold others: the scanner is the one `triage analyze` runs).
    """
    lines = example_lines(example)
    problems = [f"the regex took over {MATCH_TIMEOUT_S * 1000:.0f} ms on {which!r} (catastrophic "
                "backtracking? anchor it, or bound its repetitions)"
                for which in lines if _times_out(rule, which)]
    got = fields_on(matcher, rule, example)
    shown = _clip(lines[0])
    if way == "nomatch":
        if got is not None:
            problems.append(f"fired on a line it must not match: {shown}")
        return problems
    if got is None:
        return [*problems, f"did not fire on {shown}"]
    for key, want in example_fields(example).items():
        if got.get(key) != want:
            have = "nothing" if key not in got else repr(got[key])
            problems.append(f"field {key}: expected {want!r}, got {have} on {shown}")
    return problems


def rule_failures(matcher: Matcher, rule: Rule) -> tuple[int, list[Failure]]:
    """Every example of a (loaded) rule run through `matcher`: how many, and those that fail."""
    count, failures = 0, []
    for way in WAYS:
        for index, example in enumerate(rule.examples.get(way) or []):
            count += 1
            failures += [Failure(rule.id, rule.path, f"{way}[{index}]", detail)
                         for detail in check_example(matcher, rule, way, example)]
    return count, failures


def file_problems(path: Path, data: Any, *, family_folder: bool = False) -> list[str]:
    """What is wrong with a rule document read from `path`: validity, then the example conventions.

    `family_folder` also requires the file to live in a folder named for its family (the layout of
    the built-in rules/<family>/).
    """
    problems = validate(data, path, schema=True)
    if problems:
        return problems
    if family_folder and path.parent.name != data["family"]:
        problems.append(f"a {data['family']} rule lives in rules/{data['family']}/, not in {path.parent.name}/")
    return problems + example_problems(data)


def check_folder(directory: Path, *, family_folders: bool | None = None) -> FolderResult:
    """Hold every rule file under `directory` (recursively, *.yaml) to the conventions and run its
    examples. Raises RuleError when `directory` is not a folder; files that are not readable YAML
    are listed in `invalid`. `family_folders` defaults to True for the built-in rules only.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise RuleError(f"{directory}: not a folder of rules")
    if family_folders is None:
        family_folders = directory.resolve() == builtin_rules_dir().resolve()
    result = FolderResult(directory)
    seen: dict[str, Path] = {}
    for path in sorted(directory.rglob("*.yaml")):
        result.files += 1
        try:
            data = read_rule_document(path, strict=True)
        except RuleError as exc:
            result.invalid.append(str(exc))
            continue
        rule_id = str(data.get("id") or path.stem) if isinstance(data, dict) else path.stem
        problems = file_problems(path, data, family_folder=family_folders)
        if rule_id in seen:
            problems.append(f"rule id {rule_id!r} is already defined in {seen[rule_id]}")
        seen.setdefault(rule_id, path)
        result.failures += [Failure(rule_id, path, "rule", p) for p in problems]
        try:
            rule = compile_rule(data, path)
        except (RuleError, KeyError, TypeError, AttributeError, ValueError):
            continue  # its problems are listed above; its examples cannot run
        result.rules.append(rule)
    matcher = Matcher(result.rules)
    for rule in result.rules:
        count, failures = rule_failures(matcher, rule)
        result.examples += count
        result.failures += failures
    return result


def summary(result: FolderResult) -> str:
    """One line: how many rule files and examples ran, and how many failed."""
    ran = f"{result.files} rule files, {result.examples} examples in {result.directory}"
    if not result.failures:
        return f"all pass: {ran}"
    return f"{len(result.failures)} failed in {result.failed_rules} of {ran}"


def _times_out(rule: Rule, line: str) -> bool:
    try:
        rule.pattern.search(line, timeout=MATCH_TIMEOUT_S)
    except TimeoutError:
        return True
    return False


def _clip(line: str, width: int = 100) -> str:
    return repr(line if len(line) <= width else line[: width - 1] + "…")


def failures_of(rules: Iterable[Rule]) -> list[Failure]:
    """The failing examples of already-loaded rules (each run through a matcher of them all)."""
    rules = list(rules)
    matcher = Matcher(rules)
    return [f for rule in rules for f in rule_failures(matcher, rule)[1]]
