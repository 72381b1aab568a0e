"""`triage watch`: run or attach to a distributed job, catch a hang or a crash while it happens,
take each rank's state at that moment, and give the verdict (docs/watch.md).

Modules, one job each: procs (the process tree and its ranks, from /proc), follow (the job's
output and log folders), stall (progress and the stall window), snapshot (stacks, /proc, RAS,
flight recorder, devices, manifest), act (the verdict, ending the job), run (the loop).
"""

from __future__ import annotations

from triage.watch.run import Options, watch

__all__ = ["Options", "watch"]
