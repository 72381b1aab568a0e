"""Load, validate and compile the signature rules (one YAML file per rule).

A rule recognises one kind of log line and turns it into an event. Built-in rules ship inside the
package; users add folders with `--rules DIR`.

Validation has two layers. The structure of a rule document (keys, types, enums) is described by
the JSON Schema `triage/schemas/rule-v1.schema.json`; what a schema cannot say (the file name is the
id, the regexes compile, every named group is a registered field or an `info_fields` entry, the
message uses plain `{name}` fields) is checked by `validate`. User rules get both at load time, and
are read with a loader that refuses YAML anchors and aliases. Built-in rules ship unchanged and are
checked against the schema by the test suite, so loading them skips the schema: `triage analyze`
does not pay for importing jsonschema (~70 ms) on every run.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import stat
import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from triage import __version__, cache
from triage.fields import FIELDS
from triage.lazy_regex import compile_regex, lazy_compile
from triage.model import Category, Kind, Phase
from triage.textcheck import lone_surrogate

FAMILIES = ("pytorch", "torchrun", "nccl", "gloo", "store", "python", "slurm", "hccl", "ras", "repro", "job", "stack")
SEVERITIES = ("info", "warning", "error", "fatal")
RULE_PHASES = ("comm_init", "operator_load", "execution", "teardown", "any")
# Kinds a rule may give its events (UNEXPLAINED is the scanner's own, for lines no rule knows).
RULE_KINDS = tuple(k.value for k in Kind if k is not Kind.UNEXPLAINED)
# Verdict categories a rule may name (UNKNOWN is what the diagnosis says when nothing does).
RULE_CATEGORIES = tuple(c.value for c in Category if c is not Category.UNKNOWN)
SCHEMA_NAME = "rule-v1.schema.json"
MAX_RULE_BYTES = 256 << 10  # a rule file is a few KiB; anything this large is a mistake or an attack
# A user-supplied regex gets this long per line before it is abandoned (catastrophic backtracking).
MATCH_TIMEOUT_S = 0.05
_FORMATTER = string.Formatter()
_PACKAGE = Path(__file__).resolve().parent


class RuleError(Exception):
    """A rule file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Block:
    """A multi-line record: after the first line matches, up to `lines` more may add fields."""

    lines: int
    field_sources: tuple[str, ...]
    cite: str | None = None  # the field whose line is the record's evidence (else its first line)

    @functools.cached_property
    def fields(self) -> tuple[regex.Pattern[str], ...]:
        return tuple(compile_regex(source) for source in self.field_sources)


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    family: str
    kind: Kind
    phase: str  # one of RULE_PHASES
    severity: str
    prefilter: tuple[str, ...]
    regex_source: str
    message: str
    explain: dict[str, Any]
    examples: dict[str, list[Any]]
    path: Path
    block: Block | None = None
    category: Category | None = None  # what a failure matched by this rule is, when it is this rank's
    references: tuple[str, ...] = field(default_factory=tuple)
    info_fields: tuple[str, ...] = field(default_factory=tuple)  # groups for the message only
    last_line_only: bool = False  # `scan: last-line`: only the last match of each chunk counts

    @functools.cached_property
    def pattern(self) -> regex.Pattern[str]:
        # Compiled when first needed: most rules never meet a line holding one of their literals,
        # and compiling all of them (the regex module's parser is Python) took ~0.1 s a run. Those
        # it does meet come from what earlier runs kept (lazy_regex.compile_regex).
        return compile_regex(self.regex_source)

    @functools.cached_property
    def _group_names(self) -> tuple[str, ...] | None:
        """The regex's group names in group order, where each group has a name of its own (a
        match's groups then read with `Match.groups()`, several times faster than `groupdict()`)."""
        index = self.pattern.groupindex
        return tuple(index) if list(index.values()) == list(range(1, self.pattern.groups + 1)) else None

    def captured(self, match: regex.Match[str]) -> dict[str, str]:
        """The named groups a match of the rule's regex set, in their order: `groupdict()` but for
        those that took no part."""
        names = self._group_names
        if names is None:
            return {k: v for k, v in match.groupdict().items() if v is not None}
        return {k: v for k, v in zip(names, match.groups(), strict=True) if v is not None}

    def search(self, text: str) -> regex.Match[str] | None:
        try:
            return self.pattern.search(text, timeout=MATCH_TIMEOUT_S)
        except TimeoutError:
            return None

    def render(self, fields: dict[str, str]) -> str:
        try:
            # A detail the line did not give is left out, not shown as `(?)` or a trailing `: ?`.
            text = self.message.format_map(_Blank(fields)).replace(" (?)", "")
            return text[:-3] if text.endswith(": ?") else text
        except (ValueError, IndexError):
            return self.message


