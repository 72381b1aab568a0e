"""The principles' registry, the report schema's hypothesis names and docs/principles.md say the same."""

from __future__ import annotations

import json
import re
from pathlib import Path

from triage.diagnose.principles import PRINCIPLES, hypothesis_names, markdown_table

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "principles.md"
SCHEMA = ROOT / "src" / "triage" / "schemas" / "report-v1.schema.json"


def test_docs_principles_table_is_generated_from_the_registry() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = re.search(r"<!-- principles:begin[^>]*-->\n(.*?)<!-- principles:end -->", text, re.S)
    assert section, "docs/principles.md lost its generated table"
    assert section[1] == markdown_table(), (
        "docs/principles.md is out of date: paste the output of `python -m triage.diagnose.principles` "
        "between the principles:begin and principles:end markers")


def test_the_schema_the_registry_and_the_doc_name_the_same_hypotheses() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    enum = schema["$defs"]["hypothesis_name"]["enum"]
    assert sorted(enum) == sorted(hypothesis_names())
    assert len(enum) == len(set(enum))
    # Both places a report carries a name read the one list.
    verdict = schema["properties"]["verdict"]["properties"]
    assert {"$ref": "#/$defs/hypothesis_name"} in verdict["hypothesis"]["oneOf"]
    assert schema["$defs"]["hypothesis"]["properties"]["name"] == {"$ref": "#/$defs/hypothesis_name"}
    documented = set(re.findall(r"`([a-z-]+)`", DOC.read_text(encoding="utf-8").split("principles:begin")[1]))
    assert set(hypothesis_names()) <= documented


def test_each_principle_is_named_as_its_function_and_declares_what_it_emits() -> None:
    names = [p.name for p in PRINCIPLES]
    assert len(names) == len(set(names))
    for p in PRINCIPLES:
        assert p.name == p.run.__name__.replace("_", "-")
        assert p.emits and p.summary
        assert all(name.startswith(p.name.split("-")[0]) for name in p.emits), p.name
