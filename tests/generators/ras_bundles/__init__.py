"""The NCCL RAS scenario bundles (``tests/fixtures/ras-*``) that generators/make_ras.py writes.

- ``truth``: what a builder returns (its files and its truth) and the truth's shape;
- ``ras_only``: builders of RAS-only jobs (snapshots of one world communicator);
- ``with_logs``: builders whose bundles also hold the job's per-rank logs (generators/jobgen);
- ``scenarios``: the bundles (name, story, builder, inputs).
"""

from __future__ import annotations

from .scenarios import BY_NAME, SCENARIOS, Scenario
from .truth import Built

__all__ = ["BY_NAME", "SCENARIOS", "Built", "Scenario"]
