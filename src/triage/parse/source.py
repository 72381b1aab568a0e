"""Read one source end to end: refuse binary data, decode, scan, count."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

from triage.ingest.identity import identity_from_path
from triage.ingest.open import READ_ERRORS, Stream, read_chunks
from triage.model import Event, Evidence, Identity, SourceInfo
from triage.parse.prefix import peel
from triage.parse.scan import NCCL_WRITER, Matcher, ScanStats, decode_chunks, scan_text

_SNIFF = 8192
_SNIFF_IDENTITY = 64 << 10


def looks_binary(head: bytes) -> bool:
    """NUL bytes in the first block: a core dump, a pickle, an image — not a log."""
    return b"\x00" in head[:_SNIFF]


def sniff_identity(head: str, identity: Identity) -> None:
    """Learn the writer from the first lines, for sources whose path did not say.

    A rank that hung writes no line any rule matches, yet its file must still be known as its own:
    the silent rank is found by the absence of its timeout, not by a line.
    """
    ranks: Counter[int] = Counter()
    hosts: Counter[str] = Counter()
    for line in head.splitlines()[:400]:
        peeled = peel(line)
        if peeled.identity.rank is not None and "[rankN]" in peeled.identity.learnt_from.get("rank", ""):
            ranks[peeled.identity.rank] += 1
        if (m := NCCL_WRITER.match(peeled.text)) and " NCCL " in peeled.text:
            hosts[m["host"]] += 1
    if identity.rank is None and ranks:
        rank, count = ranks.most_common(1)[0]
        if count >= 0.8 * sum(ranks.values()):
            identity.rank = rank
            identity.learnt_from["rank"] = "[rankN]: prefixes of the first lines"
    if identity.host is None and hosts:
        identity.host = hosts.most_common(1)[0][0]
        identity.learnt_from["host"] = "NCCL line prefixes"


def scan_stream(matcher: Matcher, stream: Stream) -> tuple[SourceInfo, list[Event]]:
    """Events of one source and what was learnt about it; read errors are reported, not raised."""
    identity = identity_from_path(stream.name)
    info = SourceInfo(name=stream.name, identity=identity)
    stats = ScanStats()
    events: list[Event] = []
    try:
        chunks: Iterator[bytes] = read_chunks(stream)
        first = next(chunks, b"")
        if looks_binary(first):
            info.skipped = "binary data, not a text log"
            return info, []
        sniff_identity(first[:_SNIFF_IDENTITY].decode("utf-8", "replace"), identity)
        texts = decode_chunks(itertools.chain([first], chunks), stats)
        events = list(scan_text(matcher, stream.name, identity, texts, stats))
    except READ_ERRORS as exc:
        # A truncated gzip or a read error part-way: keep what was read, say what happened.
        reason = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
        if stats.bytes == 0:
            info.skipped = f"cannot be read: {reason}"
            return info, []
        info.notes.append(f"read stopped early, after {stats.bytes} bytes: {reason}")
    info.lines, info.bytes, info.events = stats.lines, stats.bytes, len(events)
    if stats.last_line:
        info.last_line = Evidence(stream.name, *stats.last_line)
    if stats.replaced:
        info.notes.append("not valid UTF-8 in places: those bytes were read as U+FFFD")
    if stats.bytes == 0 and not info.skipped:
        info.notes.append("empty")
    return info, events
