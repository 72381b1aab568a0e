"""The contract around rules: the JSON Schema, the field registry, and the refusal of bad rule files."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from triage.fields import FIELDS, TYPES, markdown_table, signal_name
from triage.parse.clock import parse_time
from triage.parse.scan import Matcher
from triage.ranks import parse_ranks
from triage.rule_examples import fields_on
from triage.rules import (
    FAMILIES,
    MAX_RULE_BYTES,
    RULE_CATEGORIES,
    RULE_KINDS,
    RULE_PHASES,
    SEVERITIES,
    RuleError,
    builtin_rules_dir,
    load_rules,
    rule_schema,
    template_problems,
)

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "triage"
DOC = ROOT / "docs" / "rules.md"
RULE_FILES = sorted(builtin_rules_dir().rglob("*.yaml"))
RULES = load_rules()
BASE = yaml.safe_load((builtin_rules_dir() / "pytorch" / "pytorch-watchdog-timeout.yaml").read_text())


# --- the schema ---------------------------------------------------------------------------------

def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = rule_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_schema_enums_are_the_ones_the_code_knows() -> None:
    props = rule_schema()["properties"]
    assert tuple(props["family"]["enum"]) == FAMILIES
    assert tuple(props["kind"]["enum"]) == RULE_KINDS
    assert tuple(props["phase"]["enum"]) == RULE_PHASES
    assert tuple(props["severity"]["enum"]) == SEVERITIES
    assert tuple(props["category"]["enum"]) == RULE_CATEGORIES


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.stem)
def test_every_builtin_rule_follows_the_schema(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = [e.message for e in jsonschema.Draft202012Validator(rule_schema()).iter_errors(data)]
    assert errors == []


def test_loading_the_builtin_rules_does_not_import_jsonschema() -> None:
    code = "import sys; from triage.rules import load_rules; load_rules(); print('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- the field registry -------------------------------------------------------------------------

def test_every_field_has_a_known_type_and_a_one_line_meaning() -> None:
    for name, f in FIELDS.items():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", name), name
        assert f.type in TYPES, name
        assert f.meaning.strip() and "\n" not in f.meaning and "|" not in f.meaning, name


def test_the_doc_lists_every_registered_field() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = re.search(r"<!-- fields:begin[^>]*-->\n(.*?)<!-- fields:end -->", text, re.S)
    assert section, "docs/rules.md lost its generated fields table"
    assert section[1] == markdown_table(), (
        "docs/rules.md is out of date: paste the output of `python -m triage.fields` between the "
        "fields:begin and fields:end markers")


# Reads of event fields by name in the code: `fields.get("x")`, `fields["x"]`, `"x" in fields`,
# and `{"a", "b"} <= ….fields.keys()`.
_READS = (
    re.compile(r"fields\.get\(\s*\"(\w+)\""),
    re.compile(r"fields\[\s*\"(\w+)\"\s*\]"),
    re.compile(r"\"(\w+)\"\s+(?:not\s+)?in\s+[\w.]*fields\b"),
)
_KEY_SETS = re.compile(r"\{([^{}]*)\}\s*<=\s*[\w.]*fields\.keys\(\)")


def test_every_field_the_code_reads_is_registered() -> None:
    read: dict[str, str] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name in ("rules.py", "fields.py"):
            continue
        source = path.read_text(encoding="utf-8")
        for pattern in _READS:
            read.update((m, path.name) for m in pattern.findall(source))
        for group in _KEY_SETS.findall(source):
            read.update((m, path.name) for m in re.findall(r"\"(\w+)\"", group))
    assert read, "the scan of the sources found no field reads: update _READS"
    unknown = {name: where for name, where in read.items() if name not in FIELDS}
    assert unknown == {}, "register these in triage/fields.py"


def _valid_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value.strip("[]").split("%")[0])
    except ValueError:
        return False
    return True


_CONFORMS = {
    "int": lambda v: v.isdigit(),
    "signed-int": lambda v: re.fullmatch(r"-?\d+", v) is not None,
    "str": lambda v: bool(v),
    "rank-list": lambda v: bool(parse_ranks(v)),
    "ip": _valid_ip,
    "host": lambda v: re.fullmatch(r"[^\s/]+", v) is not None,
    "signal": lambda v: signal_name(v) is not None,
    "phase": lambda v: v in ("comm_init", "operator_load", "execution", "teardown"),
    "timestamp": lambda v: parse_time(v) is not None,
}


def test_every_type_has_a_conformance_check() -> None:
    assert set(_CONFORMS) == set(TYPES)


def _match_cases() -> list[Any]:
    return [pytest.param(rule, example, id=f"{rule.id}::match{i}")
            for rule in RULES for i, example in enumerate(rule.examples["match"])]


MATCHER = Matcher(RULES)


@pytest.mark.parametrize(("rule", "example"), _match_cases())
def test_registered_fields_captured_by_the_examples_have_their_type(rule: Any, example: Any) -> None:
    fields = fields_on(MATCHER, rule, example)  # through the scanner, as `triage rules test` runs it
    assert fields is not None
    wrong = {name: value for name, value in fields.items()
             if name in FIELDS and not _CONFORMS[FIELDS[name].type](value)}
    assert wrong == {}, "values that do not read as their registered type"


# --- what a user rule file may not do -----------------------------------------------------------

class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _rule(**changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(BASE))
    data["id"] = "my-rule"
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def _write(folder: Path, data: Any, name: str = "my-rule.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.dump(data, Dumper=_NoAliases, sort_keys=False, allow_unicode=True))
    return path


def _refusal(folder: Path) -> str:
    with pytest.raises(RuleError) as caught:
        load_rules([folder])
    return str(caught.value)


def test_a_valid_user_rule_loads(tmp_path: Path) -> None:
    _write(tmp_path, _rule())
    assert "my-rule" in {r.id for r in load_rules([tmp_path])}


@pytest.mark.parametrize(("document", "fragment"), [
    ("- a\n- list\n", "one mapping"),
    ("just a string\n", "one mapping"),
    ("", "one mapping"),
    ("a: 1\n---\nb: 2\n", "single document"),
    ("a: [unclosed\n", "cannot read rule"),
    ("a: !!python/object:os.system {}\n", "cannot read rule"),
    ("[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
])
def test_a_file_that_is_no_rule_mapping_is_refused(tmp_path: Path, document: str, fragment: str) -> None:
    (tmp_path / "my-rule.yaml").write_text(document)
    message = _refusal(tmp_path)
    assert "my-rule.yaml" in message
    assert fragment in message


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"references": 5}, "references: 5 is not of type 'array'"),
    ({"references": ["ok", 7]}, "references.1: 7 is not of type 'string'"),
    ({"title": None}, "missing key 'title'"),
    ({"colour": "red"}, "unknown key 'colour'"),
    ({"kind": "unexplained"}, "kind 'unexplained' is not one of"),
    ({"category": "unknown"}, "category 'unknown' is not one of"),
    ({"prefilter": []}, "prefilter"),
    ({"prefilter": [" "]}, "prefilter.0 must not be blank"),
    ({"explain": {"meaning": "m"}}, "explain: missing key 'next_steps'"),
    ({"examples": {"match": [], "nomatch": ["x"]}}, "examples.match"),
    ({"examples": {"match": [{"line": "x", "feilds": {}}], "nomatch": ["x"]}}, "unknown key 'feilds'"),
    ({"block": {"lines": 0, "fields": ["x"]}}, "block.lines"),
    ({"info_fields": "error"}, "info_fields"),
    ({"id": "My_Rule"}, "kebab-case"),
])
def test_a_rule_that_breaks_the_schema_is_refused_with_a_clear_message(
        tmp_path: Path, changes: dict[str, Any], fragment: str) -> None:
    _write(tmp_path, _rule(**changes))
    message = _refusal(tmp_path)
    assert "my-rule.yaml" in message
    assert fragment in message


@pytest.mark.parametrize(("message", "fragment"), [
    ("rank {rank[abc]}", "not a plain {name}"),
    ("rank {rank.real}", "not a plain {name}"),
    ("rank {rank:>300000000}", "format spec"),
    ("rank {rank!r}", "conversion"),
    ("rank {}", "not a plain {name}"),
    ("rank {0}", "not a plain {name}"),
    ("rank {nope}", "not captured"),
    ("rank {rank", "not a valid template"),
    ("rank }", "not a valid template"),
])
def test_a_message_template_must_use_plain_captured_fields(tmp_path: Path, message: str, fragment: str) -> None:
    assert any(fragment in p for p in template_problems(message, {"rank"}))
    _write(tmp_path, _rule(message=message))
    text = _refusal(tmp_path)
    assert "my-rule.yaml" in text
    assert fragment in text


def test_literal_braces_in_a_message_are_fine() -> None:
    assert template_problems("{{literal}} {rank}", {"rank"}) == []


def test_a_group_neither_registered_nor_informational_is_refused(tmp_path: Path) -> None:
    regex = BASE["regex"] + "(?P<seqq> before)?"
    _write(tmp_path, _rule(regex=regex, message="seq {seqq}"))
    message = _refusal(tmp_path)
    assert "my-rule.yaml" in message and "named group 'seqq'" in message
    _write(tmp_path, _rule(regex=regex, message="seq {seqq}", info_fields=[*BASE["info_fields"], "seqq"]))
    assert "my-rule" in {r.id for r in load_rules([tmp_path])}


def test_a_block_field_group_is_checked_too(tmp_path: Path) -> None:
    _write(tmp_path, _rule(block={"lines": 2, "fields": [r"^\s*hots\s*: (?P<hots>\S+)"]}))
    assert "named group 'hots'" in _refusal(tmp_path)


@pytest.mark.parametrize(("info", "fragment"), [
    (["seq"], "a field triage reads"),
    (["not_a_group"], "which no regex of the rule captures"),
])
def test_info_fields_must_be_informational_groups(tmp_path: Path, info: list[str], fragment: str) -> None:
    _write(tmp_path, _rule(info_fields=[*BASE["info_fields"], *info]))
    assert fragment in _refusal(tmp_path)


def test_a_file_named_unlike_its_id_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, _rule(), name="other-name.yaml")
    assert "does not match id 'my-rule'" in _refusal(tmp_path)


def test_an_example_expecting_an_uncaptured_field_is_refused(tmp_path: Path) -> None:
    data = _rule()
    data["examples"]["match"][0]["fields"]["sequence"] = "1"
    _write(tmp_path, data)
    assert "expects field 'sequence'" in _refusal(tmp_path)


def test_yaml_anchors_and_aliases_are_refused(tmp_path: Path) -> None:
    laughs = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        laughs += f"{level}: &{level} [" + ", ".join([f"*{previous}"] * 9) + "]\n"
    (tmp_path / "my-rule.yaml").write_text(laughs)
    message = _refusal(tmp_path)
    assert "my-rule.yaml" in message and "anchors and aliases are not allowed" in message
    # An anchor alone is refused as well: a rule file has no use for one.
    text = yaml.dump(_rule(), Dumper=_NoAliases, sort_keys=False).replace("title: ", "title: &t ", 1)
    (tmp_path / "my-rule.yaml").write_text(text)
    assert "anchors and aliases are not allowed" in _refusal(tmp_path)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "my-rule.yaml")
    message = _refusal(tmp_path)
    assert "my-rule.yaml" in message and "not a regular file" in message


def test_a_symlink_to_a_device_is_refused(tmp_path: Path) -> None:
    (tmp_path / "my-rule.yaml").symlink_to("/dev/zero")
    message = _refusal(tmp_path)
    assert "my-rule.yaml" in message and "not a regular file" in message


def test_a_folder_named_like_a_rule_is_refused(tmp_path: Path) -> None:
    (tmp_path / "my-rule.yaml").mkdir()
    assert "not a regular file" in _refusal(tmp_path)


def test_a_dangling_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "my-rule.yaml").symlink_to(tmp_path / "nowhere.yaml")
    message = _refusal(tmp_path)
    assert "my-rule.yaml" in message and "cannot read rule" in message


def test_a_symlink_to_a_regular_rule_file_is_followed(tmp_path: Path) -> None:
    target = _write(tmp_path / "elsewhere", _rule())
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "my-rule.yaml").symlink_to(target)
    assert "my-rule" in {r.id for r in load_rules([tmp_path / "rules"])}


def test_a_huge_file_is_refused_unread(tmp_path: Path) -> None:
    data = _rule()
    data["explain"]["causes"] = "x" * MAX_RULE_BYTES
    _write(tmp_path, data)
    message = _refusal(tmp_path)
    assert "my-rule.yaml" in message and "KiB" in message


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    (tmp_path / "my-rule.yaml").write_bytes(b"id: my-rule\ntitle: \xff\xfe\n")
    assert "not UTF-8" in _refusal(tmp_path)
