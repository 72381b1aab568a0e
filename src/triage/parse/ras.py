"""NCCL RAS status dumps (docs/formats.md §4), read as documents: sections, tables, blocks.

`ncclras` / `triage ras collect` answers with a report whose lines only mean something in their
place: a `  Rank 5 -- GPU 5 managed by process 4242 on node 10.0.0.2` line is a missing rank under
`#0-0 (…) INCOMPLETE`, a rank with a given status after `  3 ranks have status INIT`, a rank at
the count of the `  7 ranks have launched up to operation 4100` line before it. So a dump is read
whole (text of 2.24-2.25 and 2.26+, verbose or not; JSON of 2.28.7+, tolerating the trailing
commas some versions emit), and each fact becomes one event that says which snapshot, which
communicator (`comm_id`, its hash) and which communicator rank (`pg_rank`) it is about. Ranks are
communicator ranks here; the job model maps them to global ranks.

RAS lines met inside other logs (monitor events, NCCL_DEBUG's RAS subsystem) stay line rules.
"""

from __future__ import annotations

import calendar
import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import regex

from triage.lazy_regex import lazy_compile, lazy_re
from triage.model import Category, Event, Evidence, Identity, Kind, Phase

MAX_BYTES = 64 << 20  # a verbose dump of a 100k-GPU job is a few MB
FAMILY = "ras"

_HEADER = lazy_compile(r"^NCCL version (?P<version>\d+\.\d+\.\d+\S*) compiled with CUDA", regex.M)
# `ras-20261122T101500.123456Z.txt`, as `triage ras collect` names its snapshots.
_STAMP = lazy_compile(r"ras-(?P<stamp>\d{8}T\d{6})(?:\.(?P<us>\d{1,6}))?Z")
_PROCESS = lazy_compile(r"^\s+Process (?P<pid>\d+) on node (?P<ip>\S+) managing GPUs? (?P<gpus>[\d,]+)")
_GPU_PROC = r"GPU (?P<gpu>\d+)(?: \(NVML \d+\))? managed by process (?P<pid>\d+) on node (?P<ip>\S+)"
_RANK_ONLY = lazy_compile(r"^\s+Rank (?P<rank>\d+) -- (?:" + _GPU_PROC + r"|\[process information not found\])")
_RANK_STATUS = lazy_compile(r"^\s+Rank (?P<rank>\d+) has status (?P<status>[A-Z]+) -- (?:" + _GPU_PROC + r"|\[)")
_RANK_COUNT = lazy_compile(
    r"^\s+Rank (?P<rank>\d+) (?:has launched up to operation (?P<count>\d+)|has not launched any operations)"
    r" -- (?:" + _GPU_PROC + r"|\[)")
_RANK_REPORTED = lazy_compile(r"^\s+Rank (?P<rank>\d+) reported (?P<error>[A-Za-z ]+?) -- (?:" + _GPU_PROC + r"|\[)")
_COMM_BLOCK = lazy_compile(r"^#(?P<group>\d+)-(?P<idx>\d+) \((?P<hash>[0-9a-fA-F]+)\) (?P<what>INCOMPLETE|ERROR|MISMATCH)\s*$")
_GROUP_ROW = lazy_compile(
    r"^\s*(?P<group>\d+)\s+(?P<comms>\d+)\s+(?P<nodes>\d+)\s+(?P<per_node>[\d-]+)\s+(?P<size>\d+)\s+"
    r"(?P<in_group>\d+)\s+(?P<status>[A-Z]+)\s+(?P<errors>[A-Z,]+)\s*$")
_JOB_ROW = lazy_compile(r"^\s*(?P<nodes>\d+)\s+(?P<per_node>\d+)\s+(?P<gpus_pp>\d+)\s+(?P<processes>\d+)\s+(?P<gpus>\d+)\s*$")


@dataclass
class _Doc:
    """What one dump says, with the line each fact came from."""

    source: str
    lines: list[str]
    time: float | None
    events: list[Event] = field(default_factory=list)

    def add(self, rule_id: str, kind: Kind, line_no: int, message: str, fields: dict[str, str],
            phase: Phase = Phase.UNKNOWN, category: Category | None = None) -> None:
        text = self.lines[line_no - 1].strip() if 0 < line_no <= len(self.lines) else ""
        fields = {k: v for k, v in fields.items() if v not in (None, "")}
        fields["snapshot"] = self.source
        self.events.append(Event(
            rule_id=rule_id, kind=kind, phase=phase, severity="error" if kind is not Kind.INFO else "info",
            message=message, identity=Identity(), evidence=Evidence(self.source, line_no, text[:300], rule_id=rule_id),
            fields=fields, time=self.time, family=FAMILY, category=category))

