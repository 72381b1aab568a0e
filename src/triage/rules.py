"""Load, validate and compile the signature rules (one YAML file per rule).

A rule recognises one kind of log line and turns it into an event. Built-in rules ship inside the
package; users add folders with `--rules DIR`, validated exactly like the built-in ones.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex
import yaml

from triage.model import Category, Kind, Phase

FAMILIES = ("pytorch", "torchrun", "nccl", "gloo", "store", "python", "slurm", "hccl", "ras", "repro")
SEVERITIES = ("info", "warning", "error", "fatal")
RULE_PHASES = ("comm_init", "operator_load", "execution", "teardown", "any")
ID_PATTERN = regex.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
REQUIRED = ("id", "title", "family", "kind", "phase", "severity", "prefilter", "regex", "message",
            "explain", "examples")
OPTIONAL = ("block", "references", "status", "category")
# The C-accelerated safe loader where libyaml is present: the same safety, ten times the speed.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# A user-supplied regex gets this long per line before it is abandoned (catastrophic backtracking).
MATCH_TIMEOUT_S = 0.05


class RuleError(Exception):
    """A rule file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Block:
    """A multi-line record: after the first line matches, up to `lines` more may add fields."""

    lines: int
    fields: tuple[regex.Pattern[str], ...]


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    family: str
    kind: Kind
    phase: str  # one of RULE_PHASES
    severity: str
    prefilter: tuple[str, ...]
    pattern: regex.Pattern[str]
    message: str
    explain: dict[str, Any]
    examples: dict[str, list[Any]]
    path: Path
    block: Block | None = None
    category: Category | None = None  # what a failure matched by this rule is, when it is this rank's
    references: tuple[str, ...] = field(default_factory=tuple)

    def search(self, text: str) -> regex.Match[str] | None:
        try:
            return self.pattern.search(text, timeout=MATCH_TIMEOUT_S)
        except TimeoutError:
            return None

    def render(self, fields: dict[str, str]) -> str:
        try:
            return self.message.format_map(_Blank(fields))
        except (ValueError, IndexError):
            return self.message


class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


def builtin_rules_dir() -> Path:
    """The rules shipped with triage: inside the wheel, or at the repository root when editable."""
    packaged = Path(str(importlib.resources.files("triage"))) / "rules"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "rules"


def load_rules(extra_dirs: Iterable[Path] = ()) -> list[Rule]:
    """Every built-in rule plus those in `extra_dirs`; raises RuleError on the first bad file."""
    rules: list[Rule] = []
    seen: dict[str, Path] = {}
    for directory in [builtin_rules_dir(), *extra_dirs]:
        if not directory.is_dir():
            raise RuleError(f"{directory}: not a folder of rules")
        for path in sorted(directory.rglob("*.yaml")):
            rule = load_rule(path)
            if rule.id in seen:
                raise RuleError(f"{path}: rule id {rule.id!r} is already defined in {seen[rule.id]}")
            seen[rule.id] = path
            rules.append(rule)
    return rules


def load_rule(path: Path) -> Rule:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)  # noqa: S506
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise RuleError(f"{path}: cannot read rule: {exc}") from None
    problems = validate(data, path)
    if problems:
        raise RuleError(f"{path}: " + "; ".join(problems))
    return compile_rule(data, path)


def validate(data: Any, path: Path) -> list[str]:
    """What is wrong with a rule document (empty when it is valid)."""
    if not isinstance(data, dict):
        return ["a rule file must hold one mapping"]
    problems = [f"missing key {key!r}" for key in REQUIRED if key not in data]
    problems += [f"unknown key {key!r}" for key in data if key not in REQUIRED + OPTIONAL]
    if problems:
        return problems
    rule_id = data["id"]
    if not isinstance(rule_id, str) or not ID_PATTERN.match(rule_id):
        problems.append(f"id {rule_id!r} is not kebab-case")
    elif path.stem != rule_id:
        problems.append(f"file name {path.name!r} does not match id {rule_id!r}")
    for key, allowed in (("family", FAMILIES), ("phase", RULE_PHASES), ("severity", SEVERITIES),
                         ("kind", tuple(k.value for k in Kind))):
        if data[key] not in allowed:
            problems.append(f"{key} {data[key]!r} is not one of {', '.join(allowed)}")
    if "category" in data and data["category"] not in [c.value for c in Category]:
        problems.append(f"category {data['category']!r} is not one of the verdict categories")
    for key in ("title", "message", "regex"):
        if not isinstance(data[key], str) or not data[key].strip():
            problems.append(f"{key} must be a non-empty string")
    prefilter = data["prefilter"]
    if not (isinstance(prefilter, list) and prefilter
            and all(isinstance(p, str) and p for p in prefilter)):
        problems.append("prefilter must be a non-empty list of literal strings")
    explain = data["explain"]
    if not isinstance(explain, dict) or not {"meaning", "next_steps"} <= set(explain):
        problems.append("explain must give at least 'meaning' and 'next_steps'")
    examples = data["examples"]
    if not (isinstance(examples, dict) and examples.get("match") and examples.get("nomatch")):
        problems.append("examples must list at least one 'match' and one 'nomatch' line")
    block = data.get("block")
    if block is not None and not (
        isinstance(block, dict) and isinstance(block.get("lines"), int)
        and isinstance(block.get("fields"), list) and block["fields"]
    ):
        problems.append("block must give 'lines' (a number) and 'fields' (a list of regexes)")
    return problems


def compile_rule(data: dict[str, Any], path: Path) -> Rule:
    try:
        pattern = regex.compile(data["regex"])
        fields = tuple(regex.compile(p) for p in (data.get("block") or {}).get("fields", ()))
    except (regex.error, TypeError) as exc:
        raise RuleError(f"{path}: regex does not compile: {exc}") from None
    block = Block(lines=int(data["block"]["lines"]), fields=fields) if data.get("block") else None
    return Rule(
        id=data["id"],
        title=data["title"],
        family=data["family"],
        kind=Kind(data["kind"]),
        phase=data["phase"],
        severity=data["severity"],
        prefilter=tuple(data["prefilter"]),
        pattern=pattern,
        message=data["message"],
        explain=data["explain"],
        examples=data["examples"],
        path=path,
        block=block,
        category=Category(data["category"]) if data.get("category") else None,
        references=tuple(data.get("references") or ()),
    )


def event_phase(rule: Rule, captured: str | None = None) -> Phase:
    """The rule's phase; a rule of phase `any` may capture the phase from the line itself."""
    if rule.phase != "any":
        return Phase(rule.phase)
    if captured in ("comm_init", "operator_load", "execution", "teardown"):
        return Phase(captured)
    return Phase.UNKNOWN
