"""Extract files: what the scan found in one node's logs, written where the logs are, read back anywhere.

`triage extract` runs the map step on a node (discover, open, scan: the sources and their events)
and writes it here; `triage analyze` reads extracts of many nodes, mixed with raw logs or not,
and runs the reduce step (identity, job, diagnosis) over them all, with the same verdict as over
the raw logs. Only kilobytes travel. docs/extract.md describes the format for people.

JSON Lines, UTF-8, gzipped when the file name ends in `.gz`:

    {"triage_extract":1,"triage_version":…,"rules":…,"host":…,"created":…,"paths":[…],"name_prefix":…}
    {"source":{"name":…,"lines":…,"bytes":…,"events":…,…},"events":[{"rule":…,"kind":…,…},…]}
    … one line per source …
    {"triage_extract_end":{"sources":N,"events":M}}

Fields at their default value are left out. Enums are written by value, times as the float
seconds they are (JSON keeps a float's every bit). A header after an end line starts another
extract: concatenated extracts (`cat a.jsonl b.jsonl`, or their gzip members) read as both.

Reading is reading untrusted input: every value's type is checked, every string, list and line is
bounded, and nothing is ever unpickled or evaluated. What is wrong becomes a skipped source with
the reason (the extract itself when its header is bad; the source of a bad line; the extract when
it is cut short), and the rest is read.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from triage import __version__
from triage.lazy_regex import lazy_re
from triage.model import Category, Event, Evidence, Identity, Kind, Phase, SourceInfo
from triage.rules import Rule
from triage.textcheck import lone_surrogate

FORMAT = 1  # bumped when a reader must understand something new; readers ignore unknown keys
END = "triage_extract_end"
# The header's first bytes: what tells an extract from a log, at the head of any stream.
_MAGIC = lazy_re(rb'\A\s{0,16}\{\s{0,16}"triage_extract"\s{0,16}:')
MAX_LINE_BYTES = 256 << 20  # one source's line: its events; a noisy source's is a few MB
MAX_TEXT = 1 << 20  # any one string (a log line is cut at 16 KiB by the scan)
MAX_ITEMS = 1 << 22  # any one list or mapping (a source's events, a header's paths, fields)
NOTE_FROM = "from extract "  # the start of the note each source read from an extract carries

Scanned = tuple[SourceInfo, list[Event]]


class Malformed(ValueError):
    """What is wrong with an extract, or with one of its lines, in words."""


def looks_like(head: bytes) -> bool:
    """A stream whose first bytes are an extract's header (a cheap check, on every source)."""
    return head[:1] in (b"{", b" ", b"\t", b"\r", b"\n") and _MAGIC.match(head) is not None


def rules_digest(rules: Sequence[Rule]) -> str:
    """A short digest of what a rule set does (not where its files are): equal sets, equal events."""
    canon = sorted(
        (r.id, r.family, r.kind.value, r.phase, r.severity, list(r.prefilter), r.regex_source,
         r.message, r.category.value if r.category else None, list(r.info_fields), r.last_line_only,
         [r.block.lines, list(r.block.field_sources), r.block.cite] if r.block else None)
        for r in rules)
    import hashlib  # here: only extracts need it

    return hashlib.sha256(json.dumps(canon, ensure_ascii=True).encode()).hexdigest()[:16]


# --- writing ------------------------------------------------------------------------------------

def header(*, rules: str, host: str | None, created: str, paths: Sequence[str],
           name_prefix: str | None) -> dict[str, Any]:
    return {"triage_extract": FORMAT, "triage_version": __version__, "rules": rules, "host": host,
            "created": created, "paths": list(paths), "name_prefix": name_prefix}


def write(out: IO[bytes], head: dict[str, Any], scanned: Iterable[Scanned]) -> tuple[int, int]:
    """Write an extract: the header, one line per source, the end line. Returns (sources, events)."""
    out.write(_line(head))
    sources = events = 0
    for info, found in scanned:
        out.write(_line(source_to_json(info, found)))
        sources += 1
        events += len(found)
    out.write(_line({END: {"sources": sources, "events": events}}))
    return sources, events