# A line that begins with `=`: `"\n=" in head` costs 3 times as much (the newline is everywhere).
_UNDERLINE_START = lazy_re("\n=")


def looks_like(head: str) -> bool:
    """A RAS dump in the head of a source: RAS's JSON document, the report's first line at the
    start of any line (people paste a report above or below the job's own lines), or, without that
    line, one of its sections by its own shapes (the NCCL guide quotes `Errors` blocks alone)."""
    start = head.lstrip()[:4096]
    if start.startswith("{"):
        return '"nccl_version"' in start and ('"communicators' in head or '"ras"' in head)
    if " compiled with CUDA" in head and _HEADER.search(head):  # (its literal: found in C)
        return "Job summary" in head or "Communicators" in head or "Gathering data about" in head
    return _UNDERLINE_START.search(head) is not None and bool(headless_starts(head.split("\n")))


# A section of a report with no header (an excerpt: the guide's examples, a paste of the part that
# matters): its title alone on a line, underlined with `=`, and inside it a shape no other log
# prints: a block title with the block's own first line under it, or the section's table header.
_SECTION_TITLE = lazy_compile(r"(?:Job summary|Communicators\.\.\. \(\d+(?:\.\d+)?s\)|Errors|Warnings)\s*$")
_UNDERLINE = lazy_compile(r"=+\s*$")
_BLOCK_TITLE = lazy_compile(
    r"(?:INCOMPLETE|DEAD|TIMEOUT|#\d+-\d+ \([0-9a-fA-F]+\) (?:INCOMPLETE|ERROR|MISMATCH))\s*$")
_BLOCK_FIRST = lazy_compile(
    r"\s+(?:Missing communicator data from \d+ (?:job process|rank)|\d+ job process(?:es are| is) considered dead "
    r"|Encountered \d+ communication timeout|(?:Initialization|Asynchronous) errors? on \d+ rank"
    r"|Communicator ranks have different )")
_TABLE_HEAD = lazy_compile(r"(?:Group\s+Comms\s+Nodes|\s*Nodes\s+Processes\s+GPUs)")


def headless_starts(lines: list[str]) -> set[int]:
    """The lines (0-based) where a report with no header line begins: a section title underlined
    with `=` whose section holds one of the report's own shapes before its end. Prose that says
    DEAD or INCOMPLETE is none: the title, its rule and a block's first line must all be there."""
    starts: set[int] = set()
    no = 0
    while no < len(lines) - 1:
        if not (_SECTION_TITLE.match(lines[no]) and _UNDERLINE.match(lines[no + 1])):
            no += 1
            continue
        end = no + 2
        shaped = False
        while end < len(lines):
            line = lines[end]
            if line.strip() and not line[:1].isspace() and not _REPORT_LINE.match(line):
                break  # no longer the report's
            shaped = shaped or bool(_TABLE_HEAD.match(line)) or bool(
                _BLOCK_TITLE.match(line) and end + 1 < len(lines) and _BLOCK_FIRST.match(lines[end + 1]))
            end += 1
        if shaped:
            starts.add(no)
        no = end
    return starts


# The lines a text report is made of beyond its indented ones (docs/formats.md §4.1): its
# headers and rules, section and block titles, the tables' header rows. Any other line that does
# not begin with a blank is no longer the report's.
_REPORT_LINE = lazy_compile(
    r"(?:NCCL version \S+ compiled with CUDA|CUDA runtime version |Job summary\s*$|=+\s*$|\(total\)|"
    r"Nodes\s+Processes|Communicators|Gathering data about|Group\s+Comms|Errors\s*$|Warnings\s*$|"
    r"(?:INCOMPLETE|DEAD|TIMEOUT)\s*$|#\d+-\d+ \(|No communicator data collected|The outlier node)")


