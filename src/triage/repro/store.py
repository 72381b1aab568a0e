"""The TCPStore the ranks of a run meet at, hosted by a process that outlives every rank.

The standalone coordinator hosts one per run; under a launcher the `triage repro` process of rank 0
hosts it (or torchrun's agent does, and every process only reaches it). Ranks only ever connect:
so a rank that dies cannot take the rendezvous, or the results posted to it, down with it.
torch is imported here, inside the functions: only `repro` loads this module.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any


class StoreError(RuntimeError):
    """The store could not be hosted or reached; the message says why in the user's terms."""


def host(port: int, timeout_s: float, *, addr: str = "0.0.0.0") -> Any:  # noqa: S104 - the rendezvous of a job spanning hosts
    """Host a store on `port` (0: any free port; the store's `.port` says which)."""
    from torch.distributed import TCPStore  # type: ignore[attr-defined]

    try:
        return TCPStore(addr, port, None, is_master=True, timeout=timedelta(seconds=timeout_s),
                        wait_for_workers=False, multi_tenant=False)
    except (RuntimeError, OSError) as exc:
        text = str(exc)
        if "EADDRINUSE" in text or "address already in use" in text.lower():
            raise StoreError(f"port {port} is already in use on this host (another job, or an earlier run "
                             "that has not ended)") from None
        raise StoreError(f"could not host the rendezvous on port {port}: {text.splitlines()[0]}") from None


def reach(addr: str, port: int, timeout_s: float) -> Any:
    """Connect to the store at addr:port, retrying until `timeout_s`."""
    from torch.distributed import TCPStore  # type: ignore[attr-defined]

    try:
        return TCPStore(addr, port, None, is_master=False, timeout=timedelta(seconds=timeout_s),
                        wait_for_workers=False)
    except (RuntimeError, OSError) as exc:
        text = str(exc)
        if "timed out" in text:
            why = "nothing answered: is rank 0 running, and is that address reachable from this host?"
        elif "refused" in text.lower():
            why = "connection refused: nothing listens on that port there"
        else:
            why = (text.strip().splitlines() or [type(exc).__name__])[0][:200]
        raise StoreError(f"could not reach the rendezvous at {addr}:{port} within {timeout_s:g} s ({why})") \
            from None