class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


def builtin_rules_dir() -> Path:
    """The rules shipped with triage: inside the wheel, or at the repository root when editable."""
    # The package's own folder (importlib.resources would say the same, for 20 ms of imports).
    packaged = _PACKAGE / "rules"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "rules"


def load_rules(extra_dirs: Iterable[Path] = ()) -> list[Rule]:
    """Every built-in rule plus those in `extra_dirs`; raises RuleError on the first bad file."""
    rules: list[Rule] = []
    seen: dict[str, Path] = {}
    folders = [(builtin_rules_dir(), True), *((Path(d), False) for d in extra_dirs)]
    for directory, builtin in folders:
        if not directory.is_dir():
            raise RuleError(f"{directory}: not a folder of rules")
        loaded = _builtin_rules(directory) if builtin else (
            load_rule(path) for path in sorted(directory.rglob("*.yaml")))
        for rule in loaded:
            path = rule.path
            if rule.id in seen:
                raise RuleError(f"{path}: rule id {rule.id!r} is already defined in {seen[rule.id]}")
            seen[rule.id] = path
            rules.append(rule)
    return rules


def _builtin_rules(directory: Path) -> list[Rule]:
    """The built-in rules; their parsed documents come from the cache while no file changed.

    Parsing 200-odd YAML files took ~45 ms a run, reading their JSON back ~3 ms. The entry is
    keyed by every file's name, size and modification time, and triage's version.
    """
    paths = sorted(directory.rglob("*.yaml"))
    stamps = []
    for path in paths:
        st = path.stat()
        stamps.append((str(path.relative_to(directory)), st.st_size, st.st_mtime_ns))
    name = f"rules-{cache.key(__version__, stamps)}.json"
    if (kept := cache.read(name)) is not None:
        try:
            documents = json.loads(kept)
            if isinstance(documents, list) and len(documents) == len(paths):
                return [rule_of(data, path, builtin=True) for path, data in zip(paths, documents, strict=True)]
        except (ValueError, RuleError):
            pass  # damaged, or not what this version writes: parse the files
    documents = [read_rule_document(path, strict=False) for path in paths]
    rules = [rule_of(data, path, builtin=True) for path, data in zip(paths, documents, strict=True)]
    with contextlib.suppress(TypeError, ValueError):
        text = json.dumps(documents, ensure_ascii=False)
        if json.loads(text) == documents:  # only what JSON gives back as it was (no dates, int keys)
            cache.write(name, text.encode("utf-8"))
    return rules


def load_rule(path: Path, *, builtin: bool = False) -> Rule:
    """One rule file, validated; `builtin` skips the validation (the tests hold built-in rules to
    all of it), so its regexes are compiled when first used."""
    return rule_of(read_rule_document(path, strict=not builtin), path, builtin=builtin)


def rule_of(data: Any, path: Path, *, builtin: bool = False) -> Rule:
    """The rule of a rule file's document (see load_rule)."""
    try:
        problems = [] if builtin else validate(data, path)
        if problems:
            raise RuleError(f"{path}: " + "; ".join(problems))
        return compile_rule(data, path, eager=not builtin)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # only without the schema
        raise RuleError(f"{path}: malformed rule ({exc!r}); check it against {SCHEMA_NAME}") from None


