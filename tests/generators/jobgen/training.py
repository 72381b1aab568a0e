"""Training steps, the run's tail and a clean exit."""

from __future__ import annotations

import math
import random

from .common import Line, RankPlan
from .eras import BUS_IDS


class Training:
    """Job's part that writes the training steps and clean ends (a mixin of Job)."""

    def _curve(self) -> list[tuple[float, str]]:
        """Per step: (loss, '| lr … | grad_norm … | s/it | tok/s' text), shared by all ranks.

        The script logs the all-reduced loss (that is the metrics all-reduce that ends each
        step), so loss, lr, grad norm and step time read the same on every rank.
        """
        if not self._curve_cache:
            rng = random.Random(self.seed * 104729 + 3)  # noqa: S311
            st, tok = self.step_time, self.tok_per_step
            for k in range(self.steps + 1):
                dt = st * (0.97 + rng.random() * 0.06)
                gn = 0.35 + 2.0 * math.exp(-k / 400.0) + rng.random() * 0.2
                lr = 3e-4 * min(1.0, k / 2000.0)
                self._curve_cache.append(
                    (
                        2.05 + 8.8 * math.exp(-k / 260.0) + (rng.random() - 0.5) * 0.12,
                        f" | lr {lr:.3e} | grad_norm {gn:.3f} | {dt:.2f}s/it"
                        f" | tok/s {int(tok * self.W / dt):,}",
                    )
                )
        return self._curve_cache

    def _train(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        if self.steps == 0:
            return
        e = self.e
        lg = self.clock.logging
        st = self.step_time
        t0 = self.t_train0
        jitter = rng.uniform(0.001, 0.09)
        total = self.total_steps
        if self.flags["unused"]:
            t = t0 + 0.6 * st
            err.append(
                (
                    t,
                    self.c10(
                        p,
                        t,
                        "W",
                        "reducer.cpp",
                        e.ln["reducer"],
                        "Warning: find_unused_parameters=True was specified in DDP "
                        "constructor, but did not find any unused parameters in the "
                        "forward pass. This flag results in an extra traversal of the "
                        "autograd graph every iteration,  which can adversely affect "
                        "performance. If your model indeed never has any unused "
                        "parameters in the forward pass, consider turning this flag "
                        "off. Note that this warning may be a false positive if your "
                        "model has flow control causing later iterations to have "
                        "unused parameters. (function operator())",
                    ),
                )
            )
        rank, W = p.rank, self.W
        rnd = rng.random
        append = err.append
        stamp = self.clock.second
        curve = self._curve()
        mem = f" | mem {60.8 + rnd() * 1.5:.1f}GiB"
        for k in range(1, self.steps + 1):
            t = t0 + k * st + jitter + rnd() * 0.01
            sec = int(t)
            loss, rest = curve[k]
            append(
                (
                    t,
                    f"{stamp(sec)},{int((t - sec) * 1000):03d} INFO train: rank {rank}/{W} step "
                    f"{k}/{total} | loss {loss:.4f}{rest}{mem}",
                )
            )
            if rank == 0 and k % 250 == 0:
                append(
                    (
                        t + 0.004,
                        f"{lg(t + 0.004)} INFO train: eval at step {k}: val_loss "
                        f"{loss + 0.05:.4f} ppl {math.exp(loss + 0.05):.2f}",
                    )
                )
            if rank == 0 and k % 1000 == 0:
                append(
                    (
                        t + 0.006,
                        f"{lg(t + 0.006)} INFO train: saving checkpoint to "
                        f"/checkpoints/{self.run_id}/step_{k:07d}",
                    )
                )

    # ---------------------------------------------------------------- the end of a rank

    def _tail(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        f = self.fault
        if f == "none":
            self._clean_exit(p, rng, out, err)
            return
        if self.first_coll:
            self._first_collective(p, rng, out, err)
        if f == "ib":
            self._ib_warn(p, rng, out, err)
        if p.fate == "timeout":
            self._watchdog_timeout(p, rng, out, err)
        elif p.fate == "exception":
            self._exception(p, rng, out, err)
        elif p.fate == "remote_error":
            self._remote_error(p, rng, out, err)
        elif p.fate == "stalled":
            self._dump_signal(p, rng, out, err)
        # hang / killed: nothing more from this process

    def _clean_exit(
        self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]
    ) -> None:
        lg = self.clock.logging
        t = self.t_train0 + self.steps * self.step_time + 0.5 + rng.uniform(0.0, 0.2)
        if p.rank == 0:
            err.append(
                (
                    t,
                    f"{lg(t)} INFO train: reached max_steps for this run "
                    f"({self.steps} steps); saving final checkpoint",
                )
            )
        t2 = t + 1.5 + rng.uniform(0.0, 0.3)
        err.append(
            (t2, f"{lg(t2)} INFO train: rank {p.rank}/{self.W} calling destroy_process_group()")
        )
        bus = BUS_IDS[p.local % 8]
        out.append(
            (
                t2 + 0.2,
                self.nccl_info(
                    p,
                    f"comm {self.comm_ptr(p)} rank {p.rank} nranks {self.W} cudaDev {p.local} "
                    f"busId {bus} - Destroy COMPLETE",
                ),
            )
        )
        if p.rank == 0:
            t3 = (p.t_exit or t2) - 0.2
            err.append(
                (
                    t3,
                    f"{lg(t3)} INFO train: training finished: {self.steps} steps in "
                    f"{self.steps * self.step_time / 60:.1f} min; exiting with status 0",
                )
            )
