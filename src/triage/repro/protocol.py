"""What the repro processes tell each other: phases, exit codes, status messages, environment.

A rank reports to its coordinator (standalone mode) over an inherited pipe, one JSON object per line;
the coordinator trusts these messages, not exit codes, to tell a rank that ended after reporting
its failure from one that died without a word (a crash).
"""

from __future__ import annotations

import json
import os
from typing import Any

PHASES = ("comm_init", "operator_load", "execution")

# Exit codes of a rank process. Anything else (a signal, or 1 without a report) is a crash.
EXIT_PASS = 0
EXIT_FAILED = 1  # the rank logged why it failed before it ended
EXIT_WATCHDOG = 3  # the rank's own watchdog ended it after a deadline (stack in its log)
EXIT_STOPPED = 4  # a signal asked it to stop (the launcher ending the job); it logged where it was

ENV_OPTIONS = "TRIAGE_REPRO_OPTIONS"  # the run options, as JSON (standalone ranks)
ENV_STATUS_FD = "TRIAGE_REPRO_STATUS_FD"  # the pipe to the coordinator (standalone ranks)
ENV_LABEL = "TRIAGE_REPRO_JOB_RANK"  # the rank's number in the whole job (bisect sub-groups)
ENV_GROUP = "TRIAGE_REPRO_GROUP"  # names this run's group (its store keys, its log folder)
ENV_PARENT = "TRIAGE_REPRO_PARENT"  # pid of the coordinator: a rank orphaned at birth ends at once
ENV_RANK_ENV = "TRIAGE_REPRO_RANK_ENV"  # who the rank is (launcher_env.RankEnv), as JSON

# Every line our processes write starts with this literal, so that rules can prefilter on it.
TAG = "triage-repro"


class StatusPipe:
    """The writing end of a rank's status pipe; silent when there is no coordinator."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    @classmethod
    def from_env(cls) -> StatusPipe:
        raw = os.environ.get(ENV_STATUS_FD, "")
        return cls(int(raw) if raw.isdigit() else None)

    def send(self, **message: Any) -> None:
        if self.fd is None:
            return
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        try:
            os.write(self.fd, data)
        except OSError:
            # The coordinator is gone; the rank's own watchdog and log still stand on their own.
            self.fd = None


def decode_lines(buffer: bytes) -> tuple[list[dict[str, Any]], bytes]:
    """Complete status messages in `buffer`, and the incomplete rest."""
    messages: list[dict[str, Any]] = []
    *lines, rest = buffer.split(b"\n")
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a torn or foreign line: the log file is the record, this is only a hint
        if isinstance(value, dict):
            messages.append(value)
    return messages, rest
