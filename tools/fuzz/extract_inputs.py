"""Input class `extract_mutation`: a `triage extract` file of a fixture, mutated.
"""

from __future__ import annotations

import gzip
import json
import random
import tempfile
import threading
from pathlib import Path

from .cases import FIXTURES, copy_fixture, fixture_logs
from .mutators import flip, shuffle_lines, truncate

_EXTRACTS: dict[Path, bytes] = {}
_EXTRACT_LOCK = threading.Lock()


def _extract_of(logs: Path) -> bytes:
    """`triage extract` of a fixture's logs (made once per fixture, in this process)."""
    with _EXTRACT_LOCK:
        if logs not in _EXTRACTS:
            from triage.api import extract

            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "x.jsonl"
                extract([logs], out, host="node07")
                _EXTRACTS[logs] = out.read_bytes()
        return _EXTRACTS[logs]


def _json_mutation(rng: random.Random, data: bytes) -> bytes:
    """One line of the extract with one value replaced by a hostile one (valid JSON still)."""
    lines = data.split(b"\n")
    at = rng.randrange(len(lines))
    try:
        doc = json.loads(lines[at])
    except ValueError:
        return data
    hostile = rng.choice([None, -1, 2**70, 1e308, "", "x" * 100_000, [], {}, [[[[[]]]]], True,
                          "9" * 5000, {"rank": -5}, ["a"] * 10000, "\ud800", "../../etc/passwd"])

    def poke(node: object, depth: int = 0) -> object:
        if isinstance(node, dict) and node and depth < 6:
            key = rng.choice(sorted(node))
            node[key] = hostile if rng.random() < 0.4 else poke(node[key], depth + 1)
        elif isinstance(node, list) and node and depth < 6:
            i = rng.randrange(len(node))
            node[i] = hostile if rng.random() < 0.4 else poke(node[i], depth + 1)
        return node

    lines[at] = json.dumps(poke(doc)).encode()
    return b"\n".join(lines)


def gen_extract_mutation(rng: random.Random, d: Path) -> tuple[list[str], str]:
    logs = rng.choice(fixture_logs())
    data = _extract_of(logs)
    mutate = rng.choice([flip, truncate, shuffle_lines, _json_mutation])
    data = mutate(rng, data)
    name = "node07.jsonl"
    if rng.random() < 0.3:
        data, name = gzip.compress(data), name + ".gz"
    (d / name).write_bytes(data)
    args = [name]
    if rng.random() < 0.3:  # beside raw logs, as a mixed analysis gets them
        copy_fixture(rng, d)
        args.append("logs")
    return args, f"extract of {logs.relative_to(FIXTURES)}, {mutate.__name__.strip('_')}"
