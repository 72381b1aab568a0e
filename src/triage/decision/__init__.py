"""What to do after the verdict: requeue (excluding which nodes or links), stop, or investigate.

The decision stage runs after the diagnosis and before the report (`triage.api.analyze`): `decide`
(decide.py) takes the first row of the policy table (policy.yaml, or a user's `--policy FILE`,
loaded and checked by policy.py) that holds for the verdict. What schedulers consume is written
from it by `triage.decision.emit` (Slurm hostlists and drain lines, kubectl lines, the ranks to
drop, the exit code); hostlist.py is Slurm's compressed host-list notation.
"""

from __future__ import annotations

from triage.decision.decide import decide
from triage.decision.policy import Policy, PolicyError, default_policy, load_policy

__all__ = ["Policy", "PolicyError", "decide", "default_policy", "load_policy"]
