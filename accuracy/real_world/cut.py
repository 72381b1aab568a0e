"""Cut raw runs ($RW_RUNS/<run>) into cases: the input as a user would hand it over + truth.yaml.

A cut only selects files or lines.  Two cuts transform, and say how: `paste*` hard-wraps every
line at 80 or 100 columns (no regard for words), optionally prefixing `> `; `crashloop` is stored
as its base file plus a recorded line and count, and score.py expands it at score time (the line
repeated with advancing timestamps) so that the repo holds kilobytes, not megabytes.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import tarfile
from pathlib import Path

import yaml
from make import CASES, PHASES, RAW, SEED

SPEAKS = {  # faults whose own rank prints what went wrong: (python error type the [rankR]: line carries)
    "exception": r"ValueError",
    "oom": r"RuntimeError: .*(alloc|memory|bytes)",
    "memoryerror": r"MemoryError",
    "assert": r"AssertionError",
}
SIGNAL_EXIT = {"sigkill": "-9", "segfault": "-11", "abort": "-6"}
SHOWS_FAILURE = re.compile(r"Error|ERROR|\[E\d{4}|Traceback|[Tt]imed out|timeout|exitcode|Signal \d+|FAILED|failed|NCCL WARN"
                           r"|INCOMPLETE|DEAD|MISMATCH|stuck|SIGKILL|killed")


# A line of the job that says where it stood (a step, a collective, init, a store wait).
PHASE_SAID = re.compile(r"step \d+|all_reduce|broadcast|init_process_group|Timed out|monitoredBarrier|DistStoreError"
                        r"|rendezvous|reduce_grads|weight sync|SeqNum|SequenceNumber|RUNNING|AllReduce|WorkNCCL|phase \w+")


def failure_visible(inp: Path) -> bool:
    """Whether anything in the cut shows a failure at all (a cut of a failed job can show none: the
    files of a rank SIGTERMed mid-step, a SIGKILLed rank's own file)."""
    return any(SHOWS_FAILURE.search(text) for p in inp.rglob("*") if p.is_file() for text in _texts(p))


def _texts(path: Path) -> list[str]:
    """A file's text, or each member's text when it is a tar archive (a tree cut is shared as one)."""
    if tarfile.is_tarfile(path):
        with tarfile.open(path) as tar:
            return [f.read().decode(errors="replace") for m in tar.getmembers()
                    if m.isfile() and (f := tar.extractfile(m)) is not None]
    return [path.read_text(errors="replace")]


def rank_dir(raw: Path, spec: dict, rank: int) -> Path:
    node = raw / f"node{rank // spec['nproc'] + 1:02d}" if spec["nodes"] > 1 else raw
    return next((node / "logs").glob(f"*/attempt_0/{rank % spec['nproc']}"))


def node_of(raw: Path, spec: dict, rank: int) -> Path:
    return raw / f"node{rank // spec['nproc'] + 1:02d}" if spec["nodes"] > 1 else raw


def excerpt_names_culprit(text: str, spec: dict) -> tuple[bool, str]:
    """Whether an excerpt holds the culprit's own failure (its signal exit record or its own error)."""
    r, fault = spec["rank"], spec["fault"]
    if fault in SIGNAL_EXIT:
        for m in re.finditer(r"rank\s*:\s*(\d+) \(local_rank: \d+\)\s*\n\s*exitcode\s*:\s*(-?\d+)", text):
            if int(m.group(1)) == r and m.group(2) == SIGNAL_EXIT[fault]:
                return True, f"torchrun's failure record of rank {r} (exitcode {SIGNAL_EXIT[fault]}) is in the excerpt"
        return False, "the culprit's exit record is not in the excerpt; the lines left are victims' and teardown"
    if fault in SPEAKS and re.search(rf"\[rank{r}\]:.*{SPEAKS[fault]}", text):
        return True, f"rank {r}'s own error ({SPEAKS[fault]}) is in the excerpt"
    return False, "nothing in the excerpt sets the culprit apart (victims' timeouts, teardown, summary)"


def wrap(text: str, width: int, prefix: str) -> str:
    step = width - len(prefix)
    out = []
    for line in text.splitlines():
        out += [prefix + line[i:i + step] for i in range(0, len(line), step)] or [prefix]
    return "\n".join(out) + "\n"


def crashloop_line(raw: Path, spec: dict) -> tuple[str, str]:
    """The line a crash loop would repeat: the culprit's last error line if it has one, else a victim's."""
    cons = (node_of(raw, spec, spec["rank"]) / "console.log").read_text(errors="replace").splitlines()
    stamp = r"(?:[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6}|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})"
    pats = [r"failed to connect", stamp + r".*(?:ERROR|Error|failed)", rf"\[rank{spec['rank']}\]:.*Error",
            r"RuntimeError: .*Timed out", r"RuntimeError", r"Error"]
    for p in pats:
        hits = [ln for ln in cons if re.search(p, ln)]
        if hits:
            return hits[-1], f"the last console line matching /{p}/"
    return cons[-1], "the console's last line"


def cut_all(names: list[str]) -> None:
    from make import RUNS  # the set make.py was asked for (runs.py by default)
    CASES.mkdir(exist_ok=True)
    for name in names:
        raw = RAW / name
        if not (raw / "meta.json").exists():
            print(f"{name}: no raw run; skipped")
            continue
        meta = json.loads((raw / "meta.json").read_text())
        spec = RUNS[name]
        for cut in spec["cuts"]:
            make_case(name, spec, meta, raw, cut)


def make_case(name: str, spec: dict, meta: dict, raw: Path, cut: str) -> None:
    rng = random.Random(f"{SEED}:{name}:{cut}")  # noqa: S311 (a recorded cut choice, not a secret)
    case = CASES / f"{name}--{cut}"
    if case.exists():
        shutil.rmtree(case)
    inp = case / "input"
    inp.mkdir(parents=True)
    failed = spec["fault"] != "none"
    r = spec["rank"]
    knowable, why = failed, "the whole of what this cut shows of the job"
    phase_knowable = failed
    gen = None
    cnode = node_of(raw, spec, r) if failed else raw
    world = spec["nodes"] * spec["nproc"]
    if cut == "tree":
        for p in sorted(raw.iterdir()):
            if p.name != "meta.json":
                (shutil.copytree if p.is_dir() else shutil.copy)(p, inp / p.name)
        how = "the whole output: every agent's console.log and --log-dir tree, as written"
        if rng.random() < 0.5:  # as an attachment: the same tree in one .tar.gz
            with tarfile.open(case / "logs.tar.gz", "w:gz") as tar:
                for p in sorted(inp.rglob("*")):
                    tar.add(p, arcname=str(Path("job-logs") / p.relative_to(inp)), recursive=False)
            shutil.rmtree(inp)
            inp.mkdir()
            shutil.move(case / "logs.tar.gz", inp / "job-logs.tar.gz")
            how += ", attached as one archive (input/job-logs.tar.gz, members under job-logs/)"
    elif cut == "console":
        shutil.copy(cnode / "console.log", inp / "console.log")
        how = f"only the launcher console of the culprit's node ({cnode.relative_to(raw) / 'console.log' if cnode != raw else 'console.log'})"
        if spec["nodes"] > 1:
            knowable, why = True, "the culprit's node's console (--tee) holds all its ranks' lines and the agent's failure records"
    elif cut in ("host", "otherhost"):
        n = r // spec["nproc"] if cut == "host" else 1 - r // spec["nproc"]
        host = raw / f"node{n + 1:02d}"
        shutil.copytree(host, inp / host.name)
        how = f"one node's folder only ({host.name}: console.log and --log-dir tree), node rank {n}"
        if cut == "otherhost":
            knowable, why = False, ("only the other node's logs: its ranks are victims; what they say of the peer "
                                    "they lost (an address, a timeout) does not name the rank")
    elif cut in ("consoles", "othercons"):
        nodes = range(spec["nodes"]) if cut == "consoles" else [1 - r // spec["nproc"]]
        for n in nodes:
            shutil.copy(raw / f"node{n + 1:02d}" / "console.log", inp / f"node{n}-console.log")
        how = ("both agents' consoles in one folder, named by node rank (node0-console.log, node1-console.log)"
               if cut == "consoles" else f"only the other node's console (node{nodes[0]}-console.log)")
        if cut == "othercons":
            knowable, why = False, "only the other node's console: its ranks are victims"
    elif cut in ("culprit", "victim"):
        who = r if cut == "culprit" else rng.choice([x for x in range(world) if x != r])
        d = rank_dir(raw, spec, who)
        rel = d.relative_to(node_of(raw, spec, who) / "logs")
        (inp / rel).mkdir(parents=True)
        for f in ("stdout.log", "stderr.log"):
            shutil.copy(d / f, inp / rel / f)
        how = f"one rank's files only: rank {who}'s {rel}/stdout.log and stderr.log"
        if cut == "culprit":
            if spec["fault"] in SPEAKS:
                knowable, why = True, "the culprit's own file holds its own error, local by nature"
            else:
                knowable, why = False, "the culprit's own file: its failure does not say it is the cause"
        else:
            knowable, why = False, f"a victim's file alone (rank {who}): it shows only its own wait/loss"
            if re.search(rf"Ranks? {r} failed to pass monitoredBarrier", (d / "stderr.log").read_text(errors="replace")):
                knowable, why = True, f"the victim's (rank {who}) monitored barrier names rank {r}"
    elif cut.startswith("screen"):
        n = int(cut[6:])
        lines = (cnode / "console.log").read_text(errors="replace").splitlines(keepends=True)
        text = "".join(lines[-n:])
        (inp / "screen.txt").write_text(text)
        how = f"a screen excerpt: the last {n} lines of the culprit's node's console.log"
        if failed:
            knowable, why = excerpt_names_culprit(text, spec)
            if not PHASE_SAID.search(text):
                phase_knowable = False
    elif cut.startswith("paste"):
        width = int(re.match(r"\d+", cut[5:]).group())
        prefix = "> " if cut.endswith("q") else ""
        text = (cnode / "console.log").read_text(errors="replace")
        (inp / "paste.txt").write_text(wrap(text, width, prefix))
        how = (f"the culprit's node's console.log as pasted into an issue: every line hard-wrapped at {width} columns"
               + (" and prefixed with '> '" if prefix else ""))
    elif cut == "mixed":
        who = rng.choice([x for x in range(world) if x != r])
        d = rank_dir(raw, spec, who)
        text = (cnode / "console.log").read_bytes() + (d / "stderr.log").read_bytes()
        (inp / "job-output.txt").write_bytes(text)
        how = f"one file holding two formats: the console.log followed by rank {who}'s stderr.log (its raw lines)"
    elif cut == "crashloop":
        shutil.copy(cnode / "console.log", inp / "console.log")
        line, which = crashloop_line(raw, spec)
        gen = {"kind": "crashloop", "file": "console.log", "line": line, "repeat": 30000,
               "step_ms": 10, "chosen": which}
        how = ("the culprit's node's console.log followed by a crash loop: one of its own lines repeated 30,000 times "
               "with advancing timestamps (expanded by score.py at score time)")
    else:
        raise ValueError(cut)
    truth = {
        "failed": failed,
        "failure_visible": failed and failure_visible(inp),
        "culprit": {"kind": "rank", "rank": r} if failed else None,
        "phase": PHASES[spec["phase"]] if failed else None,
        "category": spec.get("category"),
        "knowable": knowable,
        "phase_knowable": phase_knowable,
        "why": why,
    }
    doc = {
        "case": case.name,
        "source": "real run made here: torchrun + tests/generators/real_job.py (unchanged), gloo on CPU",
        "run": name,
        "commands": meta["commands"],
        "torch": meta["torch"],
        "date": meta["date"],
        "injected": {k: spec[k] for k in ("fault", "rank", "phase", "step")} | {
            "world_size": world, "nodes": spec["nodes"], "nproc_per_node": spec["nproc"],
            "gloo_timeout_s": spec["timeout"], "env": spec["env"], "launch": spec["launch"]},
        "seed": SEED,
        "cut": {"kind": cut, "how": how},
        "truth": truth,
    }
    if gen:
        doc["generate"] = gen
    (case / "truth.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, width=110, allow_unicode=True))
    print(f"{case.name}: knowable={knowable}", flush=True)
