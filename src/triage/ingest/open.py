"""Open what the user gave as streams of log bytes, whatever the wrapping.

Compression (gzip, bz2, xz, zstd) and archives (tar, zip) are recognised by their magic bytes, not
their names, and unwrapped as streams: members are read in place, never extracted to disk, so
memory stays bounded whatever the size of the input.
"""

from __future__ import annotations

import bz2
import io
import lzma
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any, cast

CHUNK = 1 << 20
# What a damaged or truncated input raises while it is read; reported per source, never fatal.
READ_ERRORS = (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError, tarfile.TarError,
               zipfile.BadZipFile, RuntimeError, NotImplementedError)
MAX_DEPTH = 4  # archives inside compressed archives inside archives … stop here
MAX_MEMBER_BYTES = 64 << 30  # a member that inflates past this is cut: likely a decompression bomb
# Decompression bombs, per input (one file, or stdin): what its compressed streams inflate to is
# bounded in total, and, past a first stretch every real log gets, in ratio to the bytes read from it.
MAX_EXPANDED_BYTES = 2 << 30  # decompressed bytes from one input, all its members together
# Decompressed bytes per compressed byte read. Real logs inflate 5-50 times, but a crash loop (one
# line printed a million times) gzips at about 258:1, and a real gzipped crash loop must be read
# whole: above deflate's own limit (about 1,032:1, what gzip makes of one byte repeated), no gzip
# stream is ever cut by ratio. bzip2, xz and zstd go far past it (an xz of 2,000 MB of one line is
# 300 KB, about 7,000:1): those are cut here, and every input by MAX_EXPANDED_BYTES.
MAX_RATIO = 1100
RATIO_GRACE_BYTES = 8 << 20  # the ratio is not judged before this much has been decompressed
# A zip inside a compressed stream or another archive cannot be read in place (a zip needs seeks):
# read into memory when it is at most this big, skipped with a reason when larger.
MAX_NESTED_ZIP_BYTES = 64 << 20
_RAW_BUFFER = 64 << 10  # small, so the count of compressed bytes read stays close to what was used

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"PK\x03\x04", "zip"),
    (b"PK\x05\x06", "zip"),  # an empty zip
)


class _Counting(io.RawIOBase):
    """A raw reader over another stream that counts the bytes read from it (the compressed side)."""

    def __init__(self, inner: IO[bytes]) -> None:
        super().__init__()
        self.inner = inner
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        inner: Any = self.inner
        if isinstance(inner, io.RawIOBase):
            got = inner.readinto(buffer) or 0
        else:
            data = inner.read1(len(buffer)) if hasattr(inner, "read1") else inner.read(len(buffer))
            got = len(data)
            buffer[:got] = data
        self.count += got
        return got

    def seekable(self) -> bool:
        return _seekable(self.inner)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self.inner.seek(offset, whence)

    def tell(self) -> int:
        return self.inner.tell()


@dataclass
class Budget:
    """What one input may inflate to (see MAX_EXPANDED_BYTES, MAX_RATIO), shared by its streams."""

    counter: _Counting
    expanded: int = 0  # bytes out of decompressors, all this input's streams together
    cut: str | None = None  # why reading stopped, once it has

    def spend(self, size: int) -> str | None:
        self.expanded += size
        read_in = max(self.counter.count, 1)
        if self.expanded > MAX_EXPANDED_BYTES:
            self.cut = (f"stopped reading after {self.expanded >> 20} MB: more than "
                        f"{MAX_EXPANDED_BYTES >> 20} MB decompressed from one input")
        elif self.expanded > RATIO_GRACE_BYTES and self.expanded > MAX_RATIO * read_in:
            self.cut = (f"stopped reading after {self.expanded >> 20} MB: expansion ratio above "
                        f"{MAX_RATIO} (likely a decompression bomb)")
        return self.cut


@dataclass
class Stream:
    """One source ready to read: a display name and a binary stream of its log text."""

    name: str
    fileobj: IO[bytes]
    budget: Budget | None = None  # the input's decompression budget, for inflated streams
    notes: list[str] = field(default_factory=list)  # what reading it ran into (a budget cut)


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


class _Damaged(io.RawIOBase):
    """A decompressor's stream whose own errors (zstd's ZstdError, a damaged deflate, bz2 or xz
    stream, whatever a decompressor raises on bad input) read as the input error they are: an
    OSError naming the format, so a damaged file is one skipped source, never the end of the run."""

    def __init__(self, kind: str, inner: IO[bytes], errors: tuple[type[BaseException], ...]) -> None:
        super().__init__()
        self.kind, self.inner, self.errors = kind, inner, errors

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            inner: Any = self.inner
            data = inner.read1(len(buffer)) if hasattr(inner, "read1") else inner.read(len(buffer))
        except READ_ERRORS + self.errors as exc:
            raise OSError(f"damaged {self.kind} data: {_reason(exc)}") from exc
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self.inner.close()
        except READ_ERRORS + self.errors:
            pass
        super().close()


