"""The Truth of a plan (plan, generate) and its dict for expected.yaml."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from .files import files_of, render
from .lose import _partners
from .model import CHAIN_FAULTS, FAULTS, LOSERS, RankTruth, Spec, Truth
from .plan import Plan, Proc, _exec_fail_t, make_plan


def _truth(plan: Plan, files: list[str]) -> Truth:
    s = plan.spec
    phase, category, branch = FAULTS[s.fault]
    ips = plan.server_ips
    culprits = [] if s.fault == "none" or s.culprit is None else [s.culprit]
    if s.fault == "link-cycle" and s.peer is not None:
        culprits = sorted([s.culprit or 0, s.peer])
    link = None
    if s.fault in ("link-cycle", "cqe", "lose-heartbeat") and s.culprit is not None and s.peer is not None:
        a, b = plan.procs[s.culprit], plan.procs[s.peer]
        link = {
            "ends": [
                {"rank": q.rank, "server_ip": ips[q.server], "device": q.phy, "device_ip": plan.device_ip(q)}
                for q in (a, b)
            ],
            # cqe: the endpoint the error CQEs name most (its port fails); cycle: both are equal
            "endpoint": a.rank if s.fault in ("cqe", "lose-heartbeat") else None,
        }
    victims = [p.rank for p in plan.procs if p.rank not in culprits and _reports(plan, p)]
    return Truth(
        name=s.name,
        cann=s.cann,
        fault=s.fault,
        layout=s.layout,
        servers=s.servers,
        npus=s.npus,
        world_size=plan.world,
        phase=phase,
        category=category,
        branch=branch,
        culprit_ranks=culprits,
        culprit_devices=[f"{ips[plan.procs[r].server]}/{plan.procs[r].phy}" for r in culprits],
        culprit_servers=sorted({plan.server_dirs[plan.procs[r].server] for r in culprits}),
        link=link,
        victims=victims,
        groups=plan.groups,
        ranks=[
            RankTruth(p.rank, plan.server_dirs[p.server], ips[p.server], p.phy, p.local, plan.device_ip(p), p.pid)
            for p in plan.procs
        ],
        files=files,
        loser_branch=LOSERS.get(s.fault, ""),
        loser_culprit_ranks=_loser_ranks(plan),
        restart_pids={p.rank: p.pid for p in plan.restart.procs} if plan.restart else {},
    )


def _loser_ranks(plan: Plan) -> list[int]:
    """Whom the losing branch of a lose-* story would name."""
    s, n = plan.spec, plan.world
    f, c, q = s.fault, s.culprit or 0, s.peer if s.peer is not None else 0
    if f == "lose-init-root":
        return [p.rank for p in plan.procs if p.server != plan.procs[0].server]
    if f == "lose-init-agent":
        return [r for r in range(n) if r != c]
    if f in ("lose-ej0001", "lose-init-store"):  # the stale device's rank; the late rank's store error
        return [q]
    if f == "lose-ei0005":  # the odd operator out: the ranks that had moved on to the all-reduce
        return [r for r in range(n) if r != c and r not in _partners(plan, c)]
    if f in ("lose-ei0006", "lose-tls", "lose-heartbeat"):
        return [q]
    if f == "lose-chain-end":  # the EI0006 chains end at the neighbours, which waited on nobody
        return sorted({(c - 1) % n, (c + 1) % n})
    if f == "lose-cycle":
        return sorted([c, (c + 1) % n])
    if f in ("lose-ei0002", "lose-cqe"):
        return sorted([c, q])
    if f == "lose-spread":  # the latest first-timeout stamp: on the server whose clock runs ahead
        last = plan.procs[-1].server
        return [max((p for p in plan.procs if p.server == last and p.rank != c), key=lambda p: _exec_fail_t(plan, p, plan.t_fault)).rank]
    return []


def _reports(plan: Plan, p: Proc) -> bool:
    """Whether this (non-culprit) rank reports a failure of its own (a victim)."""
    f = plan.spec.fault
    if f == "none":
        return False
    if f in CHAIN_FAULTS:
        return p.rank in plan.spec.subgroup
    if f in ("lose-ei0006", "lose-ei0002"):
        return p.rank != plan.spec.peer  # torn down before its own timer fired
    if f == "lose-cqe":
        return p.rank == plan.spec.peer  # the others exit on SIGTERM (the heartbeat line is INFO)
    return True


def plan(spec: Spec) -> Truth:
    """The Truth generate() would return for spec, without rendering anything."""
    pl = make_plan(spec)
    return _truth(pl, files_of(pl))


def generate(spec: Spec, out_dir: str | Path) -> Truth:
    """Write the bundle's log tree into out_dir (created; must be empty or absent)."""
    pl = make_plan(spec)
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty")
    texts = render(pl)
    for rel, text in sorted(texts.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    truth = _truth(pl, sorted(texts))
    return truth


def truth_dict(truth: Truth) -> dict[str, Any]:
    """The truth as plain data; the loser keys follow `branch`, and only lose-* stories have them;
    `restart_pids` only where torchrun restarted the workers."""
    d = asdict(truth)
    if not d["restart_pids"]:
        del d["restart_pids"]
    loser = {k: d.pop(k) for k in ("loser_branch", "loser_culprit_ranks")}
    if not loser["loser_branch"]:
        return d
    out: dict[str, Any] = {}
    for k, v in d.items():
        out[k] = v
        if k == "branch":
            out.update(loser)
    return out