def read_builtin_document(path: Path, what: str) -> Any:
    """The document of a YAML file shipped with triage (never a user's), from the cache while the
    file is unchanged (keyed as the built-in rules are): reading it needs no YAML parser."""
    try:
        st = path.stat()
    except OSError:
        return read_rule_document(path, strict=False, what=what)
    name = f"document-{cache.key(__version__, str(path), st.st_size, st.st_mtime_ns)}.json"
    if (kept := cache.read(name)) is not None:
        with contextlib.suppress(ValueError):
            return json.loads(kept)
    data = read_rule_document(path, strict=False, what=what)
    with contextlib.suppress(TypeError, ValueError):
        text = json.dumps(data, ensure_ascii=False)
        if json.loads(text) == data:  # only what JSON gives back as it was
            cache.write(name, text.encode("utf-8"))
    return data


def read_rule_document(path: Path, *, strict: bool = True, what: str = "rule") -> Any:
    """The YAML document of a rule file (`what` else: a policy file): a regular file of at most
    MAX_RULE_BYTES.

    `strict` (user rules) reads with the pure-Python safe loader and refuses anchors and aliases
    (an alias bomb) and deep nesting; built-in rules are read with libyaml.
    """
    try:
        # Opened without blocking (a FIFO would wait for a writer), then checked on the open file
        # itself: symlinks are followed, and only a regular file is read.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise RuleError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RuleError(f"{path}: not a regular file (a {what} is a .yaml file, not a FIFO, "
                            "device or folder)")
        raw = b""
        while len(raw) <= MAX_RULE_BYTES and (chunk := os.read(fd, MAX_RULE_BYTES + 1 - len(raw))):
            raw += chunk
    except OSError as exc:
        raise RuleError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_RULE_BYTES:
        raise RuleError(f"{path}: a {what} file must be under {MAX_RULE_BYTES >> 10} KiB")
    yaml, safe_loader, strict_loader = _yaml()
    try:
        text = raw.decode("utf-8")
        data = yaml.load(text, Loader=strict_loader if strict else safe_loader)
        if strict and lone_surrogate(data):
            raise RuleError(f"{path}: cannot read {what}: a \\ud800-\\udfff escape makes a lone surrogate, "
                            "not Unicode text")
        return data
    except UnicodeDecodeError as exc:
        raise RuleError(f"{path}: cannot read {what}: not UTF-8 ({exc.reason})") from None
    except yaml.YAMLError as exc:  # its text spans lines (a caret under the spot): one line here
        raise RuleError(f"{path}: cannot read {what}: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise RuleError(f"{path}: cannot read {what}: nested too deeply") from None


@functools.cache
def _yaml() -> tuple[Any, Any, Any]:
    """PyYAML, its safe loader (C-accelerated where libyaml is present: the same safety, ten times
    the speed) and the strict one; imported when a YAML file is read, which a run whose rules come
    from the cache does not do."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        """The safe loader, refusing anchors and aliases: a rule file has no use for them."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()  # type: ignore[no-untyped-call]
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise yaml.composer.ComposerError(
                    None, None, "YAML anchors and aliases are not allowed in a rule file", event.start_mark)
            return super().compose_node(parent, index)

    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader), StrictLoader


def validate(data: Any, path: Path, *, schema: bool = True) -> list[str]:
    """What is wrong with a rule document (empty when it is valid).

    With `schema`, the document is first checked against rule-v1.schema.json (structure, types,
    enums); the checks below assume a structurally valid document.
    """
    if not isinstance(data, dict):
        return ["a rule file must hold one mapping (key: value lines), not "
                f"{type(data).__name__ if data is not None else 'nothing'}"]
    if schema:
        problems = schema_problems(data)
        if problems:
            return problems
    problems = []
    if path.stem != data["id"]:
        problems.append(f"file name {path.name!r} does not match id {data['id']!r}")
    sources = [("regex", data["regex"])]
    sources += [("block field", p) for p in (data.get("block") or {}).get("fields", ())]
    compiled = [(where, _compile(source)) for where, source in sources]
    broken = [f"{where} {c}" for where, c in compiled if isinstance(c, str)]
    if broken:
        return problems + broken
    groups = [name for _, c in compiled if not isinstance(c, str) for name in c.groupindex]
    info = data.get("info_fields") or []
    for name in dict.fromkeys(groups):
        if name not in FIELDS and name not in info:
            problems.append(
                f"named group {name!r} is not a field triage reads (triage/fields.py); if it is only "
                "for the message, list it in info_fields, otherwise fix its name")
    for name in info:
        if name in FIELDS:
            problems.append(f"info_fields lists {name!r}, a field triage reads: remove it from info_fields")
        elif name not in groups:
            problems.append(f"info_fields lists {name!r}, which no regex of the rule captures")
    problems += template_problems(data["message"], set(groups))
    for example in data["examples"]["match"]:
        if isinstance(example, dict):
            problems += [f"match example expects field {key!r}, which no regex of the rule captures"
                         for key in example.get("fields") or {} if key not in groups]
    return problems


