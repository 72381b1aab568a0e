"""What torchrun prints around the workers: teardown, restarts."""

from __future__ import annotations

from .lines import Writer
from .model import MASTER_PORT
from .plan import Plan, Proc, _first_exit


def _torn_down(plan: Plan, server: int) -> list[Proc]:
    """torchrun stories: the workers of this server its agent SIGTERMs after the first failure."""
    f, c, q = plan.spec.fault, plan.spec.culprit, plan.spec.peer
    here = [x for x in plan.procs if x.server == server]
    if f in ("lose-ei0006", "lose-ei0002"):
        return [x for x in here if x.rank == q]
    if f == "lose-tls":
        return [x for x in here if x.rank not in plan.spec.subgroup]
    if f == "lose-cqe":
        killed = c if c is not None and plan.procs[c].server == server else q
        return [x for x in here if x.rank != killed]
    if f == "lose-ej0001":  # every worker still running when the first one exited
        first = _first_exit(plan, server)[0]
        return [x for x in here if x.rank != first.rank]
    return []


def _agent_pid(plan: Plan, server: int) -> int:
    """The torchrun agent of this server (it forked the first attempt's workers)."""
    first = plan.previous or plan
    return first.procs[server * plan.spec.npus].pid - 31


def torchrun_teardown(w: Writer) -> None:
    """The torchrun agent's lines on its server's console (written once, by the first torn-down rank):
    it stops the other workers, then restarts them (a restart left) or gives up (ChildFailedError)."""
    plan, p = w.plan, w.p
    down = _torn_down(plan, p.server)
    if not down or p.rank != down[0].rank:
        return
    c = plan.spec.culprit
    if plan.spec.fault == "lose-cqe" and c is not None and plan.procs[c].server == p.server:
        first, t_fail, code = plan.procs[c], plan.t_fault, -9  # the kernel's OOM killer
    else:
        first, t_fail = _first_exit(plan, p.server)
        code = 1
    apid = _agent_pid(plan, p.server)
    api = "torch/distributed/elastic/multiprocessing/api.py"
    t = t_fail + 0.3
    for i, x in enumerate(down):
        w.screen(t + i * 0.001, f"W{w.clock.glog(t + i * 0.001)} {apid} {api}:897] Sending process {x.pid} closing signal SIGTERM")
    t2 = t + 0.6
    w.screen(t2, f"E{w.clock.glog(t2)} {apid} {api}:869] failed (exitcode: {code}) local_rank: {first.local} (pid: {first.pid}) of binary: /usr/local/python3.9.2/bin/python3")
    if plan.restart is not None:
        agent_info(w, t2 + 0.4, "Worker group FAILED. 1/1 attempts left; will restart worker group", 942)
        agent_info(w, t2 + 0.41, "Stopping worker group", 733)
        agent_starts_workers(w, t2 + 0.9, plan.attempt + 1)
        return
    why = f"Signal 9 (SIGKILL) received by PID {first.pid}" if code == -9 else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    block = [
        "Traceback (most recent call last):",
        '  File "/usr/local/python3.9.2/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60,
        "pretrain_gpt.py FAILED",
        "-" * 60,
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "-" * 60,
        "Root Cause (first observed failure):",
        "[0]:",
        f"  time      : {w.clock.iso(t_fail)}",
        f"  host      : {plan.server_dirs[p.server]}",
        f"  rank      : {first.rank} (local_rank: {first.local})",
        f"  exitcode  : {code} (pid: {first.pid})",
        "  error_file: <N/A>",
        f"  traceback : {why}",
        "=" * 60,
    ]
    w.screen(t2 + 0.4, "\n".join(block))


def agent_info(w: Writer, t: float, msg: str, line: int) -> None:
    """An INFO line of torchrun's elastic agent (LOGLEVEL=INFO); file:line: hint only (torch 2.13)."""
    apid = _agent_pid(w.plan, w.p.server)
    w.screen(t, f"I{w.clock.glog(t)} {apid} torch/distributed/elastic/agent/server/api.py:{line}] [default] {msg}")


def agent_starts_workers(w: Writer, t: float, restart_count: int) -> None:
    """The agent's rendezvous and start of a worker group (its restart_count says which attempt)."""
    plan, p = w.plan, w.p
    local = [x for x in plan.procs if x.server == p.server]
    n = plan.world
    result = [
        "Rendezvous complete for workers. Result:",
        f"  restart_count={restart_count}",
        f"  master_addr={plan.server_ips[0]}",
        f"  master_port={MASTER_PORT}",
        f"  group_rank={p.server}",
        f"  group_world_size={plan.spec.servers}",
        f"  local_ranks={[x.local for x in local]}",
        f"  role_ranks={[x.rank for x in local]}",
        f"  global_ranks={[x.rank for x in local]}",
        f"  role_world_sizes={[n] * len(local)}",
        f"  global_world_sizes={[n] * len(local)}",
        "",
    ]
    agent_info(w, t, "Rendezvous'ing worker group", 707)
    agent_info(w, t + 0.3, "\n".join(result), 553)
    agent_info(w, t + 0.31, "Starting worker group", 715)
