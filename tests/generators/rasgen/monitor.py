"""Monitor mode of NCCL 2.29+ (``MONITOR [lifecycle|trace|all]``, ``ncclras -m``): its event lines."""

from __future__ import annotations

from .formatting import _devs, _local, _peer
from .model import Process

MONITOR_BANNER = (
    "RAS Monitor Mode - watching for peer changes (Ctrl+C to exit)...\n"
    "================================================================\n"
)  # ncclras -m prints it on stderr (src/ras/client.cc, 2.29+)


# event -> its group (PEER_DEAD and PEER_NEW are LIFECYCLE, the default; the rest need -m trace/all)
MONITOR_EVENTS = {
    "PEER_NEW": "LIFECYCLE",
    "PEER_DEAD": "LIFECYCLE",
    "PEER_CONNECTING": "TRACE",
    "PEER_CONNECTED": "TRACE",
    "PEER_UNRESPONSIVE": "TRACE",
    "PEER_RECOVERED": "TRACE",
    "PEER_RETRY": "TRACE",
    "PEER_KEEPALIVE_TIMEOUT": "TRACE",
    "PEER_TIMEOUT_DEAD": "TRACE",
    "PEER_SEND_STUCK": "TRACE",
    "PEER_INIT_TIMEOUT": "TRACE",
    "PEER_DISCONNECTED": "TRACE",
}


def monitor_line(
    t: float, event: str, process: Process | None, details: str = "", utc_offset: int = 0
) -> str:
    """One text event of monitor mode: `[{local time}] {EVENT}: {peer} {details}` (rasClientsNotifyEvent).

    Events with a peer and empty details (PEER_DEAD, PEER_NEW, PEER_CONNECTING) end in a space.
    """
    if event not in MONITOR_EVENTS:
        raise ValueError(f"unknown RAS event {event!r}")
    stamp = _local(t, utc_offset)
    if process is None:
        return f"[{stamp}] {event}: {details}\n"
    return f"[{stamp}] {event}: {_peer(process)} {details}\n"


def monitor_json(
    t: float, event: str, process: Process, details: str = "", utc_offset: int = 0
) -> str:
    """One JSON event of monitor mode (MONITOR with SET FORMAT json)."""
    return (
        "{\n"
        f'  "timestamp": "{_local(t, utc_offset)}",\n'
        f'  "group": "{MONITOR_EVENTS[event]}",\n'
        f'  "event": "{event}",\n'
        '  "peer": {\n'
        f'    "host": "{process.ip}",\n'
        f'    "pid": {process.pid},\n'
        f'    "cuda_devs": [{_devs(process.gpus)}],\n'
        f'    "nvml_devs": [{_devs(process.nvml_devs)}]\n'
        "  },\n"
        f'  "details": "{details}"\n'
        "}\n"
    )
