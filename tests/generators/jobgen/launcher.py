"""What the launcher writes: torchrun agent logs, the ChildFailedError block, Slurm's tail."""

from __future__ import annotations

from .common import Line, RankPlan, id_ranges
from .eras import PYBIN, TRAIN


class Launcher:
    """Job's part that writes the launchers' logs (a mixin of Job)."""

    def agent_log(self, h: int) -> list[Line]:
        """torchrun's own console output on host h (LOGLEVEL=INFO)."""
        e = self.e
        t = self.agent_t0[h]
        A = self.agent
        g = self.gpus
        lines: list[Line] = []
        omp = [
            A(h, t, "WARNING", "distributed.run", 793, m)
            for m in (
                "",
                "*****************************************",
                "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
                "to avoid your system being overloaded, please further tune the variable for "
                "optimal performance in your application as needed. ",
                "*****************************************",
            )
        ]
        lines.append((t, "\n".join(omp)))
        log_dir = f"/logs/{self.run_id}"
        cfg = [
            "Starting elastic_operator with launch configs:",
            f"  entrypoint       : {TRAIN.rsplit('/', 1)[1]}",
            f"  min_nodes        : {self.hosts}",
            f"  max_nodes        : {self.hosts}",
            f"  nproc_per_node   : {g}",
            f"  run_id           : {self.run_id}",
            "  rdzv_backend     : c10d",
            f"  rdzv_endpoint    : {self.host_names[0]}:{self.rdzv_port}",
            "  rdzv_configs     : {'timeout': 900}",
            "  max_restarts     : 0",
            f"  monitor_interval : {e.monitor_interval}",
            f"  log_dir          : {log_dir}",
            "  metrics_cfg      : {}",
            "",
        ]
        lines.append(
            (t + 0.002, A(h, t + 0.002, "INFO", "distributed.launcher.api", 188, "\n".join(cfg)))
        )
        tmp = f"{log_dir}/{self.run_id}_{self.tmp_tag[h]}"
        t1 = t + 0.01
        la = "distributed.elastic.agent.server.local_elastic_agent"
        sa = "distributed.elastic.agent.server.api"
        lines.append(
            (t1, A(h, t1, "INFO", la, 191 if e.glog_agent else 183, f"log directory set to: {tmp}"))
        )
        lines.append(
            (
                t1 + 0.001,
                A(
                    h,
                    t1 + 0.001,
                    "INFO",
                    sa,
                    866 if e.glog_agent else 825,
                    "[default] starting workers for entrypoint: python",
                ),
            )
        )
        lines.append(
            (
                t1 + 0.002,
                A(
                    h,
                    t1 + 0.002,
                    "INFO",
                    sa,
                    662 if e.glog_agent else 652,
                    "[default] Rendezvous'ing worker group",
                ),
            )
        )
        t2 = max(self.agent_t0) + 0.4 + 0.01 * h
        ranks = list(range(h * g, (h + 1) * g))
        res = [
            "[default] Rendezvous complete for workers. Result:",
            "  restart_count=0",
            f"  master_addr={self.host_names[0]}",
            f"  master_port={self.master_port}",
            f"  group_rank={h}",
            f"  group_world_size={self.hosts}",
            f"  local_ranks={list(range(g))}",
            f"  role_ranks={ranks}",
            f"  global_ranks={ranks}",
            f"  role_world_sizes={[self.W] * g}",
            f"  global_world_sizes={[self.W] * g}",
            "",
        ]
        lines.append((t2, A(h, t2, "INFO", sa, 525 if e.glog_agent else 518, "\n".join(res))))
        lines.append(
            (
                t2 + 0.001,
                A(
                    h,
                    t2 + 0.001,
                    "INFO",
                    sa,
                    670 if e.glog_agent else 660,
                    "[default] Starting worker group",
                ),
            )
        )
        lines.append(
            (
                t2 + 0.002,
                A(h, t2 + 0.002, "INFO", la, 298 if e.glog_agent else 294, "use_agent_store: True"),
            )
        )
        lines.append(
            (
                t2 + 0.003,
                A(
                    h,
                    t2 + 0.003,
                    "INFO",
                    la,
                    192 if e.glog_agent else 184,
                    "Environment variable 'TORCHELASTIC_ENABLE_FILE_TIMER' not "
                    "found. Do not start FileTimerServer.",
                ),
            )
        )
        if e.glog_agent:
            lines.append(
                (
                    t2 + 0.004,
                    A(
                        h,
                        t2 + 0.004,
                        "INFO",
                        la,
                        236,
                        "Environment variable 'TORCHELASTIC_HEALTH_CHECK_PORT' not "
                        "found. Do not start health check.",
                    ),
                )
            )
        for lr in range(g):
            ts = t2 + 0.005 + lr * 1e-4
            lines.append(
                (
                    ts,
                    A(
                        h,
                        ts,
                        "INFO",
                        "distributed.elastic.multiprocessing.api",
                        277 if e.glog_agent else 263,
                        f"Setting worker{lr} reply file to: {tmp}/attempt_0/{lr}/error.json",
                    ),
                )
            )
        lines.extend(self._agent_end(h))
        return lines

    def _agent_end(self, h: int) -> list[Line]:
        e = self.e
        A = self.agent
        g = self.gpus
        local = self.plans[h * g : (h + 1) * g]
        t = self.agent_poll[h]
        ma = "distributed.elastic.multiprocessing.api"
        sa = "distributed.elastic.agent.server.api"
        out: list[Line] = []
        if t < 0:  # nothing on this host ended: the agent was still waiting when logs were taken
            return out
        failures = [
            p
            for p in local
            if p.t_exit is not None
            and p.exitcode != 0
            and p.t_exit <= t
            and (p.t_kill is None or p.t_exit <= p.t_kill)
        ]
        if not failures:
            msgs = [
                "[default] worker group successfully finished. Waiting 300 seconds for other "
                "agents to finish.",
                "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for "
                "other agents to finish",
                f"Done waiting for other agents. Elapsed: {self.rng.uniform(0.001, 4.0):.4f} "
                "seconds",
            ]
            for i, (m, ln) in enumerate(zip(msgs, (879, 932, 946), strict=True)):
                out.append((t + 0.01 * i, A(h, t + 0.01 * i, "INFO", sa, ln, m)))
            return out
        for p in local:
            if p.t_kill is not None and p.t_kill <= t + 0.1 and p not in failures:
                tk = p.t_kill
                out.append(
                    (
                        tk,
                        A(
                            h,
                            tk,
                            "WARNING",
                            ma,
                            897 if e.name >= "2.5" else 858,
                            f"Sending process {p.pid} closing signal SIGTERM",
                        ),
                    )
                )
        first = failures[0]  # min() over equal (whole-second) timestamps keeps local-rank order
        tf = t + 0.3
        out.append(
            (
                tf,
                A(
                    h,
                    tf,
                    "ERROR",
                    ma,
                    869 if e.name >= "2.5" else 833,
                    f"failed (exitcode: {first.exitcode}) local_rank: {first.local} "
                    f"(pid: {first.pid}) of binary: {PYBIN}",
                ),
            )
        )
        out.append((tf + 0.05, self._child_failed(h, failures, tf)))
        if h != 0 and self.agent_end[0] < tf:
            tr = tf + 0.002
            node = f"{self.host_names[h]}_{self.agent_pid[h]}_0"
            out.insert(
                -1,
                (
                    tr,
                    A(
                        h,
                        tr,
                        "WARNING",
                        "distributed.elastic.rendezvous.dynamic_rendezvous",
                        1283 if e.glog_agent else 1203,
                        f"The node '{node}' has failed to shutdown the rendezvous "
                        f"'{self.run_id}' due to an error of type "
                        "RendezvousConnectionError.",
                    ),
                ),
            )
        return out

    def _child_failed(self, h: int, failures: list[RankPlan], t: float) -> str:
        site = self.site()
        car = self.carets()
        stamp = self.clock.iso(self.agent_poll[h], "_")
        tb = [
            "Traceback (most recent call last):",
            '  File "/opt/venv/bin/torchrun", line 8, in <module>',
            "    sys.exit(main())",
        ]
        if car:
            tb.append("             ^^^^^^")
        tb += [
            f'  File "{site}/torch/distributed/elastic/multiprocessing/errors/__init__.py", '
            "line 355, in wrapper",
            "    return f(*args, **kwargs)",
        ]
        if car:
            tb.append("           ^^^^^^^^^^^^^^^^^^")
        tb += [
            f'  File "{site}/torch/distributed/run.py", line 919, in main',
            "    run(args)",
            f'  File "{site}/torch/distributed/run.py", line 910, in run',
            "    elastic_launch(",
            f'  File "{site}/torch/distributed/launcher/api.py", line 138, in __call__',
            "    return launch_agent(self._config, self._entrypoint, list(args))",
        ]
        if car:
            tb.append("           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")
        tb += [
            f'  File "{site}/torch/distributed/launcher/api.py", line 269, in launch_agent',
            "    raise ChildFailedError(",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        ]

        def block(idx: int, p: RankPlan) -> list[str]:
            sig = {
                -6: "Signal 6 (SIGABRT)",
                -9: "Signal 9 (SIGKILL)",
                -15: "Signal 15 (SIGTERM)",
                -11: "Signal 11 (SIGSEGV)",
            }
            trace = (
                f"{sig[p.exitcode]} received by PID {p.pid}"
                if p.exitcode < 0
                else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
            )
            return [
                f"[{idx}]:",
                f"  time      : {stamp}",
                f"  host      : {self.host_names[h]}",
                f"  rank      : {p.rank} (local_rank: {p.local})",
                f"  exitcode  : {p.exitcode} (pid: {p.pid})",
                "  error_file: <N/A>",
                f"  traceback : {trace}",
            ]

        root, others = failures[0], failures[1:]
        other_lines: list[str] = []
        for i, p in enumerate(others, start=1):
            other_lines += block(i, p)
        if not others:
            other_lines = ["  <NO_OTHER_FAILURES>"]
        body = [
            "=" * 60,
            f"{TRAIN.rsplit('/', 1)[1]} FAILED",
            "-" * 60,
            "Failures:",
            *other_lines,
            "-" * 60,
            "Root Cause (first observed failure):",
            *block(0, root),
            "=" * 60,
        ]
        return "\n".join(tb + body)

    def slurm_tail(self) -> list[Line]:
        """srun's own lines: one per (host, status) batch of task exits, by time."""
        events: list[tuple[float, int, int, str]] = []
        for p in self.plans:
            if p.t_exit is not None and (p.t_kill is None or p.t_exit <= p.t_kill):
                if p.exitcode == 0:
                    continue
                code = p.exitcode
                tx = p.t_exit
            else:
                code, tx = -15, p.t_kill or 0.0
            what = {
                1: "Exited with exit code 1",
                -6: "Aborted (core dumped)",
                -9: "Killed",
                -15: "Terminated",
            }[code]
            events.append((tx, p.host, p.rank, what))
        events.sort()
        # slurmstepd reports the exits of one node together: batch per (host, status) within 1 s
        batches: list[tuple[float, int, str, list[int]]] = []
        open_: dict[tuple[int, str], int] = {}
        for tx, h, rank, what in events:
            k = open_.get((h, what))
            if k is not None and tx - batches[k][0] < 1.0:
                batches[k][3].append(rank)
            else:
                open_[(h, what)] = len(batches)
                batches.append((tx, h, what, [rank]))
        out: list[Line] = []
        cancelled = False
        for tx, h, what, ranks in batches:
            if what == "Terminated" and not cancelled:
                cancelled = True
                stamp = self.clock.iso(tx, "T")
                hosts = sorted({b[1] for b in batches if b[2] == "Terminated"})
                out.extend(
                    (
                        tx - 0.5,
                        f"slurmstepd: error: *** STEP {self.jobid}.0 ON "
                        f"{self.host_names[hh]} CANCELLED AT {stamp} ***",
                    )
                    for hh in hosts
                )
                out.append(
                    (
                        tx - 0.4,
                        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
                    )
                )
            noun = "task" if len(ranks) == 1 else "tasks"
            t_last = max(e[0] for e in events if e[1] == h and e[3] == what and e[2] in ranks)
            out.append(
                (
                    t_last + 0.05,
                    f"srun: error: {self.host_names[h]}: {noun} {id_ranges(ranks)}: {what}",
                )
            )
        return out