def _line(doc: dict[str, Any]) -> bytes:
    try:
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate (a file name's undecodable byte): escaped instead
        return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def prefixed(scanned: Scanned, prefix: str) -> Scanned:
    """A source and its events under `prefix` + its name (`--host NAME`: `NAME/` + the path)."""
    info, found = scanned
    name = prefix + info.name.lstrip("/")

    def move(evidence: Evidence) -> Evidence:
        source = name if evidence.source == info.name else prefix + evidence.source.lstrip("/")
        return dataclasses.replace(evidence, source=source)

    moved = dataclasses.replace(info, last_line=move(info.last_line) if info.last_line else None,
                                name=name)
    return moved, [dataclasses.replace(e, evidence=move(e.evidence)) for e in found]


def identity_to_json(identity: Identity) -> dict[str, Any]:
    doc: dict[str, Any] = {k: v for k in ("rank", "local_rank", "host", "pid", "device")
                           if (v := getattr(identity, k)) is not None}
    if identity.learnt_from:
        doc["learnt_from"] = dict(identity.learnt_from)
    return doc


def event_to_json(event: Event, source: str) -> dict[str, Any]:
    """One event; its evidence's source is left out when it is the source's own name."""
    ev = event.evidence
    doc: dict[str, Any] = {"rule": event.rule_id, "kind": event.kind.value, "phase": event.phase.value,
                           "severity": event.severity, "message": event.message, "line": ev.line,
                           "text": ev.text}
    if ev.source != source:
        doc["evidence_source"] = ev.source
    if ev.rule_id != event.rule_id:
        doc["evidence_rule"] = ev.rule_id
    if identity := identity_to_json(event.identity):
        doc["identity"] = identity
    if event.fields:
        doc["fields"] = dict(event.fields)
    if event.time is not None and math.isfinite(event.time):
        doc["time"] = event.time
    if not event.time_has_year:
        doc["time_has_year"] = False
    if event.family:
        doc["family"] = event.family
    if event.category is not None:
        doc["category"] = event.category.value
    if event.count != 1:  # identical events of the source folded into this one
        doc["count"] = event.count
    if event.last_line is not None:
        doc["last_line"] = event.last_line
    if event.span and (last := event.last_time) is not None and math.isfinite(last):
        doc["last_time"] = last  # the last copy's, where it is not the first's
    return doc


def source_to_json(info: SourceInfo, events: Sequence[Event] = ()) -> dict[str, Any]:
    """A source's line: what was learnt about it, and its events."""
    doc: dict[str, Any] = {"name": info.name, "lines": info.lines, "bytes": info.bytes,
                           "events": info.events}
    if identity := identity_to_json(info.identity):
        doc["identity"] = identity
    if info.skipped is not None:
        doc["skipped"] = info.skipped
    if info.last_line is not None:
        last = info.last_line
        doc["last_line"] = {"line": last.line, "text": last.text}
        if last.source != info.name:
            doc["last_line"]["source"] = last.source
        if last.rule_id is not None:
            doc["last_line"]["rule"] = last.rule_id
    for key in ("notes", "conflicts"):
        if value := getattr(info, key):
            doc[key] = list(value)
    if info.head_ranks:
        doc["head_ranks"] = {str(rank): n for rank, n in info.head_ranks.items()}
    if info.head_hosts:
        doc["head_hosts"] = dict(info.head_hosts)
    if info.head_writers:
        doc["head_writers"] = info.head_writers
    return {"source": doc, "events": [event_to_json(e, info.name) for e in events]}


# --- reading ------------------------------------------------------------------------------------

def read(name: str, chunks: Iterable[bytes], rules: Callable[[], str],
         read_errors: tuple[type[BaseException], ...] = ()) -> list[Scanned]:
    """The sources an extract carries, each with a note saying where it came from.

    `name` is the extract's own display name; `rules` gives the digest of the rule set in use (a
    different one is noted on the sources: their events were found by other rules). Problems
    become skipped sources; `read_errors` raised while reading end the reading, as a note.
    """
    out: list[Scanned] = []
    reader = _Reader(name, rules)
    try:
        for line_no, raw, complete in _lines(chunks):
            if not complete:
                out.append(_skipped(name, f"truncated: its line {line_no} is cut short, after "
                                          f"{reader.read} source{_s(reader.read)} (copied while it "
                                          "was being written?)"))
                return out
            if reader.take(line_no, raw, out):
                return out
    except Malformed as exc:
        out.append(_skipped(name, str(exc)))
        return out
    except read_errors as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
        out.append(_skipped(name, f"read stopped after {reader.read} source{_s(reader.read)}: {reason}"))
        return out
    if reader.head is None and reader.sections == 0:
        out.append(_skipped(name, "not a triage extract: empty"))
    elif reader.head is not None:
        out.append(_skipped(name, f"truncated: no end line after {reader.read} source{_s(reader.read)} "
                                  "(copied while it was being written?)"))
    return out


class _Reader:
    """The state of reading one extract (or several, concatenated): header, sources, end."""

    def __init__(self, name: str, rules: Callable[[], str]) -> None:
        self.name = name
        self.rules = rules
        self.head: dict[str, Any] | None = None  # the current section's header, until its end
        self.notes: list[str] = []  # what each source of the current section is noted with
        self.sections = 0
        self.read = 0  # sources read in the current section
        self.events = 0

    def take(self, line_no: int, raw: bytes, out: list[Scanned]) -> bool:
        """Read one line into `out`; True when the rest of the extract cannot be read."""
        if not raw.strip():
            return False
        try:
            doc = _loads(raw)
        except Malformed as exc:
            if self.head is None:
                out.append(_skipped(self.name, f"not a valid triage extract: line {line_no} {exc}"))
                return True
            out.append(_skipped(f"{self.name}:{line_no}", f"extract line {line_no} {exc}"))
            return False
        if isinstance(doc, dict) and "triage_extract" in doc:
            if self.head is not None:
                out.append(_skipped(self.name, f"truncated: a new header at line {line_no} before "
                                               f"the end line, after {self.read} source{_s(self.read)}"))
            return self._header(line_no, doc, out)
        if self.head is None:
            what = "after its end line" if self.sections else "before any header"
            out.append(_skipped(self.name, f"not a valid triage extract: line {line_no} comes {what}"))
            return True
        if isinstance(doc, dict) and END in doc:
            self._end(line_no, doc, out)
            return False
        try:
            info, events = source_from_json(doc)
        except Malformed as exc:
            out.append(_skipped(_name_in(doc) or f"{self.name}:{line_no}",
                                f"in extract {self.name}, line {line_no}: {exc}"))
            return False
        info.notes.extend(self.notes)
        if self.head and self.head["name_prefix"] and self.head["host"] and info.identity.host is None:
            # `--host NAME` states the host: the identity stage takes it where the path names none.
            info.identity.host = self.head["host"]
            info.identity.learnt_from["host"] = "triage extract --host"
        out.append((info, events))
        self.read += 1
        self.events += len(events)
        return False

    def _header(self, line_no: int, doc: dict[str, Any], out: list[Scanned]) -> bool:
        try:
            head = header_from_json(doc)
        except Malformed as exc:
            out.append(_skipped(self.name, f"not a valid triage extract: its header (line {line_no}) {exc}"))
            return True
        host = head["host"]
        self.notes = [f"{NOTE_FROM}{self.name}" + (f" (host {host})" if host else "")]
        ours = self.rules()
        if head["rules"] != ours:
            self.notes.append(
                f"its events were found by another rule set (rules {head['rules']}, triage "
                f"{head['triage_version']}; here rules {ours}, triage {__version__}): what a rule "
                "added or changed since would find in it is not here; extract again to have it")
        self.head, self.read, self.events = head, 0, 0
        self.sections += 1
        return False

    def _end(self, line_no: int, doc: dict[str, Any], out: list[Scanned]) -> None:
        counts = doc[END]
        said = (counts.get("sources"), counts.get("events")) if isinstance(counts, dict) else None
        if said != (self.read, self.events):
            out.append(_skipped(self.name, f"its end line (line {line_no}) says {_counts(said)}, but "
                                           f"{self.read} source{_s(self.read)} with {self.events} "
                                           "events were read: some are missing"))
        self.head = None


def header_from_json(doc: Any) -> dict[str, Any]:
    """An extract's header, checked; Malformed says what is wrong (an unknown version included)."""
    doc = _obj(doc, "header")
    version = doc.get("triage_extract")
    if type(version) is not int:
        raise Malformed(f"has triage_extract {_kind(version)}, not a format version")
    if version != FORMAT:
        raise Malformed(f"says format version {version}; this triage ({__version__}) reads version "
                        f"{FORMAT}: analyse it with the triage that wrote it, or a newer one")
    paths = doc.get("paths", [])
    if not isinstance(paths, list) or len(paths) > MAX_ITEMS:
        raise Malformed(f"paths: a list expected, not {_kind(paths)}")
    return {
        "triage_extract": version,
        "triage_version": _str(doc, "triage_version", "header", optional=True) or "?",
        "rules": _str(doc, "rules", "header", optional=True) or "?",
        "host": _str(doc, "host", "header", optional=True),
        "created": _str(doc, "created", "header", optional=True),
        "paths": [_text(p, "header paths") for p in paths],
        "name_prefix": _str(doc, "name_prefix", "header", optional=True),
    }


def source_from_json(doc: Any) -> Scanned:
    """A source's line, checked and turned back into the values the scan gave."""
    doc = _obj(doc, "line")
    src = _obj(doc.get("source"), "source")
    name = _str(src, "name", "source")
    info = SourceInfo(name=name, identity=_identity(src.get("identity"), "source identity"),
                      lines=_int(src, "lines", "source", default=0),
                      bytes=_int(src, "bytes", "source", default=0),
                      events=_int(src, "events", "source", default=0),
                      skipped=_str(src, "skipped", "source", optional=True),
                      notes=_texts(src.get("notes"), "source notes"),
                      conflicts=_texts(src.get("conflicts"), "source conflicts"),
                      head_writers=_int(src, "head_writers", "source", default=0))
    if (last := src.get("last_line")) is not None:
        last = _obj(last, "source last_line")
        where = _str(last, "source", "last_line", optional=True)
        info.last_line = Evidence(name if where is None else where,
                                  _int(last, "line", "last_line"), _str(last, "text", "last_line"),
                                  rule_id=_str(last, "rule", "last_line", optional=True))
    ranks = _mapping(src.get("head_ranks"), "source head_ranks")
    for key, count in ranks.items():
        if not (key.isascii() and key.isdigit()) or len(key) > 18 or str(int(key)) != key:
            raise Malformed(f"source head_ranks: key {key[:40]!r} is not a rank")
        info.head_ranks[int(key)] = _count(count, f"source head_ranks[{key}]")
    info.head_hosts = {k: _count(v, f"source head_hosts[{k[:40]!r}]")
                       for k, v in _mapping(src.get("head_hosts"), "source head_hosts").items()}
    events = doc.get("events", [])
    if not isinstance(events, list) or len(events) > MAX_ITEMS:
        raise Malformed(f"events: a list expected, not {_kind(events)}")
    return info, [event_from_json(e, name, f"events[{i}]") for i, e in enumerate(events)]


def event_from_json(doc: Any, source: str, what: str = "event") -> Event:
    doc = _obj(doc, what)
    rule = _str(doc, "rule", what)
    evidence_rule = _str(doc, "evidence_rule", what, optional=True) if "evidence_rule" in doc else rule
    time = doc.get("time")
    if time is not None and (type(time) not in (int, float) or not math.isfinite(time)):
        raise Malformed(f"{what}.time: a number expected, not {_kind(time)}")
    has_year = doc.get("time_has_year", True)
    if type(has_year) is not bool:
        raise Malformed(f"{what}.time_has_year: true or false expected, not {_kind(has_year)}")
    category = _str(doc, "category", what, optional=True)
    where = _str(doc, "evidence_source", what, optional=True)
    fields = _mapping(doc.get("fields"), f"{what}.fields")
    count = _int(doc, "count", what, default=1)
    if count < 1:
        raise Malformed(f"{what}.count: a whole number >= 1 expected, not 0")
    last_time = doc.get("last_time")
    if last_time is not None:
        if type(last_time) not in (int, float) or not math.isfinite(last_time):
            raise Malformed(f"{what}.last_time: a number expected, not {_kind(last_time)}")
        if time is None or count < 2:
            raise Malformed(f"{what}.last_time: only an event with a time and a count above 1 has one")
    return Event(
        rule_id=rule,
        kind=_enum(Kind, doc.get("kind"), f"{what}.kind"),
        phase=_enum(Phase, doc.get("phase"), f"{what}.phase"),
        severity=_str(doc, "severity", what),
        message=_str(doc, "message", what),
        identity=_identity(doc.get("identity"), f"{what}.identity"),
        evidence=Evidence(source if where is None else where,
                          _int(doc, "line", what), _str(doc, "text", what), rule_id=evidence_rule),
        fields={k: _text(v, f"{what}.fields[{k[:40]!r}]") for k, v in fields.items()},
        time=float(time) if time is not None else None,
        time_has_year=has_year,
        family=_str(doc, "family", what, optional=True) or "",
        category=_enum(Category, category, f"{what}.category") if category is not None else None,
        count=count,
        last_line=_int(doc, "last_line", what, default=None),
        span=round(last_time - time, 6) if last_time is not None and time is not None else 0.0,
    )


def _identity(doc: Any, what: str) -> Identity:
    if doc is None:
        return Identity()
    doc = _obj(doc, what)
    learnt = _mapping(doc.get("learnt_from"), f"{what}.learnt_from")
    return Identity(
        rank=_int(doc, "rank", what, default=None), local_rank=_int(doc, "local_rank", what, default=None),
        host=_str(doc, "host", what, optional=True), pid=_int(doc, "pid", what, default=None),
        device=_int(doc, "device", what, default=None),
        learnt_from={k: _text(v, f"{what}.learnt_from[{k[:40]!r}]") for k, v in learnt.items()})


# --- checks -------------------------------------------------------------------------------------

def _loads(raw: bytes) -> Any:
    try:
        doc = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise Malformed("is nested too deeply") from None
    except UnicodeDecodeError:
        raise Malformed("is not UTF-8") from None
    except ValueError as exc:  # JSONDecodeError, an integer of thousands of digits, NaN
        raise Malformed(f"is not JSON: {str(exc)[:120]}") from None
    # Only an escape can make one, and a surrogate escape is rare (a pair is a character beyond
    # U+FFFF): the document is walked only when the line holds one.
    if _SURROGATE_ESCAPE.search(raw) and lone_surrogate(doc):
        raise Malformed("holds a lone surrogate (a \\ud800-\\udfff escape): not Unicode text")
    return doc


_SURROGATE_ESCAPE = lazy_re(rb"\\u[dD][89a-fA-F]")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _lines(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line, whether it ended with a newline), each line bounded in size."""
    parts: list[bytes] = []
    size = 0
    line_no = 0
    for chunk in chunks:
        pos = 0
        while True:
            newline = chunk.find(b"\n", pos)
            piece = chunk[pos:] if newline < 0 else chunk[pos:newline]
            size += len(piece)
            if size > MAX_LINE_BYTES:
                raise Malformed(f"line {line_no + 1} is longer than {MAX_LINE_BYTES >> 20} MiB: "
                                "not read further")
            if newline < 0:
                if piece:
                    parts.append(piece)
                break
            parts.append(piece)
            line_no += 1
            yield line_no, b"".join(parts), True
            parts, size, pos = [], 0, newline + 1
    if size:
        yield line_no + 1, b"".join(parts), False


def _obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Malformed(f"{what}: an object expected, not {_kind(value)}")
    return value


def _mapping(value: Any, what: str) -> dict[str, Any]:
    """An object of bounded size (absent: empty), with bounded keys."""
    if value is None:
        return {}
    checked = _obj(value, what)
    if len(checked) > MAX_ITEMS:
        raise Malformed(f"{what}: more than {MAX_ITEMS} entries")
    for key in checked:
        if len(key) > MAX_TEXT:
            raise Malformed(f"{what}: a key longer than {MAX_TEXT} characters")
    return checked


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise Malformed(f"{what}: a string expected, not {_kind(value)}")
    if len(value) > MAX_TEXT:
        raise Malformed(f"{what}: longer than {MAX_TEXT} characters")
    return value


def _texts(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_ITEMS:
        raise Malformed(f"{what}: a list of strings expected, not {_kind(value)}")
    return [_text(v, what) for v in value]


def _str(doc: dict[str, Any], key: str, what: str, *, optional: bool = False) -> Any:
    value = doc.get(key)
    if value is None and optional:
        return None
    if value is None:
        raise Malformed(f"{what}.{key}: missing")
    return _text(value, f"{what}.{key}")


def _int(doc: dict[str, Any], key: str, what: str, *, default: Any = ...) -> Any:
    value = doc.get(key)
    if value is None and default is not ...:
        return default
    return _count(value, f"{what}.{key}")


def _count(value: Any, what: str) -> int:
    if type(value) is not int or value < 0:  # bool is not a number here
        raise Malformed(f"{what}: a whole number >= 0 expected, not {_kind(value)}")
    return value


def _enum(cls: Any, value: Any, what: str) -> Any:
    try:
        return cls(value)
    except (ValueError, TypeError):
        known = ", ".join(m.value for m in cls)
        raise Malformed(f"{what}: {_kind(value)} is not one of {known}") from None


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return repr(value[:40] + ("…" if len(value) > 40 else ""))
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        text = str(value)
        return text if len(text) <= 20 else f"a number of {len(text)} digits"
    if isinstance(value, dict):
        return "an object"
    return "a list" if isinstance(value, list) else type(value).__name__


def _name_in(doc: Any) -> str | None:
    """The name of the source a bad line was about, when it can be read."""
    src = doc.get("source") if isinstance(doc, dict) else None
    name = src.get("name") if isinstance(src, dict) else None
    return name if isinstance(name, str) and 0 < len(name) <= 4096 else None


def _skipped(name: str, reason: str) -> Scanned:
    return SourceInfo(name=name, identity=Identity(), skipped=reason), []


def _counts(said: Any) -> str:
    if isinstance(said, tuple) and all(type(n) is int for n in said):
        return f"{said[0]} sources with {said[1]} events"
    return "nothing readable"


def _s(n: int) -> str:
    return "" if n == 1 else "s"