def _decompress(kind: str, fileobj: IO[bytes]) -> IO[bytes]:
    errors: tuple[type[BaseException], ...] = ()
    inner: IO[bytes]
    if kind == "gzip":
        import gzip  # here: most logs are read as they are

        inner = cast(IO[bytes], gzip.GzipFile(fileobj=fileobj, mode="rb"))
    elif kind == "bz2":
        inner = cast(IO[bytes], bz2.BZ2File(fileobj, mode="rb"))
    elif kind == "xz":
        inner = cast(IO[bytes], lzma.LZMAFile(fileobj, mode="rb"))  # noqa: SIM115 (closed with its reader)
    else:
        try:
            import zstandard  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise OSError("zstd-compressed; install the zstd extra: pip install 'triage[zstd]'") from None
        errors = (zstandard.ZstdError,)
        try:
            inner = zstandard.ZstdDecompressor().stream_reader(fileobj, read_across_frames=True)
        except errors as exc:
            raise OSError(f"damaged zstd data: {_reason(exc)}") from exc
    return cast(IO[bytes], io.BufferedReader(_Damaged(kind, inner, errors), buffer_size=CHUNK))


def display_name(name: str) -> str:
    """A name fit for JSON and a terminal line, whatever bytes the file system gave.

    Bytes that are not UTF-8 (surrogate-escaped by Python) show as `\\xff`; newlines, tabs and
    other unprintable characters as `\\n`, `\\t`, `\\x1b`, `\\u2028`.
    """
    if name.isprintable():
        return name
    out: list[str] = []
    for char in name:
        code = ord(char)
        if char.isprintable():
            out.append(char)
        elif 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, as surrogateescape keeps it
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char])
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


def expand(name: str, fileobj: IO[bytes], depth: int = 0, budget: Budget | None = None,
           inflated: bool = False) -> Iterator[Stream | Unreadable]:
    """Unwrap compression and archives; yield each log stream inside, in order.

    Each yielded stream must be read to its end before the next is asked for: tar members are
    read from one forward-only stream. At depth 0 the input gets its decompression budget.
    """
    if budget is None:
        counter = _Counting(fileobj)
        fileobj = cast(IO[bytes], io.BufferedReader(counter, buffer_size=_RAW_BUFFER))
        budget = Budget(counter)
    if depth > MAX_DEPTH:
        yield Unreadable(name, f"archives nested deeper than {MAX_DEPTH} levels")
        return
    if budget.cut:
        yield Unreadable(name, f"not read: {budget.cut}")
        return
    try:
        fileobj, head = _peek(fileobj)
        kind = sniff(head)
        if kind in ("gzip", "bz2", "xz", "zstd"):
            yield from expand(name, _decompress(kind, fileobj), depth + 1, budget, True)
            return
        if kind == "tar":
            yield from _tar_members(name, fileobj, depth, budget, inflated)
            return
        if kind == "zip":
            yield from _zip_members(name, fileobj, depth, budget)
            return
    except READ_ERRORS as exc:
        yield Unreadable(name, _reason(exc))
        return
    yield Stream(name, fileobj, budget if inflated else None)


def _seekable(fileobj: IO[bytes]) -> bool:
    try:
        return bool(fileobj.seekable())
    except (AttributeError, OSError, ValueError):  # a tar member of a stream: its _Stream cannot say
        return False


def _tar_members(name: str, fileobj: IO[bytes], depth: int, budget: Budget,
                 inflated: bool) -> Iterator[Stream | Unreadable]:
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
            member_name = f"{name}!{display_name(member.name)}"
            extracted = archive.extractfile(member)
            if extracted is not None:
                yield from expand(member_name, extracted, depth + 1, budget, inflated)


def _zip_members(name: str, fileobj: IO[bytes], depth: int,
                 budget: Budget) -> Iterator[Stream | Unreadable]:
    if depth > 0 or not _seekable(fileobj):
        # Inside another archive or a compressed stream: a zip needs seeks, so read it whole into
        # memory, when it is small enough.
        data = fileobj.read(MAX_NESTED_ZIP_BYTES + 1)
        if len(data) > MAX_NESTED_ZIP_BYTES:
            yield Unreadable(name, f"a zip archive inside another archive or a compressed stream, "
                             f"larger than {MAX_NESTED_ZIP_BYTES >> 20} MB: skipped")
            return
        if budget.spend(len(data)) is not None:
            yield Unreadable(name, f"not read: {budget.cut}")
            return
        fileobj = io.BytesIO(data)
    with zipfile.ZipFile(fileobj) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            member_name = f"{name}!{display_name(info.filename)}"
            try:
                member = archive.open(info)
            except READ_ERRORS as exc:
                yield Unreadable(member_name, _reason(exc))
                continue
            with member:
                yield from expand(member_name, member, depth + 1, budget,
                                  info.compress_type != zipfile.ZIP_STORED)


def read_chunks(stream: Stream) -> Iterator[bytes]:
    """The bytes of a stream in bounded chunks; a stream that inflates without end is cut."""
    total = 0
    budget = stream.budget
    while chunk := stream.fileobj.read(CHUNK):
        total += len(chunk)
        if total > MAX_MEMBER_BYTES:
            raise OSError(f"more than {MAX_MEMBER_BYTES >> 30} GiB once decompressed: cut")
        if budget is not None and (cut := budget.spend(len(chunk))) is not None:
            stream.notes.append(cut)  # what was read is kept; the rest is not read
            # Up to its last whole line: the line the cut falls in is not read as a line of its
            # own (a crash loop's error line cut in two would read as another error).
            yield chunk[:chunk.rfind(b"\n") + 1]
            return
        yield chunk


def stdin_stream() -> Stream:
    return Stream("<stdin>", sys.stdin.buffer)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]
