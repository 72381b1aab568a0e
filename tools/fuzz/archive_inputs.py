"""Input class `archives`: compressed and archived logs, truncated, nested, bombs, evil members,
wrong extensions.
"""

from __future__ import annotations

import gzip
import io
import random
import tarfile
import zipfile
from pathlib import Path

from .cases import log_files
from .mutators import flip, truncate


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _tar_bytes(members: dict[str, bytes], mode: str = "w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as t:  # type: ignore[call-overload]
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def gen_archives(rng: random.Random, d: Path) -> tuple[list[str], str]:
    files = log_files(rng)[:64]
    members = {f"logs/{p.name}": p.read_bytes() for p in files}
    op = rng.choice(["gz", "gz-trunc", "zip", "zip-trunc", "tgz", "tgz-trunc", "tar", "zip-in-tar",
                     "zip-in-zip", "gz-bomb", "zip-bomb", "tar-bomb", "tar-evil", "zip-many",
                     "wrong-ext", "gz-in-gz", "zip-flipped"])
    name = "job"
    if op.startswith("gz") and op != "gz-bomb":
        src = rng.choice(files)
        data = gzip.compress(src.read_bytes())
        if op == "gz-in-gz":
            data = gzip.compress(data)
        if op == "gz-trunc":
            data = truncate(rng, data)
        name = f"{src.name}.gz"
    elif op in ("zip", "zip-trunc", "zip-flipped"):
        data = _zip_bytes(members)
        data = truncate(rng, data) if op == "zip-trunc" else data
        data = flip(rng, data) if op == "zip-flipped" else data
        name = "job.zip"
    elif op in ("tgz", "tgz-trunc"):
        data = _tar_bytes(members, "w:gz")
        data = truncate(rng, data) if op == "tgz-trunc" else data
        name = "job.tar.gz"
    elif op == "tar":
        data, name = _tar_bytes(members), "job.tar"
    elif op == "zip-in-tar":
        data, name = _tar_bytes({"inner/job.zip": _zip_bytes(members)}), "outer.tar"
    elif op == "zip-in-zip":
        data = _zip_bytes(members)
        for _ in range(rng.randrange(1, 6)):
            data = _zip_bytes({"nested.zip": data})
        name = "outer.zip"
    elif op == "gz-bomb":
        data, name = gzip.compress(b"\0" * (20 << 20), 9), "rank-0.log.gz"
    elif op == "zip-bomb":
        data = _zip_bytes({f"logs/rank-{i}.log": b"A" * (20 << 20) for i in range(rng.randrange(1, 4))})
        name = "bomb.zip"
    elif op == "tar-bomb":
        data, name = _tar_bytes({"rank-0.log": b"\n" * (20 << 20)}, "w:gz"), "bomb.tar.gz"
    elif op == "tar-evil":  # absolute and parent names, a link member, a FIFO member, a device
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            for n, data in [("/etc/evil.log", b"x\n"), ("../../up.log", b"y\n"), ("a/../../b.log", b"z\n")]:
                info = tarfile.TarInfo(n)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            for n, kind, target in [("link.log", tarfile.SYMTYPE, "/dev/zero"),
                                    ("hard.log", tarfile.LNKTYPE, "/proc/self/status"),
                                    ("fifo.log", tarfile.FIFOTYPE, ""),
                                    ("chr.log", tarfile.CHRTYPE, "")]:
                info = tarfile.TarInfo(n)
                info.type, info.linkname = kind, target
                t.addfile(info)
            src = rng.choice(files)
            info = tarfile.TarInfo("logs/" + src.name)
            payload = src.read_bytes()
            info.size = len(payload)
            t.addfile(info, io.BytesIO(payload))
        data, name = buf.getvalue(), "evil.tar"
    elif op == "zip-many":
        data = _zip_bytes({f"d{i % 50}/rank-{i}.log": b"hello\n" for i in range(5000)})
        name = "many.zip"
    else:  # wrong-ext: a text file called .gz/.zip, or a gzip called .log
        src = rng.choice(files)
        if rng.random() < 0.5:
            data, name = src.read_bytes(), src.name + rng.choice([".gz", ".zip", ".tar", ".zst", ".tgz"])
        else:
            data, name = gzip.compress(src.read_bytes()), src.name + ".log"
    (d / name).write_bytes(data)
    return [name], f"{op} archive ({len(data)} bytes)"
