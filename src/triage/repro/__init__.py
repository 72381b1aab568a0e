"""`triage repro`: a live all-reduce check that names the rank, link and phase at fault.

Nothing in this package imports torch at module level except the modules that only a rank process
loads (`worker`, `collectives`, `verify`); `command` imports those inside the command, so that
`triage analyze` never pays for (or depends on) PyTorch.
"""

import warnings

# The CPU wheels of torch warn at import when NumPy is missing; repro does not use NumPy, and the
# warning would land in every rank log and on the user's terminal.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