def split(text: str) -> tuple[str, str]:
    """The RAS report(s) in a text, and the rest: two texts of the same lines, each with the
    other's lines left empty, so that every line keeps its number.

    A report runs from its `NCCL version … compiled with CUDA` line (or, in an excerpt with no such
    line, from a section title its shapes confirm: headless_starts) to the first line that is not
    one of its own (a JSON document: to its closing brace at the start of a line); what comes
    before or after it (a job's watchdog lines pasted with it, a monitor's output) is read by the
    line rules like any log.
    """
    lines = text.split("\n")
    ends_open = not text.endswith("\n")  # a last line cut short: never the report's
    mine = [False] * len(lines)
    if text.lstrip().startswith("{"):
        for no, line in enumerate(lines):
            mine[no] = True
            if line.rstrip() == "}":
                break
    else:
        inside = False
        starts = headless_starts(lines)
        for no, line in enumerate(lines):
            if _HEADER.match(line) or no in starts:
                inside = True
            elif inside and line.strip() and not line[:1].isspace() and not _REPORT_LINE.match(line):
                inside = False
            mine[no] = inside
    if ends_open:
        mine[-1] = False
    doc = "\n".join(line if m else "" for line, m in zip(lines, mine, strict=True))
    rest = "\n".join("" if m else line for line, m in zip(lines, mine, strict=True))
    return doc, rest


def snapshot_time(name: str) -> float | None:
    """The time a snapshot was taken, from the name `triage ras collect` gives it."""
    if (m := _STAMP.search(name)) is None:
        return None
    secs = calendar.timegm(time.strptime(m["stamp"], "%Y%m%dT%H%M%S"))
    return secs + int((m["us"] or "0").ljust(6, "0")) / 1e6


def events(source: str, text: str) -> list[Event] | None:
    """The facts of one dump as events, or None when the text is not a RAS dump after all."""
    doc = _Doc(source=source, lines=text.splitlines(), time=snapshot_time(source))
    if text.lstrip().startswith("{"):
        data = _loads_tolerant(text)
        if not isinstance(data, dict) or "communicators" not in data:
            return None
        _read_json(doc, data)
    else:
        if not _HEADER.search(text) and not headless_starts(doc.lines):
            return None
        _read_text(doc)
    return doc.events


def _comm_key(commhash: str) -> str:
    """RAS prints the commId hash zero-padded (`%016lx`), NCCL's init lines do not (`commId 0x%llx`)."""
    return commhash.lower().removeprefix("0x").lstrip("0") or "0"


