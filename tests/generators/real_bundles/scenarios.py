"""The real scenarios (SCENARIOS: name -> entry, in run order), each with what its logs show."""

from __future__ import annotations

from .scenarios_first_collective import FIRST_COLLECTIVE
from .scenarios_first_eight import FIRST_EIGHT
from .scenarios_init import INIT
from .scenarios_shell import SHELL
from .scenarios_steps import STEPS
from .seen import SEEN

SCENARIOS: dict[str, dict] = {**FIRST_EIGHT, **INIT, **FIRST_COLLECTIVE, **STEPS, **SHELL}
for _name, _seen in SEEN.items():
    SCENARIOS[_name]["seen"] = _seen
