"""HCCL's rank table (RANK_TABLE_FILE): which rank is which device of which server.

A JSON file (docs/formats.md §5.5), pretty-printed more often than not, with each server's id after its
device list, so no line rule can read it:

  {"server_count": "1", "server_list": [{"device": [{"device_id": "6", "device_ip": "192.168.102.112",
   "rank_id": "0"}, …], "host_nic_ip": "reserve", "server_id": "10.90.42.160"}], "status": "completed",
   "version": "1.0"}

Each device entry becomes an info event (rule `hccl-rank-table`) that the identity stage uses to
name the rank of a server's device; the rank is `table_rank`, not `rank`, so that the table is
nobody's log of its own.
"""

from __future__ import annotations

import json
from typing import Any

from triage.model import Event, Evidence, Identity, Kind, Phase

RULE_ID = "hccl-rank-table"
MAX_BYTES = 8 << 20  # a rank table of 10,000 devices is about 1 MB


def looks_like(head: str) -> bool:
    return head.lstrip().startswith("{") and '"server_list"' in head


def events(source: str, text: str) -> list[Event] | None:
    """One event per device entry, or None when the text is not a rank table after all."""
    try:
        table: Any = json.loads(text)
    except ValueError:
        return None
    servers = table.get("server_list") if isinstance(table, dict) else None
    if not isinstance(servers, list):
        return None
    lines = text.splitlines()
    found: list[Event] = []
    for server in servers:
        if not isinstance(server, dict) or not isinstance(server.get("device"), list):
            continue
        server_id = str(server.get("server_id", ""))
        for device in server["device"]:
            if not isinstance(device, dict) or not str(device.get("rank_id", "")).isdigit():
                continue
            rank, device_id = str(device["rank_id"]), str(device.get("device_id", ""))
            fields = {"table_rank": rank, "device": device_id, "ip": server_id,
                      "device_ip": str(device.get("device_ip", ""))}
            line_no = _line_of(lines, f'"rank_id": "{rank}"', f'"rank_id":"{rank}"')
            found.append(Event(
                rule_id=RULE_ID, kind=Kind.INFO, phase=Phase.COMM_INIT, severity="info",
                message=f"rank table: rank {rank} is device {device_id} of server {server_id}",
                identity=Identity(), evidence=Evidence(source, line_no, lines[line_no - 1].strip()[:300], rule_id=RULE_ID),
                fields=fields, family="hccl"))
    return found or None


def _line_of(lines: list[str], *needles: str) -> int:
    for number, line in enumerate(lines, 1):
        if any(n in line for n in needles):
            return number
    return 1
