"""Every rule's own examples, and the conventions every rule file must keep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from triage.parse.scan import Matcher
from triage.rule_examples import check_example, check_folder, file_problems
from triage.rules import (
    Rule,
    RuleError,
    builtin_rules_dir,
    example_problems,
    load_rule,
    load_rules,
    read_rule_document,
    validate,
)

RULES = load_rules()
MATCHER = Matcher(RULES)
RULE_FILES = sorted(builtin_rules_dir().rglob("*.yaml"))


def _cases() -> list[Any]:
    cases = []
    for rule in RULES:
        for i, example in enumerate(rule.examples["match"]):
            cases.append(pytest.param(rule, "match", example, id=f"{rule.id}::match{i}"))
        for i, example in enumerate(rule.examples["nomatch"]):
            cases.append(pytest.param(rule, "nomatch", example, id=f"{rule.id}::nomatch{i}"))
    return cases


@pytest.mark.parametrize(("rule", "way", "example"), _cases())
def test_rule_example(rule: Rule, way: str, example: Any) -> None:
    # The same check as `triage rules test` (triage.rule_examples): fires on its first line and gives
    # the listed fields (match), or does not fire (nomatch), within the regex time limit.
    assert check_example(MATCHER, rule, way, example) == []


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.stem)
def test_rule_file_conventions(path: Path) -> None:
    # Built-in rules load without the schema (for speed); here each is held to all of it, read the
    # way a user rule is (no YAML anchors or aliases), lives in rules/<family>/, and every match
    # example holds a prefilter literal, as does at least one nomatch example: a near miss that
    # reaches the regex. The same checks as `triage rules test`.
    data = read_rule_document(path, strict=True)
    assert file_problems(path, data, family_folder=True) == []


def test_the_builtin_folder_passes_as_rules_test_runs_it() -> None:
    result = check_folder(builtin_rules_dir())
    assert result.invalid == [] and result.failures == []
    assert len(result.rules) == len(RULES) and result.examples == len(_cases())


def test_rule_ids_are_unique_and_every_family_is_covered() -> None:
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    families = {r.family for r in RULES}
    assert {"pytorch", "torchrun", "nccl", "gloo", "store", "python", "slurm"} <= families


def test_validate_reports_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "Bad_Name.yaml"
    problems = validate({"id": "Bad_Name", "title": "x", "family": "nope", "kind": "timeout",
                         "phase": "execution", "severity": "error", "prefilter": [],
                         "regex": "(", "message": "m", "explain": {}, "examples": {}}, path)
    text = "; ".join(problems)
    for fragment in ("kebab-case", "family 'nope' is not one of", "prefilter", "explain: missing key 'meaning'",
                     "examples: missing key 'match'"):
        assert fragment in text


def test_example_problems_names_a_missing_near_miss() -> None:
    data = yaml.safe_load((builtin_rules_dir() / "pytorch" / "pytorch-watchdog-timeout.yaml").read_text())
    data["examples"]["nomatch"] = ["a line without the literal"]
    assert any("near miss" in p for p in example_problems(data))
    data["prefilter"] = ["nowhere"]
    assert any("match example lacks every prefilter literal" in p for p in example_problems(data))


def test_a_rule_whose_regex_does_not_compile_is_refused(tmp_path: Path) -> None:
    source = (builtin_rules_dir() / "pytorch" / "pytorch-watchdog-timeout.yaml").read_text()
    path = tmp_path / "pytorch-watchdog-timeout.yaml"
    path.write_text(source.replace("regex: '", "regex: '(unclosed", 1))
    with pytest.raises(RuleError, match="regex does not compile"):
        load_rule(path)


@pytest.mark.parametrize("engine", ["python", "hyperscan"])
def test_every_literal_is_found_by_each_engine(engine: str) -> None:
    # The scanner only looks at lines the engine finds: a literal it missed would never fire.
    matcher = Matcher(RULES, engine=engine)
    for literal in matcher.by_literal:
        text = f"nothing\n{literal}\nnothing\n"
        assert matcher.finder.line_starts(text, len(text)) == [8], literal
        assert literal in matcher.finder.present(f"x {literal} y"), literal


def test_captured_fields_are_groupdicts_in_its_order() -> None:
    # `Rule.captured` reads a match's groups by position (faster than groupdict): the same fields
    # in the same order (the report writes them in it), for every rule on each of its own examples,
    # and for a regex that names a group twice (read by groupdict).
    checked = 0
    for rule in RULES:
        for example in rule.examples["match"]:
            line = example["line"] if isinstance(example, dict) else example
            match = rule.pattern.search(line)
            if match is None:
                continue  # a hard-wrapped example: matched once joined (test_rule_example)
            expected = [(k, v) for k, v in match.groupdict().items() if v is not None]
            assert list(rule.captured(match).items()) == expected, rule.id
            checked += 1
    assert checked > len(RULES)
    twice = Rule(id="t", title="t", family="nccl", kind=RULES[0].kind, phase="any", severity="info",
                 prefilter=("x",), regex_source=r"(?P<b>x)(?P<a>\d)|(?P<a>y)(?P<b>z)", message="m",
                 explain={}, examples={}, path=Path("t.yaml"))
    for text in ("x1", "yz"):
        match = twice.pattern.search(text)
        assert match is not None
        assert list(twice.captured(match).items()) == [(k, v) for k, v in match.groupdict().items() if v is not None]