def _loads_tolerant(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    # NCCL 2.28.7-2.28.9 leave out the comma after `"nvml_dev": n` in each missing rank (fixed in
    # 2.29.2); a comma before a closing bracket is the other slip a hand edit or a version leaves.
    repaired = regex.sub(r'(\d|"|\}|\]|true|false|null)(\s*\n\s*")', r"\1,\2", text)
    try:
        return json.loads(regex.sub(r",(\s*[}\]])", r"\1", repaired))
    except ValueError:
        return None


# --- text ------------------------------------------------------------------------------------

def _read_text(doc: _Doc) -> None:
    section = ""  # "", "ras-network", "errors", "warnings"
    block = ""  # INCOMPLETE, DEAD, or a communicator block's kind
    comm = ""  # the hash of the communicator block being read
    group = ""  # its group in the communicators table (`#group-index`), which gives its size
    context: dict[str, str] = {}  # what the lines that follow belong to (a status, a count, an error)
    for no, line in enumerate(doc.lines, 1):
        stripped = line.strip()
        if (m := _HEADER.match(line)) is not None:
            doc.add("ras-version-header", Kind.INFO, no, f"RAS report of NCCL {m['version']}",
                    {"nccl_version": m["version"]})
            continue
        if stripped in ("Errors", "Warnings") or stripped.startswith("Gathering data about the RAS network"):
            section = {"Errors": "errors", "Warnings": "warnings"}.get(stripped, "ras-network")
            block, comm, group, context = "", "", "", {}
            continue
        if stripped.startswith("Gathering data about the NCCL communicators") or stripped.startswith("Communicators"):
            section, block = "communicators", ""
            continue
        if (m := _JOB_ROW.match(line)) is not None and not section:
            doc.add("ras-job-summary", Kind.INFO, no,
                    f"RAS: {m['processes']} processes, {m['gpus']} GPUs on {m['nodes']} nodes",
                    {"world_size": m["gpus"], "processes": m["processes"], "node_count": m["nodes"]})
            continue
        if section == "communicators" and (m := _GROUP_ROW.match(line)) is not None:
            if m["size"] == "0":
                # NCCL 2.26-2.28 misread the communicators after one with missing ranks (fixed in
                # 2.29.2) and print a phantom `0 ranks INIT OK` row: the JSON of the moment is right.
                continue
            doc.add("ras-comm-group", Kind.INFO, no,
                    f"RAS: {m['comms']} communicator(s) of {m['size']} ranks: {m['status']} {m['errors']}",
                    {"ras_group": m["group"], "nranks": m["size"], "comm_status": m["status"], "errors": m["errors"]})
            continue
        if section == "ras-network":
            if stripped.startswith("The missing process"):
                block = "UNREACHABLE"
            elif (m := _PROCESS.match(line)) is not None and block == "UNREACHABLE":
                _process(doc, no, m, "unresponsive", "did not answer RAS (no data from it)")
            continue
        if section in ("errors", "warnings"):
            if stripped in ("INCOMPLETE", "DEAD", "TIMEOUT"):
                block, comm, group, context = stripped, "", "", {}
                continue
            if (m := _COMM_BLOCK.match(stripped)) is not None:
                block, comm, group, context = m["what"], _comm_key(m["hash"]), m["group"], {}
                continue
            _block_line(doc, no, line, block, (comm, group), context)


def _process(doc: _Doc, no: int, m: regex.Match[str], state: str, how: str) -> None:
    gpus = m["gpus"]
    doc.add("ras-dead-processes" if state == "dead" else "ras-incomplete-processes", Kind.CULPRIT_NAMED, no,
            f"RAS: process {m['pid']} on {m['ip']} (GPU {gpus}) {how}",
            {"culprit_pid": m["pid"], "culprit_ip": m["ip"], "culprit_device": gpus.split(",")[0],
             "gpus": gpus, "exception": state},
            category=Category.CRASHED_PROCESS if state == "dead" else Category.HUNG_PROCESS)


def _block_line(doc: _Doc, no: int, line: str, block: str, where: tuple[str, str],
                context: dict[str, str]) -> None:
    stripped = line.strip()
    comm, group = where
    if block in ("INCOMPLETE", "DEAD") and not comm:
        if (m := _PROCESS.match(line)) is not None:
            _process(doc, no, m, "dead" if block == "DEAD" else "unresponsive",
                     "is considered dead (unreachable via the RAS network)" if block == "DEAD"
                     else "sent no communicator data")
        return
    if block == "TIMEOUT":
        if (m := regex.search(r"Encountered (\d+) communication timeout", stripped)) is not None:
            doc.add("ras-timeouts", Kind.INFO, no, f"RAS: {m[1]} timeouts while gathering data",
                    {"timeouts": m[1]})
        return
    rank_fields = {"comm_id": comm, "ras_group": group}
    if block == "INCOMPLETE":
        if (m := regex.match(r"The missing ranks?: ([\d,]+)", stripped)) is not None:  # 2.24/2.25
            for rank in m[1].split(","):
                doc.add("ras-missing-ranks", Kind.CULPRIT_NAMED, no,
                        f"RAS: communicator {comm} is missing its rank {rank}",
                        {**rank_fields, "pg_rank": rank, "exception": "missing"},
                        category=Category.HUNG_PROCESS)
        elif (m := _RANK_ONLY.match(line)) is not None:
            doc.add("ras-comm-incomplete", Kind.CULPRIT_NAMED, no,
                    f"RAS: communicator {comm} is missing its rank {m['rank']}"
                    + (f" (process {m['pid']} on {m['ip']}, GPU {m['gpu']})" if m["pid"] else ""),
                    {**rank_fields, "pg_rank": m["rank"], "culprit_pid": m["pid"], "culprit_ip": m["ip"],
                     "culprit_device": m["gpu"], "exception": "missing"}, category=Category.HUNG_PROCESS)
        return
    if block == "ERROR":
        if stripped.startswith("Initialization error"):
            context.clear()
            context["phase"] = "comm_init"
        elif stripped.startswith("Asynchronous error"):
            context.clear()
            context["phase"] = "execution"
        elif (m := regex.match(r"\d+ ranks reported (.+)$", stripped)) is not None:
            context["error"] = m[1]
        elif (m := _RANK_REPORTED.match(line)) is not None or (m := _RANK_ONLY.match(line)) is not None:
            error = m.groupdict().get("error") or context.get("error", "an error")
            _reported(doc, no, m, error, rank_fields, context.get("phase", ""))
        return
    if block == "MISMATCH":
        if stripped.startswith("Communicator ranks have different status"):
            context.clear()
            context["what"] = "status"
        elif (m := regex.match(r"Communicator ranks have different (\w+) operation counts", stripped)) is not None:
            context.clear()
            context.update(what="count", collective=m[1])
        elif (m := regex.match(r"(\d+) ranks have status ([A-Z]+)", stripped)) is not None:
            context["status"] = m[2]
        elif (m := regex.match(r"(\d+) ranks have (?:launched up to operation (\d+)|not launched any operations)",
                               stripped)) is not None:
            context["count"] = m[2] or "0"
            doc.add("ras-op-count-group", Kind.INFO, no,
                    f"RAS: {m[1]} ranks of {comm} at {context.get('collective', '')} {context['count']}",
                    {**rank_fields, "ranks_count": m[1], "seq": context["count"],
                     "collective": context.get("collective", "")})
        elif (m := _RANK_STATUS.match(line)) is not None:
            _status(doc, no, m, m["status"], rank_fields)
        elif (m := _RANK_COUNT.match(line)) is not None:
            _count(doc, no, m, m["count"] or "0", rank_fields, context.get("collective", ""))
        elif (m := _RANK_ONLY.match(line)) is not None:
            if context.get("what") == "status" and "status" in context:
                _status(doc, no, m, context["status"], rank_fields)
            elif context.get("what") == "count" and "count" in context:
                _count(doc, no, m, context["count"], rank_fields, context.get("collective", ""))


def _who(m: regex.Match[str]) -> dict[str, str]:
    return {"pid": m["pid"] or "", "ip": m["ip"] or "", "device": m["gpu"] or ""}


def _status(doc: _Doc, no: int, m: regex.Match[str], status: str, where: dict[str, str]) -> None:
    doc.add("ras-rank-status", Kind.INFO, no,
            f"RAS: rank {m['rank']} of communicator {where['comm_id']} has status {status}",
            {**where, "pg_rank": m["rank"], "comm_status": status, **_who(m)})


def _count(doc: _Doc, no: int, m: regex.Match[str], count: str, where: dict[str, str], collective: str) -> None:
    doc.add("ras-rank-launched-up-to", Kind.PROGRESS, no,
            f"RAS: rank {m['rank']} of communicator {where['comm_id']} launched {collective} up to operation {count}",
            {**where, "pg_rank": m["rank"], "seq": count, "collective": collective, **_who(m)},
            phase=Phase.EXECUTION)


_REMOTE = ("Remote process error", "System error")


def _reported(doc: _Doc, no: int, m: regex.Match[str], error: str, where: dict[str, str], phase: str) -> None:
    remote = error in _REMOTE
    doc.add("ras-rank-reported-remote-error" if remote else "ras-rank-reported-error",
            Kind.PEER_ERROR if remote else Kind.CULPRIT_NAMED, no,
            f"RAS: rank {m['rank']} of communicator {where['comm_id']} reported {error}",
            {**where, "pg_rank": m["rank"], "error": error,
             **({"culprit_pid": m["pid"], "culprit_ip": m["ip"], "culprit_device": m["gpu"]} if not remote
                else _who(m))},
            phase=Phase(phase) if phase else Phase.UNKNOWN,
            category=None if remote else Category.DEVICE_ERROR if "CUDA" in error else Category.CRASHED_PROCESS)


# --- JSON ------------------------------------------------------------------------------------

def _read_json(doc: _Doc, data: dict[str, Any]) -> None:
    if doc.time is None and isinstance(data.get("timestamp"), str):
        with contextlib.suppress(ValueError):
            doc.time = float(calendar.timegm(time.strptime(data["timestamp"], "%Y-%m-%d %H:%M:%S")))
    line_of = _LineFinder(doc.lines)
    if version := data.get("nccl_version"):
        doc.add("ras-version-header", Kind.INFO, line_of('"nccl_version"'), f"RAS report of NCCL {version}",
                {"nccl_version": str(version)})
    for comm in data.get("communicators") or []:
        if not isinstance(comm, dict):
            continue
        comm_hash = _comm_key(str(comm.get("hash", "")))
        no = line_of(str(comm.get("hash", "")))
        size = str(comm.get("size", ""))
        doc.add("ras-comm-group", Kind.INFO, no, f"RAS: communicator {comm_hash} of {size} ranks",
                {"comm_id": comm_hash, "nranks": size})
        for rank in comm.get("ranks") or []:
            if isinstance(rank, dict):
                _json_rank(doc, line_of, comm_hash, rank)
        for missing in comm.get("missing_ranks") or []:
            if not isinstance(missing, dict):
                continue
            status = missing.get("status") or {}
            dead = bool(status.get("considered_dead"))
            doc.add("ras-comm-incomplete", Kind.CULPRIT_NAMED, line_of(f'"pid": {missing.get("pid")}'),
                    f"RAS: communicator {comm_hash} is missing its rank {missing.get('rank')}"
                    f" (process {missing.get('pid')} on {missing.get('host')}"
                    f"{', considered dead' if dead else ', unresponsive' if status.get('unresponsive') else ''})",
                    {"comm_id": comm_hash, "pg_rank": str(missing.get("rank", "")),
                     "culprit_pid": str(missing.get("pid", "")), "culprit_ip": str(missing.get("host", "")),
                     "culprit_device": str(missing.get("cuda_dev", "")),
                     "exception": "dead" if dead else "unresponsive" if status.get("unresponsive") else "missing"},
                    category=Category.CRASHED_PROCESS if dead else Category.HUNG_PROCESS)


class _LineFinder:
    """The first line at or after the last one found that holds a needle (evidence for JSON facts)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines, self.at = lines, 0

    def __call__(self, needle: str) -> int:
        for no in _from(self.at, len(self.lines)):
            if needle and needle in self.lines[no]:
                self.at = no
                return no + 1
        return self.at + 1


def _from(start: int, end: int) -> Iterator[int]:
    yield from range(start, end)
    yield from range(0, start)


_INIT_OK, _IN_PROGRESS = 0, 7


def _json_rank(doc: _Doc, line_of: _LineFinder, comm: str, rank: dict[str, Any]) -> None:
    r, pid, host = str(rank.get("rank", "")), str(rank.get("pid", "")), str(rank.get("host", ""))
    who = {"comm_id": comm, "pg_rank": r, "pid": pid, "ip": host, "device": str(rank.get("cuda_dev", ""))}
    no = line_of(f'"pid": {pid}') if pid else line_of(f'"rank": {r}')
    status = rank.get("status") or {}
    state = ("ABORT" if status.get("abort_flag") else
             "FINALIZE" if status.get("finalize_called") or status.get("destroy_flag") else
             "RUNNING" if status.get("init_state", 0) == _INIT_OK else "INIT")
    doc.add("ras-rank-status", Kind.INFO, no, f"RAS: rank {r} of {comm} has status {state}",
            {**who, "comm_status": state})
    for key, phase in (("init_state", "comm_init"), ("async_error", "execution")):
        value = status.get(key, 0)
        if isinstance(value, int) and value not in (_INIT_OK, _IN_PROGRESS):
            remote = value in (2, 6)  # ncclSystemError, ncclRemoteError
            doc.add("ras-rank-reported-remote-error" if remote else "ras-rank-reported-error",
                    Kind.PEER_ERROR if remote else Kind.CULPRIT_NAMED, no,
                    f"RAS: rank {r} of {comm} reported NCCL error {value} ({key})",
                    {"comm_id": comm, "pg_rank": r, "error": str(value),
                     **({"culprit_pid": pid, "culprit_ip": host, "culprit_device": who["device"]} if not remote
                        else {"pid": pid, "ip": host, "device": who["device"]})},
                    phase=Phase(phase), category=None if remote else Category.CRASHED_PROCESS)
    for collective, count in (rank.get("collective_counts") or {}).items():
        if isinstance(count, int):
            doc.add("ras-rank-launched-up-to", Kind.PROGRESS, no,
                    f"RAS: rank {r} of {comm} launched {collective} up to operation {count}",
                    {**who, "seq": str(count), "collective": str(collective)}, phase=Phase.EXECUTION)
