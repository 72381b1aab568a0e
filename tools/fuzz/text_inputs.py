"""Input classes that make one text log: a mutated fixture copy, garbage, NUL bytes, odd line
endings, invalid UTF-8, very long lines, huge numbers.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from .cases import FIXTURES, copy_fixture, text_file
from .mutators import MUTATORS


def gen_fixture_mutation(rng: random.Random, d: Path) -> tuple[list[str], str]:
    _, files = copy_fixture(rng, d)
    done = []
    for p in rng.sample(files, min(len(files), rng.randrange(1, 4))):
        mutate = rng.choice(MUTATORS)
        p.write_bytes(mutate(rng, p.read_bytes()))
        done.append(f"{mutate.__name__.strip('_')}({p.relative_to(d)})")
    return ["logs"], "fixture copy, " + ", ".join(done)


def gen_garbage(rng: random.Random, d: Path) -> tuple[list[str], str]:
    size = rng.choice([1, 17, 4096, 65537, 300_000])
    if rng.random() < 0.5:
        data = rng.randbytes(size)
        what = f"{size} random bytes"
    else:  # printable garbage with brackets, braces and percent signs
        alphabet = "abcXYZ0123 []{}()%$\\/:=,.-_|<>\"'\t\n"
        data = "".join(rng.choice(alphabet) for _ in range(size)).encode()
        what = f"{size} printable garbage characters"
    (d / "rank-0.log").write_bytes(data)
    return ["rank-0.log"], what


def gen_nul_bytes(rng: random.Random, d: Path) -> tuple[list[str], str]:
    src = text_file(rng)
    data = src.read_bytes()
    op = rng.randrange(3)
    if op == 0:
        data = b"\0" * rng.choice([1, 1000, 1_000_000])
        what = "all NUL"
    elif op == 1:
        buf = bytearray(data)
        for _ in range(rng.randrange(1, 20)):
            buf[rng.randrange(len(buf) + 1):0] = b"\0" * rng.randrange(1, 9000)
        data = bytes(buf)
        what = f"NUL runs inserted into {src.relative_to(FIXTURES)}"
    else:
        data = data.replace(b"\n", b"\0\n")
        what = f"NUL before every newline of {src.relative_to(FIXTURES)}"
    (d / src.name).write_bytes(data)
    return [src.name], what


def gen_line_endings(rng: random.Random, d: Path) -> tuple[list[str], str]:
    src = text_file(rng)
    data = src.read_bytes()
    op = rng.choice(["crlf", "cr", "mixed", "crcrlf"])
    if op == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif op == "cr":
        data = data.replace(b"\n", b"\r")
    elif op == "crcrlf":
        data = data.replace(b"\n", b"\r\r\n")
    else:
        data = b"".join(line + rng.choice([b"\n", b"\r\n", b"\r", b"\n\r"])
                        for line in data.splitlines())
    (d / src.name).write_bytes(data)
    return [src.name], f"{op} line endings on {src.relative_to(FIXTURES)}"


INVALID_UTF8 = [b"\xff", b"\xfe", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80",
                b"\xe2\x82", b"\x80\x80\x80"]


def gen_invalid_utf8(rng: random.Random, d: Path) -> tuple[list[str], str]:
    src = text_file(rng)
    data = src.read_bytes()
    if rng.random() < 0.3:
        enc = rng.choice(["utf-16", "utf-16-le", "utf-32", "latin-1"])
        data = data.decode("utf-8", "replace").encode(enc, "replace")
        what = f"{src.relative_to(FIXTURES)} re-encoded as {enc}"
    else:
        buf = bytearray(data)
        for _ in range(rng.randrange(1, 40)):
            at = rng.randrange(len(buf) + 1)
            buf[at:at] = rng.choice(INVALID_UTF8)
        data = bytes(buf)
        what = f"invalid UTF-8 sequences inserted into {src.relative_to(FIXTURES)}"
    (d / src.name).write_bytes(data)
    return [src.name], what


ERROR_LINES = [
    b"[rank3]:[E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: "
    b"WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
    b"600011 milliseconds before timing out.",
    b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    b"node01:1234:1234 [0] NCCL INFO comm 0x1 rank 3 nRanks 8 nNodes 1 localRanks 8 localRank 3",
    b"Traceback (most recent call last):",
]


def gen_long_lines(rng: random.Random, d: Path) -> tuple[list[str], str]:
    size = rng.choice([1 << 20, 3 << 20, 6 << 20])
    body = rng.choice([b"a", b"x y ", b"[", b"{}", b"0", b"NCCL WARN "]) * (size // 2)
    head, tail = rng.choice(ERROR_LINES), rng.choice(ERROR_LINES)
    op = rng.randrange(3)
    if op == 0:
        data = head + body + tail + b"\n"
        what = f"one {size >> 20} MB line with error text at both ends"
    elif op == 1:
        data = (head + b"\n") * 3 + body + tail  # no final newline
        what = f"{size >> 20} MB last line without newline"
    else:
        line = body[:100_000] + tail + b"\n"
        data = line * (size // len(line) + 1)
        what = f"{size >> 20} MB of 100 kB lines"
    (d / "rank-3.log").write_bytes(data)
    return ["rank-3.log"], what


HUGE = ["99999999", "100000000", "18446744073709551616", "-1", "9" * 200, "9" * 5000, "0" * 30]


def gen_huge_numbers(rng: random.Random, d: Path) -> tuple[list[str], str]:
    import re

    src = text_file(rng)
    text = src.read_bytes().decode("utf-8", "replace")
    big = rng.choice(HUGE)
    p = rng.random()
    count = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal count
        if rng.random() < p:
            count += 1
            return big
        return m.group()

    text = re.sub(r"\d+", sub, text)
    extra = [f"NCCL INFO comm 0x5 rank {big} nranks {big} cudaDev 0 busId 1000 - Init COMPLETE",
             f"[rank{big}]:[E ProcessGroupNCCL.cpp:1] [Rank {big}] Watchdog caught collective "
             f"operation timeout: WorkNCCL(SeqNum={big}, OpType=ALLREDUCE, Timeout(ms)={big}) ran for {big} ms",
             f"WORLD_SIZE={big} RANK={big} LOCAL_RANK={big}"]
    text += "\n".join(rng.sample(extra, rng.randrange(1, 4))) + "\n"
    name = rng.choice([src.name, f"rank-{big[:40]}.log"])
    (d / name).write_text(text, encoding="utf-8")
    return [name], f"{count} numbers in {src.relative_to(FIXTURES)} set to {big[:20]}{'…' if len(big) > 20 else ''} ({len(big)} chars)"
