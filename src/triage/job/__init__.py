"""The job model, one stage between identity and diagnosis: every source's events put together.

`build` makes the `Job` (`job`): each rank's story and milestone, the world size, the process groups
(`groups`), who each line is about (`peers`), each group's progress from logs, dumps and RAS
(`progress`) and the configuration the ranks stated (`config`). Data flows one way inside too:
`job` and the readers it holds know nothing of `build`, which calls them.
"""

from triage.job.build import INIT_CALLS, build_job, milestone_of, place_milestone, separate_runs
from triage.job.job import DENSE_RANKS, Job

__all__ = ["DENSE_RANKS", "INIT_CALLS", "Job", "build_job", "milestone_of", "place_milestone", "separate_runs"]
