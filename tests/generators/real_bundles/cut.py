"""Cut a partial input from a real bundle on disk (files copied, never edited; the paste is the one
transformation)."""

from __future__ import annotations

import shutil
from pathlib import Path

from .expected import truth_of, write_expected
from .run import FIXTURES, run_checks
from .scenarios import SCENARIOS


def _rank_dirs(src_logs: Path, nproc: int, rank: int) -> list[Path]:
    host = f"node{rank // nproc + 1:02d}"
    return sorted((src_logs / host).glob(f"*/attempt_0/{rank % nproc}"))


def make_partial(name: str, spec: dict) -> list[str]:
    src_name = spec["source"]
    src_spec = SCENARIOS[src_name]
    src = FIXTURES / src_name / "logs"
    if not src.is_dir():
        return [f"source bundle {src_name} is missing; run it first"]
    dest = FIXTURES / name
    if dest.exists():
        shutil.rmtree(dest)
    logs = dest / "logs"
    logs.mkdir(parents=True)
    kind, *params = spec["cut"]
    if kind == "ranks":
        for rank in params[0]:
            for d in _rank_dirs(src, src_spec["nproc"], rank):
                shutil.copytree(d, logs / d.relative_to(src))
        how = f"only the --log-dir files (stdout.log, stderr.log) of rank(s) {params[0]}"
    elif kind == "hosts":
        for host in params[0]:
            shutil.copytree(src / host, logs / host)
        how = f"only the host folder(s) {', '.join(params[0])} (console.log and --log-dir tree)"
    elif kind == "console":
        for host in params[0]:
            (logs / host).mkdir()
            shutil.copy(src / host / "console.log", logs / host / "console.log")
        how = f"only the launcher console ({', '.join(h + '/console.log' for h in params[0])})"
    elif kind == "paste":
        host, prefix, width = params
        text = (src / host / "console.log").read_text(errors="replace")
        step = width - len(prefix)
        out = []
        for line in text.splitlines():
            pieces = [line[i:i + step] for i in range(0, len(line), step)] or [""]
            out += [prefix + p for p in pieces]
        (logs / "console-paste.txt").write_text("\n".join(out) + "\n")
        how = (f"{host}/console.log as pasted into an issue: every line hard-wrapped at {width} "
               f"columns (cut into pieces of at most {step} characters, no regard for words) and "
               f"each piece prefixed with {prefix!r}; the only transformation, written as "
               f"logs/console-paste.txt")
    else:
        raise ValueError(kind)
    desc = (f"Partial input cut from {src_name} ({src_spec['what']}): {how}. "
            f"Expected: {spec['why']}")
    write_expected(dest, name, desc, spec["expect"], truth_of(src_spec),
                   extra=[f"source: {src_name}"])
    problems = run_checks(dest, spec.get("checks", []))
    print(f"{name}: cut {kind} from {src_name}", flush=True)
    for prob in problems:
        print(f"  PROBLEM: {prob}", flush=True)
    return problems
