"""Deterministic generator of NCCL RAS status dumps for a described job state.

NCCL's RAS thread (NCCL >= 2.24) answers ``ncclras`` / ``echo verbose status | nc localhost 28028`` /
``triage ras collect`` with a report of the whole job: a job summary, a table of the communicators,
then Errors (processes missing or DEAD, communicators INCOMPLETE or in ERROR) and Warnings (TIMEOUT,
MISMATCH of status or of operation counts).  This module describes a job state (processes, the
communicators with their ranks, each rank's status and per-collective counts, who did not answer
and who is dead) and renders what NCCL prints for it, byte for byte, in each format:

- text of NCCL 2.24 / 2.25 (``render_text`` with ``version="2.25.1"``);
- text of NCCL 2.26+ (verbose or not; ``(%.2fs)`` up to 2.28.3, ``(%.3fs)`` from 2.28.7);
- JSON of NCCL 2.28.7+ (``render_json``; 2.28.7-2.28.9 omit a comma in each ``missing_ranks``
  entry, so their document does not parse when a rank is missing: reproduced);
- monitor-mode event lines of NCCL 2.29+ (``monitor_line``).

Everything follows ``src/ras/client_support.cc`` of the NVIDIA/nccl tags v2.24.3-1, v2.25.1-1,
v2.26.2-1, v2.28.7-1, v2.28.9-1, v2.29.7-1 and v2.30.7-1 (= master at the time of writing):
``rasClientRunInit`` (header, job summary), ``rasClientRunComms`` (table, Errors, Warnings),
``rasClientBreakDownErrors``, ``rasCountIsOutlier`` (which per-rank lines are printed: a group of
one always; otherwise at most 10 ranks and at most 25% of the communicator, verbose: under 50%),
the ``json*`` writers and ``rasClientsNotifyEvent``.  Where NCCL's order is not defined (qsort of
equal keys), communicators are taken in NCCL's data order (by hash).

Only regular jobs are rendered (the same number of processes on every node, the same number of GPUs
per process); NCCL prints other tables for irregular ones.  Not rendered either: the text of 2.26.x
to 2.28.x when a communicator misses ranks and another follows it in NCCL's data order, which those
versions garble (their walk over the gathered data skips the missing-rank records: the later
communicators are read from the wrong place; fixed in 2.29.2).

Checked against a real NCCL: ``from_json`` turns a JSON dump back into a Snapshot, and the text and
JSON that NCCL 2.28.9 printed at the same moments (tests/fixtures/ras-captured-nccl2.28.9) are
rendered byte for byte (tests/test_ras_truth.py).

Usage, as a library::

    from generators import rasgen
    procs = rasgen.processes(["10.1.0.1", "10.1.0.2"], gpus=8, seed=3)
    world = rasgen.world(procs, 0x6D4A1F0E22C3B5A7, Broadcast=3, AllReduce=4100)
    snap = rasgen.Snapshot(time=1_767_225_600.25, version="2.26.2", processes=procs,
                           comms=[world], dead=frozenset({procs[13].pid}))
    text = rasgen.render_text(snap)
    name = rasgen.file_name(snap, "text")     # ras-20260101T000000.250000Z.txt

or ``python -m generators.rasgen --demo`` (from tests/) to print one dump of each format.  The bundles
built with it are written by tests/generators/make_ras.py.
"""

from __future__ import annotations

from .files import file_name, render, stamp
from .formatting import is_outlier
from .jobs import counts, processes, sub, with_counts, world
from .json_report import render_json
from .model import (
    ABORT,
    DETAIL_THRESHOLD,
    ERROR,
    ERROR_COLUMN,
    ERRORS,
    FINALIZE,
    FUNCS,
    IN_PROGRESS,
    INCOMPLETE,
    INIT,
    MISMATCH,
    NOCOMM,
    OUTLIER_FRACTION,
    RUNNING,
    STATUS_NAMES,
    STATUS_NAMES_224,
    VERBOSE_OUTLIER_FRACTION,
    Comm,
    Process,
    Rank,
    Snapshot,
    vtuple,
)
from .monitor import MONITOR_BANNER, MONITOR_EVENTS, monitor_json, monitor_line
from .parse import from_json, loads
from .text import render_text

__all__ = [
    "ABORT",
    "DETAIL_THRESHOLD",
    "ERROR",
    "ERRORS",
    "ERROR_COLUMN",
    "FINALIZE",
    "FUNCS",
    "INCOMPLETE",
    "INIT",
    "IN_PROGRESS",
    "MISMATCH",
    "MONITOR_BANNER",
    "MONITOR_EVENTS",
    "NOCOMM",
    "OUTLIER_FRACTION",
    "RUNNING",
    "STATUS_NAMES",
    "STATUS_NAMES_224",
    "VERBOSE_OUTLIER_FRACTION",
    "Comm",
    "Process",
    "Rank",
    "Snapshot",
    "counts",
    "file_name",
    "from_json",
    "is_outlier",
    "loads",
    "monitor_json",
    "monitor_line",
    "processes",
    "render",
    "render_json",
    "render_text",
    "stamp",
    "sub",
    "vtuple",
    "with_counts",
    "world",
]