def _compile(source: str) -> regex.Pattern[str] | str:
    """The compiled pattern, or why it is not compiled (too large, or not a valid regex)."""
    if isinstance(source, str) and (why := pattern_too_large(source)) is not None:
        return f"is refused, {why}"
    try:
        return regex.compile(source)
    except (regex.error, TypeError) as exc:
        return f"does not compile: {exc}"


# What a rule's regex may cost to compile. The regex engine expands a counted repeat into copies
# of what it repeats: `(a{1000000})` takes gigabytes while compiling. A rule's pattern is bounded
# before it is compiled (built-in rules: under 1,000 characters, counts up to 400).
MAX_PATTERN_CHARS = 16 << 10
MAX_REPEAT = 10_000  # one counted repeat's bound
MAX_EXPANDED = 100_000  # atoms once every counted repeat is expanded (nested ones multiply)
_COUNTED = lazy_compile(r"\{(\d*)(?:,(\d*))?\}")


def pattern_too_large(source: str) -> str | None:
    """Why a pattern is too large to compile safely, in words; None when it is not.

    The expanded size is over-estimated in one pass: every atom (a character, an escape, a class)
    counts 1, a group the sum of its parts, a counted repeat multiplies what it follows by its
    largest count (`{m}`, `{m,n}`, `{m,}`); alternatives add up."""
    if len(source) > MAX_PATTERN_CHARS:
        return f"{len(source)} characters long (at most {MAX_PATTERN_CHARS} are compiled)"
    stack: list[int] = [0]  # the size of each open group so far
    last = 0  # the size of the atom or group just read (what a repeat applies to)
    at = 0
    while at < len(source):
        char = source[at]
        if char == "\\":
            at, last = at + 2, 1
        elif char == "[":
            at, last = _class_end(source, at), 1
        elif char == "(":
            stack.append(0)
            at, last = at + 1, 0
            continue
        elif char == ")" and len(stack) > 1:
            last = stack.pop()
            at += 1
        elif char == "{" and (m := _COUNTED.match(source, at)) and (m[1] or m[2]):
            count = max(int(m[1] or 0), int(m[2] or 0)) if max(len(m[1]), len(m[2] or "")) <= 9 else MAX_REPEAT + 1
            if count > MAX_REPEAT:
                return f"a counted repeat {m[0]} is above {MAX_REPEAT:,} (compiling it could take gigabytes)"
            stack[-1] += last * (count - 1)  # `last` is already counted once
            last *= count
            at = m.end()
            if stack[-1] > MAX_EXPANDED:
                break
            continue
        else:
            at, last = at + 1, 1
        stack[-1] += last
        if stack[-1] > MAX_EXPANDED:
            break
    if max(stack) > MAX_EXPANDED:
        return (f"its counted repeats expand it to more than {MAX_EXPANDED:,} elements "
                "(nested repeats multiply; compiling it could take gigabytes)")
    return None


def _class_end(source: str, at: int) -> int:
    """Where the character class opening at `at` ends (past its `]`)."""
    at += 1
    if source[at:at + 1] == "^":
        at += 1
    if source[at:at + 1] == "]":
        at += 1  # a `]` first in a class is a character
    while at < len(source) and source[at] != "]":
        at += 2 if source[at] == "\\" else 1
    return at + 1


def template_problems(message: str, groups: set[str]) -> list[str]:
    """A message is a str.format template of plain `{name}` fields, each a captured group."""
    try:
        parts = list(_FORMATTER.parse(message))
    except ValueError as exc:
        return [f"message is not a valid template ({exc}); write literal braces as {{{{ and }}}}"]
    problems = []
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        if conversion or spec:
            problems.append(f"message field {shown} has a conversion or format spec: write plain {{name}}")
        elif not name.isidentifier():
            problems.append(f"message field {shown} is not a plain {{name}} (no index, attribute or position)")
        elif name not in groups:
            problems.append(f"message field {shown} is not captured by the regex or a block field")
    return problems


