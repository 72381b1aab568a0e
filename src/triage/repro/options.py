"""The options of one repro run, shared by the command, the coordinator and every rank."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from triage.lazy_regex import lazy_compile
from triage.repro.protocol import PHASES

INJECT_KINDS = ("hang", "crash", "kill", "slow", "wrong-value")
BACKENDS = ("auto", "nccl", "gloo")
# Message sizes: nccl needs large messages to approach peak bus bandwidth (nccl-tests issue 212);
# gloo on CPU is two orders of magnitude slower, so its defaults stay small.
DEFAULT_SIZES = {"nccl": "1M,64M,1G", "gloo": "1K,1M,16M"}
DEFAULT_ITERS = 20
DEFAULT_TIMEOUT_S = 30.0

_SIZE = lazy_compile(r"(?i)^\s*(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[KMGT]?)(?:i?B)?\s*$")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class OptionError(ValueError):
    """A usage error: the message says which option and what is wrong with it."""


def parse_sizes(text: str) -> list[int]:
    """`1K,1M,64M` -> byte counts (binary units, as nccl-tests reads -b/-e)."""
    sizes: list[int] = []
    for part in text.split(","):
        m = _SIZE.match(part)
        if m is None:
            raise OptionError(f"--sizes: {part.strip()!r} is not a size (write e.g. 1K,1M,64M)")
        size = int(float(m["num"]) * _UNITS[m["unit"].upper()])
        if size < 4:
            raise OptionError(f"--sizes: {part.strip()!r} is smaller than one float32 element")
        sizes.append(size)
    return sizes


def format_size(size: int) -> str:
    """1048576 -> `1M`; sizes that are not a whole unit keep a decimal (`1.5K`)."""
    for unit in ("T", "G", "M", "K"):
        scale = _UNITS[unit]
        if size >= scale:
            value = size / scale
            return f"{value:g}{unit}" if value == int(value) else f"{value:.1f}{unit}"
    return f"{size}B"


@dataclass
class Injection:
    kind: str  # one of INJECT_KINDS
    rank: int  # in job ranks
    phase: str  # one of PHASES


@dataclass
class ReproOptions:
    backend: str  # nccl | gloo (resolved; never auto here)
    deadlines: dict[str, float]  # phase -> seconds
    sizes: list[int]  # bytes per all-reduce
    iters: int
    log_dir: str
    inject: Injection | None = None
    # Job ranks of the processes of this run, in group-rank order; the whole job unless bisecting.
    group: list[int] = field(default_factory=list)
    job_world_size: int = 0
    ranks_per_gpu: int = 1  # >1: several ranks share a GPU, each its own NCCL host (NCCL_HOSTID)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ReproOptions:
        data: dict[str, Any] = json.loads(text)
        inject = data.pop("inject", None)
        return cls(**data, inject=Injection(**inject) if inject else None)


def deadlines_from(timeout: float, overrides: dict[str, float | None]) -> dict[str, float]:
    deadlines = {}
    for phase in PHASES:
        value = overrides.get(phase)
        value = timeout if value is None else value
        if not value > 0:
            raise OptionError(f"--timeout-{phase.replace('_', '-')}: a deadline must be positive")
        deadlines[phase] = float(value)
    return deadlines
