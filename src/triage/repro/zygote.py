"""Start every local rank from one process that imported torch once, by fork.

Importing torch costs seconds of CPU; N ranks importing it side by side on a small host take N
times that. The zygote imports torch (and the worker) once, single-threaded and without touching
CUDA, then forks one child per rank: the children share the imported modules and start at once.
CUDA is initialised in each child after the fork, which is safe; a fork after CUDA init is not.

Protocol: the coordinator passes every rank's log and status descriptors (pass_fds) and writes a
JSON list of rank specs to our stdin; we fork, print one child pid per line, and exit. The
coordinator is a child subreaper, so the orphaned ranks become its children and it waits on them.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import triage.repro.worker  # noqa: F401 - imported once here, shared by every forked rank
from triage.repro.supervise import become_rank


def _child(spec: dict[str, Any], all_fds: set[int]) -> None:
    become_rank(spec["env"], int(spec["log_fd"]), int(spec["status_fd"]), all_fds)


def main() -> None:
    specs: list[dict[str, Any]] = json.loads(sys.stdin.read())
    all_fds = {int(s[k]) for s in specs for k in ("log_fd", "status_fd")}
    sys.stdout.flush()
    sys.stderr.flush()
    pids = []
    for spec in specs:
        pid = os.fork()
        if pid == 0:
            _child(spec, all_fds)
        pids.append(pid)
    print("\n".join(map(str, pids)), flush=True)
    os._exit(0)  # no cleanup: the children are on their own, and not ours to reap


if __name__ == "__main__":
    main()
