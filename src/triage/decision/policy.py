"""The policy table: which action each kind of verdict gets. Data, not code (policy.yaml beside this
module); `--policy FILE` replaces it with a user's own table, checked here with one clear message for
each thing wrong.

A table is a list of rows tried in order; the first whose `when` holds decides. The conditions a row
may state are the keys of CONDITIONS; the reason's placeholders are PLACEHOLDERS.
"""

from __future__ import annotations

import fnmatch
import functools
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from triage.fields import signal_name
from triage.lazy_regex import compile_regex, lazy_compile
from triage.model import Category, Status
from triage.rules import (
    MATCH_TIMEOUT_S,
    RuleError,
    pattern_too_large,
    read_builtin_document,
    read_rule_document,
)

ACTIONS = ("none", "requeue", "requeue-excluding", "stop", "investigate")
CULPRIT_KINDS = ("rank", "host", "link")
# condition -> the values it takes (None: its own check below)
CONDITIONS: dict[str, tuple[str, ...] | None] = {
    "status": tuple(s.value for s in Status),
    "confident": None,  # true | false
    "category": tuple(c.value for c in Category),
    "culprit_kind": CULPRIT_KINDS,
    "signal": None,  # signal names (SIGKILL), numbers, or OOM
    "evidence_rule": None,  # rule ids or shell-style patterns
    "evidence_category": tuple(c.value for c in Category),
    "evidence_text": None,  # one regular expression
}
PLACEHOLDERS = ("culprits", "hosts", "category", "phase", "confidence", "signal", "env")
_ROW_KEYS = ("id", "when", "action", "reason", "flight_recorder")
_TOP_KEYS = ("version", "confident", "flight_recorder_env", "exit_codes", "rules")
_ENV_NAME = lazy_compile(r"[A-Za-z_][A-Za-z0-9_]*")
_POLICY_FILE = Path(__file__).resolve().parent / "policy.yaml"


