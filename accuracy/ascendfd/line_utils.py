"""Small helpers ascend-fd applies to plog lines: IP check, blacklist, module and time of a
line, one bracketed field (utils/net_tools.py, blacklist_op.py, utils/tool.py, parser.py).
"""

from __future__ import annotations

import ipaddress

from .keywords import DEFAULT_BLACKLIST


def is_valid_ip(address: str) -> bool:  # utils/net_tools.py:62-76
    try:
        ipaddress.ip_address(address)
        return True
    except (ValueError, TypeError):
        return False


def is_blacklisted(line: str) -> bool:  # blacklist_op.py:192-197
    return any(all(k in line for k in kws) for kws in DEFAULT_BLACKLIST)


def get_log_module_and_time(log_line: str) -> tuple[str, str]:  # utils/tool.py:1387-1396
    log_module = log_line.split()[1].split("(")[0].strip()
    times = log_line.split()[1].split(")")[1].strip(":")
    log_time = times[:-4] + times[-3:]
    return log_module, log_time


def filter_single_rank_info(line: str, key: str) -> str:  # parser.py:988-1000
    if key not in line:
        return ""
    parts = line.split(key, 1)
    if len(parts) < 2:
        return ""
    return parts[1].split("]")[0]
