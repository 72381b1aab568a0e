"""Cross-rank configuration as a cause (triage.config): the minority that explains a failed set-up.

Ranks that load another NCCL (or CUDA) version, or use another NCCL_SOCKET_IFNAME / NCCL_IB_HCA, than
the majority cannot connect to them: a communicator init, or the first collective that sets up the
connections, fails or hangs. So a minority on such a key is named when the job failed in
`comm_init` or `operator_load`; later, a difference is reported beside the verdict (`config[]` in
the JSON, a line of the report) but is not the cause of a failure in steady state.
"""

from __future__ import annotations

from triage.config import AFFECTS_INIT, build_config
from triage.diagnose.context import Context
from triage.diagnose.principles.principle import Principle
from triage.model import Category, Culprit, Hypothesis, Phase
from triage.ranks import fmt_ranks

CONFIG_MINORITY_SCORE = 0.7


def config_minority(ctx: Context) -> Hypothesis | None:
    phase = ctx.phase()
    if phase not in (Phase.COMM_INIT, Phase.OPERATOR_LOAD):
        return None
    for item in build_config(ctx.job.events):
        if item.key not in AFFECTS_INIT or not item.minority:
            continue
        if len(item.minority) > max(2, len(ctx.expected) // 4):
            continue  # a large minority is a split, not an odd node
        culprits = [Culprit(kind="rank", rank=r, host=ctx.host_of(r),
                            reason=f"{item.key} is {_value(item.values, r)} where the others have {item.majority}",
                            evidence=[item.evidence[r]] if r in item.evidence else [])
                    for r in item.minority]
        return Hypothesis(
            name="config-minority", score=CONFIG_MINORITY_SCORE, category=Category.CONFIG_MISMATCH, phase=phase,
            culprits=culprits,
            reasoning=f"The job failed setting up communication ({phase.value}), and rank"
                      f"{'s' if len(item.minority) > 1 else ''} {fmt_ranks(item.minority)} differ from the others in "
                      f"{item.label()}: processes that load another NCCL version or use another network interface "
                      "cannot connect to the rest.")
    return None


def _value(values: dict[str, list[int]], rank: int) -> str:
    return next((v for v, rs in values.items() if rank in rs), "?")


def remark(ctx: Context, winner: Hypothesis | None, own: Hypothesis | None) -> str | None:
    """A configuration minority beside a verdict it does not decide."""
    if winner is own and own is not None:
        return None
    odd = [i for i in build_config(ctx.job.events) if i.minority]
    if not odd:
        return None
    named = {c.rank for c in (winner.culprits if winner else [])}
    said = "; ".join(
        f"{i.label()}" + (" (the culprit's own)" if named & set(i.minority) else "") for i in odd[:3])
    return f"Configuration differs across ranks: {said}."


PRINCIPLE = Principle(
    name="config-minority", emits=("config-minority",), run=config_minority, remark=remark,
    summary="Cross-rank configuration (NCCL and CUDA versions from the banners, a dump's comm_lib_version, the "
            "NCCL_*/TORCH_NCCL_*/HCCL_* settings the logs echo, timeouts and group membership from dumps): when the "
            "job failed in comm_init or operator_load, the few ranks with another NCCL/CUDA version or another "
            "NCCL_SOCKET_IFNAME/NCCL_IB_HCA are named (config_mismatch); otherwise a difference is reported beside "
            "the verdict, not as its cause.")