class PolicyError(Exception):
    """A policy file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Row:
    id: str
    action: str
    reason: str
    when: dict[str, Any] = field(default_factory=dict)  # condition -> its values (lists), as checked
    text: regex.Pattern[str] | None = None  # `evidence_text`, compiled
    flight_recorder: bool = False  # the next run gets the policy's flight_recorder_env

    def rule_matches(self, rule_ids: set[str]) -> bool:
        return any(fnmatch.fnmatchcase(r, p) for r in rule_ids for p in self.when["evidence_rule"])

    def text_matches(self, lines: list[str]) -> bool:
        assert self.text is not None  # noqa: S101 - set with `evidence_text`
        return any(_search(self.text, line) for line in lines)


def _search(pattern: regex.Pattern[str], line: str) -> bool:
    try:
        return pattern.search(line, timeout=MATCH_TIMEOUT_S) is not None
    except TimeoutError:
        return False  # a pattern that backtracks without end does not match


@dataclass(frozen=True)
class Policy:
    rows: tuple[Row, ...]
    confident: float
    flight_recorder_env: dict[str, str]
    exit_codes: dict[str, int]
    source: str  # the file it came from


@functools.cache
def default_policy() -> Policy:
    """The table shipped with triage (policy.yaml; its document kept in the cache)."""
    try:
        return _checked(read_builtin_document(_POLICY_FILE, what="policy"), _POLICY_FILE)
    except (RuleError, PolicyError):
        return load_policy(_POLICY_FILE, strict=False)  # a cache entry gone bad: the file decides


def load_policy(path: Path, *, strict: bool = True) -> Policy:
    """A policy file, read with the safe loader (`strict`: no anchors or aliases, as a user rule) and
    checked; PolicyError says what is wrong."""
    try:
        data = read_rule_document(path, strict=strict, what="policy")
    except RuleError as exc:
        raise PolicyError(str(exc)) from None
    return _checked(data, path)


def _checked(data: Any, path: Path) -> Policy:
    problems: list[str] = []
    policy = _policy(data, str(path), problems)
    if problems or policy is None:
        raise PolicyError(f"{path}: not a valid policy: " + "; ".join(problems))
    return policy


def _policy(data: Any, source: str, problems: list[str]) -> Policy | None:
    if not isinstance(data, dict):
        problems.append("a policy file holds one mapping (version, rules …), not "
                        f"{type(data).__name__ if data is not None else 'nothing'}")
        return None
    problems += [f"unknown key {k!r} (known: {', '.join(_TOP_KEYS)})" for k in data if k not in _TOP_KEYS]
    if data.get("version") != 1:
        problems.append(f"version must be 1, not {data.get('version')!r}")
    confident = data.get("confident", 0.5)
    if isinstance(confident, bool) or not isinstance(confident, (int, float)) or not 0 <= confident <= 1:
        problems.append(f"confident must be a number from 0 to 1, not {confident!r}")
        confident = 0.5
    env = data.get("flight_recorder_env") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and _ENV_NAME.fullmatch(k)
                                            and isinstance(v, (str, int)) for k, v in env.items()):
        problems.append("flight_recorder_env must map environment variable names to values")
        env = {}
    codes = _exit_codes(data.get("exit_codes"), problems)
    rows = data.get("rules")
    if not isinstance(rows, list) or not rows:
        problems.append("rules must be a list of rows (id, when, action, reason)")
        return None
    checked = [_row(i, row, problems) for i, row in enumerate(rows, 1)]
    ids = [r.id for r in checked if r is not None]
    problems += [f"row id {i!r} is used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    if checked and checked[-1] is not None and checked[-1].when:
        problems.append("the last row must have an empty `when: {}`, so that every verdict gets an action")
    if problems:
        return None
    return Policy(rows=tuple(r for r in checked if r is not None), confident=float(confident),
                  flight_recorder_env={k: str(v) for k, v in env.items()}, exit_codes=codes, source=source)


def _exit_codes(data: Any, problems: list[str]) -> dict[str, int]:
    codes = {"none": 0, "requeue": 75, "requeue-excluding": 76, "stop": 93, "investigate": 93}
    if data is None:
        return codes
    if not isinstance(data, dict):
        problems.append("exit_codes must map actions to exit codes")
        return codes
    for action, code in data.items():
        if action not in ACTIONS:
            problems.append(f"exit_codes: unknown action {action!r} (actions: {', '.join(ACTIONS)})")
        elif isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= 255:
            problems.append(f"exit_codes: {action} must be an exit code from 0 to 255, not {code!r}")
        elif code == 2 or (action != "none" and code == 0):
            problems.append(f"exit_codes: {action} cannot be {code} (2 means triage failed; 0 means nothing to do)")
        else:
            codes[action] = code
    return codes


def _row(n: int, data: Any, problems: list[str]) -> Row | None:
    where = f"row {n}"
    if not isinstance(data, dict):
        problems.append(f"{where}: a row is a mapping with id, when, action, reason")
        return None
    row_id = data.get("id")
    if isinstance(row_id, str) and row_id:
        where = f"row {n} ({row_id})"
    else:
        problems.append(f"{where}: id must be a non-empty string")
    before = len(problems)
    problems += [f"{where}: unknown key {k!r} (known: {', '.join(_ROW_KEYS)})" for k in data if k not in _ROW_KEYS]
    action = data.get("action")
    if action not in ACTIONS:
        problems.append(f"{where}: action must be one of {', '.join(ACTIONS)}, not {action!r}")
    reason = data.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        problems.append(f"{where}: reason must be a non-empty string")
    else:
        problems += [f"{where}: reason: {p}" for p in _template_problems(reason)]
    recorder = data.get("flight_recorder", False)
    if not isinstance(recorder, bool):
        problems.append(f"{where}: flight_recorder must be true or false, not {recorder!r}")
    elif recorder and action != "requeue":
        problems.append(f"{where}: flight_recorder is for a requeue (the next run's settings), not {action!r}")
    when = data.get("when")
    if not isinstance(when, dict):
        problems.append(f"{where}: when must be a mapping of conditions ({{}}: always)")
        return None
    checked: dict[str, Any] = {}
    text = None
    for key, value in when.items():
        if key not in CONDITIONS:
            problems.append(f"{where}: unknown condition {key!r} (known: {', '.join(CONDITIONS)})")
        elif key == "confident":
            if not isinstance(value, bool):
                problems.append(f"{where}: confident must be true or false, not {value!r}")
            checked[key] = value
        elif key == "evidence_text":
            text = _pattern(value, where, problems)
        else:
            checked[key] = _values(key, value, where, problems)
    if len(problems) > before or not isinstance(row_id, str) or not row_id:
        return None
    return Row(id=row_id, action=str(action), reason=" ".join(str(reason).split()), when=checked, text=text,
               flight_recorder=bool(recorder))


def _values(key: str, value: Any, where: str, problems: list[str]) -> list[str]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
        problems.append(f"{where}: {key} takes a value or a list of values, not {value!r}")
        return []
    allowed = CONDITIONS[key]
    if key == "signal":
        names = ["OOM" if str(v).upper() == "OOM" else signal_name(str(v)) for v in values]
        problems += [f"{where}: signal {v!r} is not a signal (SIGKILL, 9, OOM …)" for v, n in
                     zip(values, names, strict=True) if n is None]
        return [n for n in names if n]
    if allowed is not None:
        problems += [f"{where}: {key} {v!r} is not one of {', '.join(allowed)}" for v in values if v not in allowed]
    return [str(v) for v in values]


def _pattern(value: Any, where: str, problems: list[str]) -> regex.Pattern[str] | None:
    if not isinstance(value, str) or not value:
        problems.append(f"{where}: evidence_text must be one regular expression")
        return None
    if (why := pattern_too_large(value)) is not None:
        problems.append(f"{where}: evidence_text is refused, {why}")
        return None
    try:
        return compile_regex(value)
    except regex.error as exc:
        problems.append(f"{where}: evidence_text does not compile: {exc}")
        return None


def _template_problems(reason: str) -> list[str]:
    try:
        fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(reason)
                  if name is not None]
    except ValueError as exc:
        return [f"{exc} (write {{{{ and }}}} for a literal brace)"]
    return [f"{{{name}{'!' + conv if conv else ''}{':' + spec if spec else ''}}} is not a placeholder "
            f"(known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)})"
            for name, spec, conv in fields if name not in PLACEHOLDERS or spec or conv]
