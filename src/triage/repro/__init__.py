"""`triage repro`: a live all-reduce check that names the rank, link and phase at fault.

Two modes, picked by `command` from what `launcher_env` reads in the environment:

- standalone (`coordinator`, `supervise`, `zygote`): this process starts every rank itself, follows
  them and ends whatever does not end (with `--bisect`, smaller groups after the whole one);
- launcher mode (`under_launcher`): torchrun, srun or mpirun started one `triage repro` process
  per rank; each supervises its rank and rank 0's reports for all.

Either way a rank is `worker` under its own `watchdog`, writing its log with `logfile` and
reporting over `protocol`; the verdict comes from `analyze`'s engine on the logs.

Only the modules that a rank process loads import torch at module level (`worker`, `verify`, and
`zygote`, which imports `worker` to share it with the ranks it forks); the others import it inside
the functions that need it (as `store` does), so that `triage analyze` never pays for (or depends
on) PyTorch.
"""

import warnings

# The CPU wheels of torch warn at import when NumPy is missing; repro does not use NumPy, and the
# warning would land in every rank log and on the user's terminal.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
