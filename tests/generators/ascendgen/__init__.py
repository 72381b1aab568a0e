"""Deterministic generator of the logs a failed (or clean) Ascend/HCCL training job leaves behind.

No NPU is needed: the generator writes what each server's ``~/ascend/log`` folder and the training
stdout would hold, line by line, in the envelopes of ``docs/formats.md`` §5:

* plogs: ``debug/plog/plog-<pid>_<ts>.log`` (several files per pid: the INFO-level debug plog is
  rotated), ``run/plog/plog-<pid>_<ts>.log``, ``debug|run/device-<phyId>/device-<pid>_<ts>.log``;
  CANN 5.x writes the flat ``plog/`` and ``device-<phyId>/`` folders instead;
* the plog line ``[LVL] MOD(pid,pname):yyyy-mm-dd-hh:mm:ss.fff.zzz [src:line][tid]msg`` with its
  variants: CANN 6 ``[commId][rank]`` in place of the thread id, CANN 8.5 stage keywords
  (``[InitGroupStage]``, ``[InitChannelStage]``, ``[TaskExecStage]``) and its no-space form, bare
  RUNTIME thread ids, ``tid:`` in HCCP lines;
* key-info lines that tell who a pid is (``Entry-HcclCommInitRootInfoInner… rank[r]``,
  ``[LocalRank Key Info]userRank[r] … devicePhyId[d] server[ip]``), in group-local ranks for
  sub-communicators;
* screen output (one file per server written through torchrun, or one per rank written by a
  shell launcher) with ``EIxxxx:``/``EJxxxx:`` codes in each CANN's prefix form, torch_npu
  ``HCCL function error`` / ``ERR02200 … RankID:r`` footers and ``WorkHCCL(...)`` watchdog lines;
* an optional rank table JSON;
* for a job torchrun restarted (``--max-restarts``, RESTART_FAULTS), both attempts: a second set of
  worker pids and plogs, a new communicator identifier, the agent's restart lines on the console.

Device ids are physical ids; a job may permute them (``ASCEND_RT_VISIBLE_DEVICES``), so the
device of a rank is not its local rank.  Everything is seeded: the same Spec gives the same bytes.

Usage::

    python -m generators.ascendgen OUT_DIR --fault ei0006-silent --culprit 5 [--servers 2 --npus 4]
        [--cann 7.0] [--layout full|plogs|screen] [--seed 1]

or, as a library: ``generate(spec, out_dir) -> Truth`` and ``plan(spec) -> Truth`` (no rendering).
Lines whose exact wording no source gives are marked ``# unsourced`` where they are written.
"""

from .files import render
from .model import CANNS, FAULTS, LAYOUTS, LOSERS, Cann, RankTruth, Spec, Truth
from .plan import Plan, Proc, make_plan
from .truth import generate, plan, truth_dict

__all__ = [
    "CANNS", "FAULTS", "LAYOUTS", "LOSERS", "Cann", "Plan", "Proc", "RankTruth", "Spec", "Truth", "generate",
    "make_plan", "plan", "render", "truth_dict",
]
