"""Read one source end to end: refuse binary data, decode, scan, count; or read a triage extract."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

from triage import extract
from triage.ingest.open import READ_ERRORS, Stream, read_chunks
from triage.lazy_regex import lazy_re
from triage.model import Event, Evidence, Identity, SourceInfo
from triage.parse import fr, paste, pyspy, ranktable, ras
from triage.parse.scan import Matcher, ScanStats, decode_chunks, scan_text

_SNIFF = 8192
_SNIFF_IDENTITY = 16 << 10
_SNIFF_WRITERS = 4 << 10  # enough lines to see whether several workers interleave


def looks_binary(head: bytes) -> bool:
    """NUL bytes in the first block: a core dump, a pickle, an image — not a log."""
    return b"\x00" in head[:_SNIFF]


# Each begins with a newline, not `^` with MULTILINE: a pattern that begins with a literal is
# searched for it in C, one that begins with `^` is tried at every position. The head is given
# with a newline in front, so its first line counts too.
# `[rank11]:` at the start of a line, after an optional torchrun tee prefix (`[default3]:`).
_HEAD_RANK = lazy_re(r"\n(?:\[[A-Za-z_]\w*?\d+\]:)?\[rank(\d{1,9})\]:")
# torchrun's `[default3]:` tee prefix and srun's ` 3: ` label: several of them mean many writers.
_HEAD_LOCAL = lazy_re(r"\n(?:\[[A-Za-z_][\w-]*?(\d+)\]:|[^\S\n]*(\d+): )")
_HEAD_NCCL_HOST = lazy_re(r"\n(?:\[[^\]\n]*\] )?([A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\] NCCL ")


def sniff_writer(head: str, info: SourceInfo) -> None:
    """Note what the first lines say of their writer; the identity stage weighs it.

    A rank that hung writes no line any rule matches, yet its file must still be known as its own:
    the silent rank is found by the absence of its timeout, not by a line.
    """
    lines = "\n" + head
    # Each pattern is tried where its literal is in the head at all (`in` runs in C).
    info.head_ranks = ({int(r): n for r, n in Counter(_HEAD_RANK.findall(lines)).items()}
                       if "[rank" in lines else {})
    info.head_writers = len({a or b for a, b in _HEAD_LOCAL.findall(lines, 0, _SNIFF_WRITERS + 1)})
    info.head_hosts = dict(Counter(_HEAD_NCCL_HOST.findall(lines))) if " NCCL " in lines else {}


def scan_sources(matcher: Matcher, stream: Stream) -> list[tuple[SourceInfo, list[Event]]]:
    """The sources one stream holds: itself, scanned, or those of a `triage extract` it is.

    An extract is told by its header at the head of the stream (whatever wraps it: gzip, an
    archive member): its sources were scanned where the logs were, and are read back as they were
    found there. The check costs one comparison of the first bytes of every source.
    """
    chunks: Iterator[bytes] = read_chunks(stream)
    try:
        first = next(chunks, b"")
    except READ_ERRORS as exc:
        unread = SourceInfo(name=stream.name, identity=Identity(), skipped=f"cannot be read: {_reason(exc)}")
        return [(unread, [])]
    if extract.looks_like(first):
        found = extract.read(stream.name, itertools.chain([first], chunks),
                             lambda: extract.rules_digest(matcher.rules), READ_ERRORS)
        if stream.notes:  # a decompression budget cut it short
            found.append((SourceInfo(name=stream.name, identity=Identity(),
                                     skipped="; ".join(stream.notes)), []))
        return found
    return [scan_stream(matcher, stream, itertools.chain([first], chunks))]


def scan_stream(matcher: Matcher, stream: Stream,
                chunks: Iterator[bytes] | None = None) -> tuple[SourceInfo, list[Event]]:
    """Events of one source and what was learnt about it; read errors are reported, not raised.

    `chunks`: the stream's bytes, where reading it has begun (its first chunk put back).
    """
    identity = Identity()  # who wrote it is resolved later, by the identity stage
    info = SourceInfo(name=stream.name, identity=identity)
    stats = ScanStats()
    events: list[Event] = []
    try:
        if chunks is None:
            chunks = read_chunks(stream)
        first = next(chunks, b"")
        if (form := fr.sniff(first)) is not None:  # a flight-recorder dump (a pickle, or its JSON)
            events = fr.scan(info, itertools.chain([first], chunks), form)
            info.notes += stream.notes
            return info, events
        if looks_binary(first):
            info.skipped = "binary data, not a text log"
            return info, []
        head = first[:_SNIFF_IDENTITY].decode("utf-8", "replace")
        texts: Iterator[str] = decode_chunks(itertools.chain([first], chunks), stats)
        if (pasted := paste.detect(head)) is not None:
            texts = paste.unwrap(texts, pasted)
            head = "".join(paste.unwrap([head], pasted))
            info.notes.append(pasted.describe())
        sniff_writer(head, info)
        table = None
        whole = False  # the document was the whole source (a rank table): no line rule reads it
        # Documents no line rule can read: HCCL's rank table, a NCCL RAS status dump.
        # py-spy dumps (what `triage watch` takes of each rank): the stack rules read them whole.
        for document, limit in ((ranktable, ranktable.MAX_BYTES), (ras, ras.MAX_BYTES),
                                (pyspy, pyspy.MAX_BYTES)):
            if table is None and document.looks_like(head):
                parts: list[str] = []
                for piece in texts:  # read whole (they are small), but never past their limit
                    parts.append(piece)
                    if sum(map(len, parts)) > limit:
                        break
                text = "".join(parts)
                if document is ras:
                    # A report shares its file with other lines (a job's watchdog lines pasted
                    # with it, a monitor's stdout): the reader reads the report, the line rules
                    # every other line, each at its own line number.
                    report, rest = ras.split(text)
                    table = ras.events(stream.name, report)
                    if table is not None:
                        text = rest
                elif document is pyspy:
                    table = pyspy.events(stream.name, text, matcher.rules)
                    whole = table is not None
                else:
                    table = ranktable.events(stream.name, text)
                    whole = table is not None
                texts = itertools.chain([text], texts)  # the rest, or not one after all: scan it as lines
        if table is not None and whole:
            events = table
            stats.lines = text.count("\n") + (not text.endswith("\n"))
        else:
            events = (table or []) + list(scan_text(matcher, stream.name, identity, texts, stats))
    except READ_ERRORS as exc:
        # A truncated gzip or a read error part-way: keep what was read, say what happened.
        reason = _reason(exc)
        if stats.bytes == 0:
            info.skipped = f"cannot be read: {reason}"
            return info, []
        info.notes.append(f"read stopped early, after {stats.bytes} bytes: {reason}")
    info.notes += stream.notes  # a decompression budget cut: what was read before it is kept
    info.lines, info.bytes, info.events = stats.lines, stats.bytes, len(events)
    if stats.last_line:
        info.last_line = Evidence(stream.name, *stats.last_line)
    info.notes += stats.notes()
    if stats.replaced:
        info.notes.append("not valid UTF-8 in places: those bytes were read as U+FFFD")
    if stats.bytes == 0 and not info.skipped:
        info.notes.append("empty")
    return info, events


def _reason(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:160]
