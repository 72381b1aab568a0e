"""Open what the user gave as streams of log bytes, whatever the wrapping.

Compression (gzip, bz2, xz, zstd) and archives (tar, zip) are recognised by their magic bytes, not
their names, and unwrapped as streams: members are read in place, never extracted to disk, so
memory stays bounded whatever the size of the input.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, cast

CHUNK = 1 << 20
# What a damaged or truncated input raises while it is read; reported per source, never fatal.
READ_ERRORS = (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError, tarfile.TarError,
               zipfile.BadZipFile, RuntimeError, NotImplementedError)
MAX_DEPTH = 4  # archives inside compressed archives inside archives … stop here
MAX_MEMBER_BYTES = 64 << 30  # a member that inflates past this is cut: likely a decompression bomb

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"PK\x03\x04", "zip"),
    (b"PK\x05\x06", "zip"),  # an empty zip
)


@dataclass
class Stream:
    """One source ready to read: a display name and a binary stream of its log text."""

    name: str
    fileobj: IO[bytes]


@dataclass
class Unreadable:
    name: str
    reason: str


def sniff(head: bytes) -> str | None:
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    return None


def _peek(fileobj: IO[bytes], size: int = 512) -> tuple[IO[bytes], bytes]:
    """The first bytes of a stream without consuming them (wrapping it when it cannot peek)."""
    peekable: Any = fileobj if hasattr(fileobj, "peek") else io.BufferedReader(
        cast(Any, fileobj), buffer_size=CHUNK)
    head: bytes = peekable.peek(size)[:size]
    return cast(IO[bytes], peekable), head


def _decompress(kind: str, fileobj: IO[bytes]) -> IO[bytes]:
    if kind == "gzip":
        return cast(IO[bytes], gzip.GzipFile(fileobj=fileobj, mode="rb"))
    if kind == "bz2":
        return cast(IO[bytes], bz2.BZ2File(fileobj, mode="rb"))
    if kind == "xz":
        return cast(IO[bytes], lzma.LZMAFile(fileobj, mode="rb"))
    try:
        import zstandard  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise OSError("zstd-compressed; install the zstd extra: pip install 'triage[zstd]'") from None
    reader: IO[bytes] = zstandard.ZstdDecompressor().stream_reader(fileobj, read_across_frames=True)
    return reader


def expand(name: str, fileobj: IO[bytes], depth: int = 0) -> Iterator[Stream | Unreadable]:
    """Unwrap compression and archives; yield each log stream inside, in order.

    Each yielded stream must be read to its end before the next is asked for: tar members are
    read from one forward-only stream.
    """
    if depth > MAX_DEPTH:
        yield Unreadable(name, f"archives nested deeper than {MAX_DEPTH} levels")
        return
    try:
        fileobj, head = _peek(fileobj)
        kind = sniff(head)
        if kind in ("gzip", "bz2", "xz", "zstd"):
            yield from expand(name, _decompress(kind, fileobj), depth + 1)
            return
        if kind == "tar":
            yield from _tar_members(name, fileobj, depth)
            return
        if kind == "zip":
            yield from _zip_members(name, fileobj, depth)
            return
    except READ_ERRORS as exc:
        yield Unreadable(name, _reason(exc))
        return
    yield Stream(name, fileobj)


def _tar_members(name: str, fileobj: IO[bytes], depth: int) -> Iterator[Stream | Unreadable]:
    with tarfile.open(fileobj=fileobj, mode="r|") as archive:
        members = iter(archive)
        while True:
            try:
                member = next(members, None)
            except READ_ERRORS as exc:
                yield Unreadable(name, f"archive damaged after its readable members: {_reason(exc)}")
                return
            if member is None:
                return
            if not member.isfile():
                continue  # links, devices and folders are never followed or created
            member_name = f"{name}!{member.name}"
            extracted = archive.extractfile(member)
            if extracted is not None:
                yield from expand(member_name, extracted, depth + 1)


def _zip_members(name: str, fileobj: IO[bytes], depth: int) -> Iterator[Stream | Unreadable]:
    if not fileobj.seekable():
        yield Unreadable(name, "a zip archive inside a compressed stream cannot be read in place")
        return
    with zipfile.ZipFile(fileobj) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            member_name = f"{name}!{info.filename}"
            try:
                member = archive.open(info)
            except READ_ERRORS as exc:
                yield Unreadable(member_name, _reason(exc))
                continue
            with member:
                yield from expand(member_name, member, depth + 1)


def read_chunks(stream: Stream) -> Iterator[bytes]:
    """The bytes of a stream in bounded chunks; a stream that inflates without end is cut."""
    total = 0
    while chunk := stream.fileobj.read(CHUNK):
        total += len(chunk)
        if total > MAX_MEMBER_BYTES:
            raise OSError(f"more than {MAX_MEMBER_BYTES >> 30} GiB once decompressed: cut")
        yield chunk


def stdin_stream() -> Stream:
    return Stream("<stdin>", sys.stdin.buffer)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]