def schema_problems(data: Any) -> list[str]:
    """The document checked against rule-v1.schema.json, one readable line per problem."""
    errors = sorted(_schema_validator().iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    problems: list[str] = []
    for error in errors:
        where = ".".join(str(p) for p in error.absolute_path)
        prefix = f"{where}: " if where else ""
        if error.validator == "required":
            problems += [f"{prefix}missing key {key!r}" for key in error.validator_value
                         if key not in error.instance]
        elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = error.schema.get("properties", {})
            problems += [f"{prefix}unknown key {key!r}" for key in error.instance if key not in known]
        elif error.validator == "enum":
            problems.append(f"{where} {error.instance!r} is not one of "
                            + ", ".join(map(str, error.validator_value)))
        elif error.validator == "pattern" and where == "id":
            problems.append(f"id {error.instance!r} is not kebab-case")
        elif error.validator in ("minLength", "pattern") and error.validator_value in (1, "\\S"):
            problems.append(f"{where} must not be blank")
        else:
            problems.append(prefix + error.message)
    return problems


@functools.cache
def rule_schema() -> dict[str, Any]:
    """The JSON Schema of a rule document, as shipped in the package."""
    text = (_PACKAGE / "schemas" / SCHEMA_NAME).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def _schema_validator() -> Any:
    import jsonschema  # type: ignore[import-untyped]  # imported here: only user rules pay for it

    return jsonschema.Draft202012Validator(rule_schema())


def example_problems(data: dict[str, Any]) -> list[str]:
    """What the examples of a (valid) rule miss: checked by the test suite for every built-in rule.

    Every match example must hold a prefilter literal (the scanner looks at no other line), and at
    least one nomatch example must hold one too: a near miss that reaches the regex and shows what it
    must not match, rather than a line the prefilter alone keeps away.
    """
    def line(example: Any) -> str:
        return str(example["line"] if isinstance(example, dict) else example)

    literals = data["prefilter"]
    problems = [f"match example lacks every prefilter literal: {line(e)[:80]!r}"
                for e in data["examples"]["match"] if not any(lit in line(e) for lit in literals)]
    if not any(any(lit in line(e) for lit in literals) for e in data["examples"]["nomatch"]):
        problems.append("no nomatch example holds a prefilter literal: add a near miss that reaches "
                        "the regex (the INFO variant of the line, the literal in another message)")
    return problems


def compile_rule(data: dict[str, Any], path: Path, *, eager: bool = True) -> Rule:
    """The rule of a valid document; `eager` compiles its regexes now, raising RuleError if one
    does not compile (otherwise they are compiled when first used)."""
    block = Block(lines=int(data["block"]["lines"]), field_sources=tuple(data["block"].get("fields", ())),
                  cite=data["block"].get("cite")) if data.get("block") else None
    rule = Rule(
        id=data["id"],
        title=data["title"],
        family=data["family"],
        kind=Kind(data["kind"]),
        phase=data["phase"],
        severity=data["severity"],
        prefilter=tuple(data["prefilter"]),
        regex_source=data["regex"],
        message=data["message"],
        explain=data["explain"],
        examples=data["examples"],
        path=path,
        block=block,
        category=Category(data["category"]) if data.get("category") else None,
        references=tuple(data.get("references") or ()),
        info_fields=tuple(data.get("info_fields") or ()),
        last_line_only=data.get("scan") == "last-line",
    )
    if eager:
        try:
            _ = rule.pattern, rule.block.fields if rule.block else ()
        except (regex.error, TypeError) as exc:
            raise RuleError(f"{path}: regex does not compile: {exc}") from None
    return rule


def event_phase(rule: Rule, captured: str | None = None) -> Phase:
    """The rule's phase; a rule of phase `any` may capture the phase from the line itself."""
    if rule.phase != "any":
        return Phase(rule.phase)
    if captured in ("comm_init", "operator_load", "execution", "teardown"):
        return Phase(captured)
    return Phase.UNKNOWN
