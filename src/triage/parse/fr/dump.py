"""A flight-recorder dump, read from what the safe loader (or json) returned, every field checked.

The forms (docs/formats.md §1.6.1):

- the pickle torch writes (versions "2.3" … "2.10": a dict of `version`, `pg_config`, `pg_status`,
  `entries`, `nccl_version` / `comm_lib_version`);
- the JSON form (`_dump_fr_trace_json`, the control-plane handler; Ray and NVRx save it): no
  `frames`, `pg_status` values as strings, 0 for a time not seen, `entries` left out when empty;
- the pre-2024 bare list of entries (no version, no groups; the sequence number was `seq_id`).

Fields are read by name and type, never by position, so every 2.x version reads with one reader:
a field a version lacks is None. Versions are compared as numbers ("2.10" is after "2.9"). A value
of the wrong type, a structure that is not a dump's, or a size past the bounds is `Refused`, with
the reason: the dump is then a skipped source, and the rest of the job is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from triage.lazy_regex import lazy_re
from triage.parse.fr.safe_pickle import Refused

MAX_ENTRIES = 1 << 20  # TORCH_FR_BUFFER_SIZE is 2,000 by default
MAX_GROUPS = 1 << 16
MAX_RANKS_TEXT = 8 << 20  # `ranks` of a 100,000-rank group is ~700 KB of text
MAX_TEXT = 4096  # any one name, description, op or frame field is cut here
MAX_TENSORS = 64  # input/output sizes kept per entry (coalesced ops can list many)
MAX_DIMS = 16
MAX_FRAMES = 8  # the innermost frames of an entry's stack kept
KNOWN_MAJOR = 2
NEWEST_MINOR = 10  # the newest version read against its source (torch 2.13 writes "2.10")

_RANKS = lazy_re(r"\s*\[\s*(?:\d{1,9}\s*(?:,\s*\d{1,9}\s*)*,?\s*)?\]\s*")
_VERSION = lazy_re(r"(\d{1,4})\.(\d{1,4})")
_STATES = ("scheduled", "started", "completed")


@dataclass
class Frame:
    name: str
    filename: str
    line: int | None


@dataclass
class Entry:
    """One recorded operation, as the dump states it (None: the dump does not say)."""

    index: int  # its position in the dump's `entries` (0-based)
    record_id: int | None
    pg_id: int | None
    pg_name: str  # the process group's name (its GUID as the logs print it: `PG GUID 3`)
    pg_desc: str
    seq: int | None  # collective_seq_id (seq_id before 2024)
    p2p_seq: int | None
    op_id: int | None
    profiling_name: str  # `<backend>:<op>`, `nccl:send 1->2` for P2P
    is_p2p: bool | None
    in_sizes: list[list[int]] | None
    out_sizes: list[list[int]] | None
    in_dtypes: list[str] | None
    out_dtypes: list[str] | None
    state: str | None
    created_ns: int | None
    started_ns: int | None
    completed_ns: int | None
    duration_ms: float | None
    timeout_ms: int | None
    retired: bool | None
    raw_frames: list[Any] | None  # as the dump holds them: read (and checked) only when asked for
    thread: str | None = None  # `thread_name` (`thread_id`) from 2.10

    @property
    def frames(self) -> list[Frame] | None:
        """The innermost MAX_FRAMES frames, innermost first; None when not recorded. Refused when
        one is not a frame (read only for the entries that become events: most never are)."""
        return _frames(self.raw_frames, f"entry {self.index}")

    @property
    def frames_total(self) -> int:
        return len(self.raw_frames) if self.raw_frames is not None else 0

    @property
    def backend(self) -> str:
        return self.profiling_name.partition(":")[0] if ":" in self.profiling_name else ""

    @property
    def op(self) -> str:
        """The operation without backend and P2P peers: `all_reduce`, `send`, `coalesced`."""
        rest = self.profiling_name.partition(":")[2] if ":" in self.profiling_name else self.profiling_name
        return rest.split(" ", 1)[0]

    @property
    def p2p_peers(self) -> str | None:
        """`1->2` of `nccl:send 1->2`, `3<-0` of `nccl:recv 3<-0` (group ranks), when stated."""
        rest = self.profiling_name.partition(":")[2]
        return rest.split(" ", 1)[1] if " " in rest else None


@dataclass
class Group:
    """A process group as the dump states it: config (pg_config) and status (pg_status)."""

    name: str
    desc: str | None = None
    ranks: list[int] | None = None  # global ranks (None: not stated; [] as gloo states it)
    pg_id: str | None = None  # the pg_status key (the process-local pg id)
    last_enqueued: int | None = None
    last_started: int | None = None
    last_completed: int | None = None


@dataclass
class Dump:
    form: str  # pickle | json | list
    version: str | None  # as written ("2.10"), None for the pre-2024 list
    version_num: tuple[int, int] | None
    lib_version: str | None  # nccl_version (<= 2.9) / comm_lib_version (2.10)
    groups: dict[str, Group] = field(default_factory=dict)  # by name
    status_only: dict[str, Group] = field(default_factory=dict)  # pg_status ids not matched to a name
    entries: list[Entry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def looks_like_doc(doc: Any) -> bool:
    """A loaded value that is a dump: a dict with `version` and the recorder's keys, or a list of
    entries (the pre-2024 form)."""
    if isinstance(doc, dict):
        return "version" in doc and bool({"entries", "pg_config", "pg_status"} & doc.keys())
    if isinstance(doc, list):
        return all(isinstance(e, dict) and "profiling_name" in e for e in doc[:8])
    return False


def read(doc: Any, form: str) -> Dump:
    """The dump `doc` is (a loaded pickle or JSON value); Refused with the reason otherwise."""
    if not looks_like_doc(doc):
        what = "a dict without the flight recorder's keys (version, entries, pg_config, pg_status)" \
            if isinstance(doc, dict) else f"a {type(doc).__name__}"
        raise Refused(f"{'JSON' if form == 'json' else 'a pickle'} of {what}: not a flight-recorder dump")
    if isinstance(doc, list):
        dump = Dump(form="list", version=None, version_num=None, lib_version=None)
        dump.notes.append("pre-2024 form: a bare list of entries, without groups or status")
        dump.entries = _entries(doc, json_form=False)
        _pg_status(dump, {}, json_form=False)  # the groups, as the entries name them
        return dump
    version, number = _version(doc.get("version"))
    lib = doc.get("comm_lib_version", doc.get("nccl_version"))
    dump = Dump(form=form, version=version, version_num=number,
                lib_version=_text(lib, "comm_lib_version") if lib not in (None, "") else None)
    if number[1] > NEWEST_MINOR:
        dump.notes.append(f"version {version} is newer than {KNOWN_MAJOR}.{NEWEST_MINOR}, the newest "
                          "known: its known fields were read, any new ones were not")
    json_form = form == "json"
    entries = doc.get("entries", [])
    dump.entries = _entries(entries, json_form=json_form)
    dump.groups = _pg_config(doc.get("pg_config", {}))
    if "" in dump.groups and not any(e.pg_name == "" for e in dump.entries):
        unnamed = dump.groups.pop("")
        dump.notes.append(f"pg_config holds one unnamed group (ranks {unnamed.ranks}), as gloo writes "
                          "it (torch 2.13): the dump states no group's members")
    _pg_status(dump, doc.get("pg_status", {}), json_form)
    return dump


def _version(value: Any) -> tuple[str, tuple[int, int]]:
    if not isinstance(value, str):
        raise Refused(f"its version is {_kind(value)}, not a string such as \"2.10\" (a number "
                      "cannot tell 2.1 from 2.10)")
    m = _VERSION.fullmatch(value.strip())
    if m is None:
        raise Refused(f"its version {value[:40]!r} is not a flight-recorder version (\"2.3\" … \"2.10\")")
    number = (int(m[1]), int(m[2]))
    if number[0] != KNOWN_MAJOR:
        raise Refused(f"its version {value} has another major number than {KNOWN_MAJOR}: its fields may "
                      "mean something else, not read")
    return value.strip(), number


def _entries(raw: Any, *, json_form: bool) -> list[Entry]:
    if not isinstance(raw, list):
        raise Refused(f"`entries` is {_kind(raw)}, not a list")
    if len(raw) > MAX_ENTRIES:
        raise Refused(f"more than {MAX_ENTRIES} entries")
    return [_entry(i, e, json_form) for i, e in enumerate(raw)]


def _entry(index: int, e: Any, json_form: bool) -> Entry:
    where = f"entry {index}"
    if not isinstance(e, dict):
        raise Refused(f"{where} is {_kind(e)}, not a dict")
    pg = e.get("process_group")
    if isinstance(pg, (tuple, list)) and len(pg) == 2:
        pg_name, pg_desc = _text(pg[0], f"{where} process_group"), _text(pg[1], f"{where} process_group")
    elif pg is None:
        pg_name, pg_desc = "", ""  # the pre-2024 form names the group by pg_id only
    else:
        raise Refused(f"{where}: process_group is {_kind(pg)}, not (name, desc)")
    pg_id = _int(e.get("pg_id"), f"{where} pg_id")
    if pg is None and pg_id is not None:
        pg_name = str(pg_id)
    name = e.get("profiling_name")
    if not isinstance(name, str) or not name:
        raise Refused(f"{where}: profiling_name is {_kind(name)}, not the op's name")
    seq = e.get("collective_seq_id", e.get("seq_id"))
    state = e.get("state")
    if state is not None and state not in _STATES:
        raise Refused(f"{where}: state {_kind(state)} is none of {', '.join(_STATES)}")
    frames = e.get("frames")
    if frames is not None and not isinstance(frames, list):
        raise Refused(f"{where}: frames is {_kind(frames)}, not a list")
    tid, tname = e.get("thread_id"), e.get("thread_name")
    thread = None
    if tid is not None or tname is not None:
        thread = f"{_text(tname, where) if tname is not None else '?'} ({_text(tid, where) if tid is not None else '?'})"
    duration = e.get("duration_ms")
    if duration is not None and (type(duration) not in (int, float) or duration != duration):
        raise Refused(f"{where}: duration_ms is {_kind(duration)}, not a number")
    is_p2p = e.get("is_p2p")
    retired = e.get("retired")
    for key, flag in (("is_p2p", is_p2p), ("retired", retired)):
        if flag is not None and not isinstance(flag, bool):
            raise Refused(f"{where}: {key} is {_kind(flag)}, not true or false")
    return Entry(
        index=index, record_id=_int(e.get("record_id"), f"{where} record_id"), pg_id=pg_id,
        pg_name=pg_name, pg_desc=pg_desc, seq=_int(seq, f"{where} collective_seq_id"),
        p2p_seq=_int(e.get("p2p_seq_id"), f"{where} p2p_seq_id"), op_id=_int(e.get("op_id"), f"{where} op_id"),
        profiling_name=name[:MAX_TEXT], is_p2p=is_p2p,
        in_sizes=_sizes(e.get("input_sizes"), f"{where} input_sizes"),
        out_sizes=_sizes(e.get("output_sizes"), f"{where} output_sizes"),
        in_dtypes=_dtypes(e.get("input_dtypes"), f"{where} input_dtypes"),
        out_dtypes=_dtypes(e.get("output_dtypes"), f"{where} output_dtypes"),
        state=state, created_ns=_time(e.get("time_created_ns"), f"{where} time_created_ns", json_form),
        started_ns=_time(e.get("time_discovered_started_ns"), f"{where} time_discovered_started_ns", json_form),
        completed_ns=_time(e.get("time_discovered_completed_ns"), f"{where} time_discovered_completed_ns",
                           json_form),
        duration_ms=float(duration) if duration is not None else None,
        timeout_ms=_int(e.get("timeout_ms"), f"{where} timeout_ms"), retired=retired,
        raw_frames=frames, thread=thread)


def _frames(raw: Any, where: str) -> list[Frame] | None:
    if raw is None:
        return None
    out = []
    for f in raw[:MAX_FRAMES]:
        if not isinstance(f, dict):
            raise Refused(f"{where}: a frame is {_kind(f)}, not a dict")
        line = f.get("line")
        out.append(Frame(name=_text(f.get("name", "?"), f"{where} frame name"),
                         filename=_text(f.get("filename", "?"), f"{where} frame filename"),
                         line=line if type(line) is int else None))
    return out


def _pg_config(raw: Any) -> dict[str, Group]:
    if not isinstance(raw, dict):
        raise Refused(f"`pg_config` is {_kind(raw)}, not a dict")
    if len(raw) > MAX_GROUPS:
        raise Refused(f"more than {MAX_GROUPS} process groups in pg_config")
    groups: dict[str, Group] = {}
    for key, cfg in raw.items():
        key = _text(key, "a pg_config key")
        if not isinstance(cfg, dict):
            raise Refused(f"pg_config[{key[:40]!r}] is {_kind(cfg)}, not a dict")
        name = _text(cfg.get("name", key), f"pg_config[{key[:40]!r}] name")
        desc = cfg.get("desc")
        groups[name] = Group(name=name, desc=_text(desc, "pg_config desc") if desc is not None else None,
                             ranks=parse_ranks(cfg.get("ranks"), f"pg_config[{key[:40]!r}] ranks"))
    return groups


def parse_ranks(value: Any, where: str) -> list[int] | None:
    """`ranks` of pg_config, "[0, 1, 2, 3]", read as numbers (never evaluated); a list is taken as is."""
    if value is None:
        return None
    if isinstance(value, list):
        if not all(type(r) is int and 0 <= r < 1 << 31 for r in value[:MAX_RANKS_TEXT]):
            raise Refused(f"{where}: not a list of ranks")
        return list(value)
    if not isinstance(value, str):
        raise Refused(f"{where} is {_kind(value)}, not a string like \"[0, 1, 2, 3]\"")
    if len(value) > MAX_RANKS_TEXT:
        raise Refused(f"{where} is a string of {len(value)} characters, more than {MAX_RANKS_TEXT}: not read")
    if not _RANKS.fullmatch(value):
        raise Refused(f"{where} {value[:60]!r} is not a list of ranks such as \"[0, 1, 2, 3]\"")
    return [int(r) for r in re.findall(r"\d+", value)]


def _pg_status(dump: Dump, raw: Any, json_form: bool) -> None:
    """`pg_status` is keyed by the process-local pg id (the entries' `pg_id`), not by name: each is
    matched to its group through the entries that carry both; the rest are kept apart."""
    if not isinstance(raw, dict):
        raise Refused(f"`pg_status` is {_kind(raw)}, not a dict")
    if len(raw) > MAX_GROUPS:
        raise Refused(f"more than {MAX_GROUPS} process groups in pg_status")
    names: dict[str, str] = {}
    for e in dump.entries:
        if e.pg_id is not None:
            names.setdefault(str(e.pg_id), e.pg_name)
            group = dump.groups.get(e.pg_name)
            if group is None:  # gloo (2.13) states no config for its groups: the entries name them
                group = dump.groups[e.pg_name] = Group(name=e.pg_name, desc=e.pg_desc or None)
            elif not group.desc and e.pg_desc:
                group.desc = e.pg_desc
    for key, status in raw.items():
        key = _text(key, "a pg_status key")
        if not isinstance(status, dict):
            raise Refused(f"pg_status[{key[:40]!r}] is {_kind(status)}, not a dict")
        name = names.get(key)
        if name is None and key in dump.groups:
            name = key  # no entry of it is left in the buffer: its name is taken to be its id
        group = dump.groups.get(name) if name is not None else None
        if group is None:
            group = dump.status_only.setdefault(key, Group(name=key))
        group.pg_id = key
        for attr, k in (("last_enqueued", "last_enqueued_collective"), ("last_started", "last_started_collective"),
                        ("last_completed", "last_completed_collective")):
            setattr(group, attr, _signed(status.get(k), f"pg_status[{key[:40]!r}] {k}", json_form))


def _int(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if type(value) is not int:
        raise Refused(f"{where} is {_kind(value)}, not a whole number")
    return value


def _signed(value: Any, where: str, json_form: bool) -> int | None:
    """A pg_status count: an int in the pickle, a decimal string in the JSON form."""
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,19}", value):
        return int(value)
    return _int(value, where)


def _time(value: Any, where: str, json_form: bool) -> int | None:
    number = _int(value, where)
    if number is not None and number <= 0:
        return None  # the JSON form writes 0 for a time not seen
    return number


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise Refused(f"{where} is {_kind(value)}, not a string")
    return value[:MAX_TEXT]


def _sizes(value: Any, where: str) -> list[list[int]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise Refused(f"{where} is {_kind(value)}, not a list of shapes")
    out = []
    for shape in value[:MAX_TENSORS]:
        if not isinstance(shape, list) or not all(type(d) is int for d in shape[:MAX_DIMS]):
            raise Refused(f"{where}: a shape is {_kind(shape)}, not a list of sizes")
        out.append(list(shape[:MAX_DIMS]))
    return out


def _dtypes(value: Any, where: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(d, str) for d in value[:MAX_TENSORS]):
        raise Refused(f"{where} is {_kind(value)}, not a list of dtype names")
    return [d[:64] for d in value[:MAX_TENSORS]]


def _kind(value: Any) -> str:
    if value is None:
        return "missing"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, int) and value.bit_length() > 64:
        return f"a number of {value.bit_length()} bits"
    if isinstance(value, (int, float)):
        text = repr(value)
        return f"a number ({text if len(text) <= 20 else text[:20] + '…'})"
    if isinstance(value, str):
        return f"a string ({value[:30]!r})"
    return f"a {type(value).__name__}"
