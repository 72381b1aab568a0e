"""The real-* and partial-* bundles that generators/make_real.py writes (see its docstring).

- ``table``: building blocks of the tables (an entry, a verdict, the checks' globs and regexes);
- ``scenarios``: SCENARIOS, in run order, from ``scenarios_first_eight``, ``scenarios_init``
  (comm_init), ``scenarios_first_collective`` (operator_load), ``scenarios_steps`` (execution) and
  ``scenarios_shell`` (launched by a plain shell script, ``shell``), each with what its logs show (``seen``);
- ``partials``: PARTIALS, the inputs cut from those bundles the way people share logs;
- ``expected``: the truth and verdict written to expected.yaml, PRINCIPLES and LOSES;
- ``run``: run one scenario under torchrun and write its bundle; ``cut``: cut one partial.
"""

from __future__ import annotations

from .cut import make_partial
from .expected import LOSES, PHASES, PRINCIPLES, truth_of, write_expected
from .partials import PARTIALS
from .run import (
    FIXTURES,
    HERE,
    INIT_TIMEOUT_S,
    JOB_NAME,
    RUN_LIMIT_S,
    run_checks,
    run_scenario,
    torch_version,
)
from .scenarios import SCENARIOS
from .table import DETAIL

__all__ = [
    "DETAIL", "FIXTURES", "HERE", "INIT_TIMEOUT_S", "JOB_NAME", "LOSES", "PARTIALS", "PHASES", "PRINCIPLES",
    "RUN_LIMIT_S", "SCENARIOS", "make_partial", "run_checks", "run_scenario", "torch_version", "truth_of",
    "write_expected",
]
