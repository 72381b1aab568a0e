"""Keeping torch objects alive so that no destructor hangs and no exit dies (docs/health.md, "A safe exit").

- `never_destroy`: a gloo process group's destructor joins its worker threads, and one of them may be
  stuck in an all-reduce that a frozen peer never completes; destroyed by whoever drops the last
  reference (an abort, `destroy_process_group`, the shutdown's clearing of modules), it would hang
  the exit that the failure handling is for. Such objects are kept until the process ends.
- `let_go`: the backend's thread drops its reference to a finished work a little after the work is
  marked completed; when that reference is the last, the buffer's Python object is released from
  that thread, with the GIL, which it cannot take during the interpreter's finalization (the process
  dies in `std::terminate`). Buffers are kept here until no C++ reference holds them, and
  `settle_at_exit` waits for that (2 s at most) before the finalization.
"""

from __future__ import annotations

import atexit
import ctypes
import sys
import threading
import time
from typing import Any

import torch

SETTLE_S = 2.0  # how long the exit waits for the backend's threads to let go of checks' buffers
SETTLING_MAX = 64  # buffers kept for that at most (a backend lets go of a finished one at once)

LOCK = threading.Lock()
SETTLING: list[torch.Tensor] = []  # buffers of finished all-reduces that a backend thread may still hold
THREADS: list[threading.Thread] = []  # aborts still running, waited for at exit like the buffers


def never_destroy(obj: Any) -> None:
    """Keep `obj` alive until the process ends, through interpreter shutdown too."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def _refs(seq: list[torch.Tensor], i: int) -> int:
    return sys.getrefcount(seq[i])


_probe = [torch.empty(0)]
_UNHELD = _refs(_probe, 0)  # what `_refs` says of a tensor that only the list holds
del _probe


def let_go(buf: torch.Tensor) -> None:
    """Keep `buf`, whose all-reduce has finished and whose work we dropped, until no backend thread holds it.

    A C++ reference to a tensor holds a reference to its Python object (torch >= 2.10), which
    `sys.getrefcount` shows: a buffer is released here once only this list holds it.
    """
    with LOCK:
        _prune()
        SETTLING.append(buf)
        del SETTLING[:-SETTLING_MAX]


def _prune() -> None:
    """Drop the buffers that no backend thread holds any more (called with LOCK held)."""
    held = [i for i in range(len(SETTLING)) if _refs(SETTLING, i) > _UNHELD]
    if len(held) < len(SETTLING):
        SETTLING[:] = [SETTLING[i] for i in held]


@atexit.register
def settle_at_exit() -> None:
    """Before the finalization: let the backend's threads let go of the checks' buffers.

    Sleeping releases the GIL, which the backend's thread needs to release a buffer's Python
    object. Threads still running (an abort) are waited for too. Bounded by SETTLE_S in all.
    """
    until = time.monotonic() + SETTLE_S
    for thread in THREADS:
        thread.join(max(0.0, until - time.monotonic()))
    while True:
        with LOCK:
            _prune()
            if not SETTLING:
                return
        if time.monotonic() >= until:
            return
        time.sleep(0.001)
