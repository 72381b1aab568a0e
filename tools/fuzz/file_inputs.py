"""Input classes that are hostile as a file tree: deep folders, special files (FIFOs, devices,
link loops), odd file names.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
from pathlib import Path

from .cases import FIXTURES, text_file


def gen_deep_folders(rng: random.Random, d: Path) -> tuple[list[str], str]:
    depth = rng.choice([50, 200, 400])
    src = text_file(rng)
    here = d / "logs"
    rel = Path("logs")
    name = rng.choice(["a", "rank-1", "node01", "x" * 60])
    for _ in range(depth):
        rel = rel / name
    try:
        full = d / rel
        full.mkdir(parents=True)
    except OSError:  # path too long: build it step by step with a relative cwd
        old = Path.cwd()
        os.chdir(d)
        try:
            for part in rel.parts:
                Path(part).mkdir(exist_ok=True)
                os.chdir(part)
            shutil.copyfile(src, src.name)
        finally:
            os.chdir(old)
        return [str(here.relative_to(d))], f"{depth} levels of {name!r}/ (path over PATH_MAX) around {src.name}"
    shutil.copyfile(src, full / src.name)
    return ["logs"], f"{depth} levels of {name!r}/ around {src.relative_to(FIXTURES)}"


def gen_special_files(rng: random.Random, d: Path) -> tuple[list[str], str]:
    logs = d / "logs"
    logs.mkdir()
    shutil.copyfile(text_file(rng), logs / "rank-0.log")
    kinds = rng.sample(["fifo", "devzero", "procstatus", "loop", "dangling", "dirloop", "devnull",
                        "devurandom", "selfloop"], rng.randrange(1, 4))
    for k in kinds:
        if k == "fifo":
            os.mkfifo(logs / "rank-1.log")
        elif k == "devzero":
            (logs / "rank-2.log").symlink_to("/dev/zero")
        elif k == "devurandom":
            (logs / "rank-7.log").symlink_to("/dev/urandom")
        elif k == "devnull":
            (logs / "rank-6.log").symlink_to("/dev/null")
        elif k == "procstatus":
            (logs / "rank-3.log").symlink_to("/proc/self/status")
        elif k == "loop":
            (logs / "rank-4.log").symlink_to("rank-4b.log")
            (logs / "rank-4b.log").symlink_to("rank-4.log")
        elif k == "selfloop":
            (logs / "self.log").symlink_to("self.log")
        elif k == "dangling":
            (logs / "rank-5.log").symlink_to("/nonexistent/rank-5.log")
        else:
            (logs / "sub").mkdir()
            (logs / "sub" / "up").symlink_to("..")
    # sometimes name the special file itself on the command line
    args = ["logs"]
    if rng.random() < 0.3:
        direct = [p.name for p in logs.iterdir() if p.name != "rank-0.log" and p.name != "sub"]
        if direct:
            args.append("logs/" + rng.choice(direct))
    return args, "folder with " + ", ".join(kinds)


def gen_odd_names(rng: random.Random, d: Path) -> tuple[list[str], str]:
    logs = d / "logs"
    logs.mkdir()
    src = text_file(rng)
    names = rng.sample([
        "rank-1\n.log", "rank\n-2.log", os.fsdecode(b"rank-3-\xff\xfe.log"),
        os.fsdecode(b"\xc3(rank-4.log"), "a!b!rank-5.log", "rank-6.log!x", "-rank-7.log", " rank-8 .log",
        "rank-" + "9" * 200 + ".log", "r" * 250 + ".log", "rank-\u0663.log", "rank-١٢.log", "日志-rank-2.log",
        "rank-1\r.log", "rank-1\t.log", "*.log", "[rank-1].log", "$(id).log", "'.log", "\u202erank-1.log",
        "rank-1.log\x1b[31m", ".hidden-rank-1.log", "worker_99999999999999999999.log",
    ], rng.randrange(1, 5))
    made = []
    for n in names:
        with contextlib.suppress(OSError):
            shutil.copyfile(src, logs / n)
            made.append(n)
    if rng.random() < 0.3 and made:  # a folder with an odd name too
        sub = logs / os.fsdecode(b"dir\n\xff!rank-3")
        sub.mkdir()
        shutil.copyfile(src, sub / "rank-3.log")
    args = ["logs"]
    if rng.random() < 0.4 and made:
        args = ["logs/" + rng.choice(made)]
    return args, f"copies of {src.relative_to(FIXTURES)} named {made!r}"
