"""Watchdog timeouts, desync reports and the culprit's own exception."""

from __future__ import annotations

import random

from .common import Line, RankPlan, ranks_to_str
from .eras import TRAIN


class Failures:
    """Job's part that writes timeouts and exceptions (a mixin of Job)."""

    def _watchdog_timeout(
        self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]
    ) -> None:
        e = self.e
        t = p.t_timeout
        pg = p.pg_prefix or self.pg(p)
        wr = p.rank if p.grank is None else p.grank  # [Rank r] is the rank within the PG
        seq = p.seq or self.seq
        work = self.work(p)
        caught = (
            f"[Rank {wr}] Watchdog caught collective operation timeout: {work} ran for "
            f"{p.ran_ms} milliseconds before timing out."
        )
        ln = e.ln
        F = "ProcessGroupNCCL.cpp"
        lines: list[str] = [self.c10(p, t, "E", F, ln["caught"], caught)]
        tt = t
        if e.name == "2.1":
            some = (
                "Some NCCL operations have failed or timed out. Due to the asynchronous nature "
                "of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
                "data."
            )
            term = f"[Rank {wr}] NCCL watchdog thread terminated with exception: {caught}"
            lines.append(self.c10(p, tt + 1e-4, "E", F, ln["some"], some))
            lines.append(
                self.c10(
                    p,
                    tt + 2e-4,
                    "E",
                    F,
                    ln["avoid"],
                    "To avoid data inconsistency, we are taking the entire process down.",
                )
            )
            err.append((t, "\n".join(lines)))
            # the watchdog thread rethrows a moment later and the process aborts
            tx = (p.t_exit or t) - 0.002
            tail = [
                self.c10(p, tx, "E", F, ln["terminated"], term),
                f"terminate called after throwing an instance of '{e.terminate_type}'",
                f"  what():  {term}",
            ]
            err.append((tx, "\n".join(tail)))
            return
        if self.fault == "desync":
            lines.append(self.c10(p, tt + 1e-4, "E", F, ln["desync"], pg + self._desync(p)))
        status = f"{seq}, last enqueued NCCL work: {p.enq}, last completed NCCL work: {p.done}."
        if e.name in ("2.4", "2.5"):
            lines.append(
                self.c10(
                    p,
                    tt + 2e-4,
                    "E",
                    F,
                    ln["either"],
                    f"{pg}Exception (either an error or timeout) detected by "
                    f"watchdog at work: {status}",
                )
            )
        if e.name in ("2.3", "2.4", "2.5"):
            lines.append(
                self.c10(
                    p, tt + 3e-4, "E", F, ln["timeout_at"], f"{pg}Timeout at NCCL work: {status}"
                )
            )
        if e.name == "2.6":
            lines.append(
                self.c10(
                    p,
                    tt + 2e-4,
                    "E",
                    F,
                    ln["detected"],
                    f"{pg} failure detected by watchdog at work sequence id: "
                    f"{seq} PG status: last enqueued work: {p.enq}, last "
                    f"completed work: {p.done}",
                )
            )
            lines.append(
                self.c10(
                    p,
                    tt + 3e-4,
                    "E",
                    F,
                    ln["stack"],
                    "Stack trace of the failed collective not found, potentially "
                    "because FlightRecorder is disabled. You can enable it by "
                    "setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
                )
            )
        lines.append(
            self.c10(
                p,
                tt + 4e-4,
                "E",
                F,
                ln["some"],
                f"[Rank {wr}] Some NCCL operations have failed or timed out. "
                "Due to the asynchronous nature of CUDA kernels, subsequent GPU "
                "operations might run on corrupted/incomplete data.",
            )
        )
        lines.append(
            self.c10(
                p,
                tt + 5e-4,
                "E",
                F,
                ln["avoid"],
                f"[Rank {wr}] To avoid data inconsistency, we are taking the entire process down.",
            )
        )
        term = f"{pg}Process group watchdog thread terminated with exception: {caught}"
        src = f"{e.build_root}/csrc/distributed/c10d/{F}"
        check = [
            f"Exception raised from checkTimeout at {src}:{ln['check']} (most recent call first):"
        ]
        check += self.frames(
            p,
            [
                ("c10::Error::Error(c10::SourceLocation, std::string)", "libc10.so"),
                (
                    "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
                    "duration<long, std::ratio<1l, 1000l> > >)",
                    "libtorch_cuda.so",
                ),
                ("c10d::ProcessGroupNCCL::watchdogHandler()", "libtorch_cuda.so"),
                ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", "libtorch_cuda.so"),
                *self.sys_frames(),
            ],
        )
        err.append((t, "\n".join(lines)))
        # the watchdog thread rethrows a moment later and the process aborts
        tx = (p.t_exit or t) - 0.002
        lines = [self.c10(p, tx, "E", F, ln["terminated"], term), *check, ""]
        lines.append(f"terminate called after throwing an instance of '{e.terminate_type}'")
        lines.append(f"  what():  {term}")
        lines.extend(check)
        lines.append("")
        lines.append(
            f"Exception raised from ncclCommWatchdog at {src}:{ln['watchdog']} (most "
            "recent call first):"
        )
        lines.extend(
            self.frames(
                p,
                [
                    ("c10::Error::Error(c10::SourceLocation, std::string)", "libc10.so"),
                    ("<unknown function>", "libtorch_cuda.so"),
                    (
                        "c10::detail::torchCheckFail(char const*, char const*, unsigned int, "
                        "std::string const&)",
                        "libc10.so",
                    ),
                    ("<unknown function>", "libtorch_cuda.so"),
                    *self.sys_frames(),
                ],
            )
        )
        lines.append("")
        err.append((tx, "\n".join(lines)))

    def _dump_signal(
        self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]
    ) -> None:
        """A rank that stalled on the host side: nothing in flight, so no timeout of its own.

        Its watchdog never fires; from torch 2.3 on, its heartbeat monitor polls the TCPStore and
        logs the dump signal the first rank that timed out set there (docs/formats.md §1.6), 2.4+
        with the rank's own progress (last enqueued = last completed). 2.1 has no such signal: the
        rank says nothing more before the launcher stops it.
        """
        e = self.e
        if "dump" not in e.ln:
            return
        waiting = [q for q in self.plans if q.fate == "timeout"]
        if not waiting:
            return
        first = min(waiting, key=lambda q: q.t_timeout)
        # the store is polled about once a second; the line comes before any local peer exits
        t = first.t_timeout + rng.uniform(0.05, 0.25)
        pg = p.pg_prefix or self.pg(p)
        if e.name == "2.3":
            msg = "Received a global timeout from another rank and will start to dump the debug info."
        else:
            msg = (
                f"Received a dump signal due to a collective timeout from  rank {first.rank} and we "
                "will try our best to dump the debug info. Last enqueued NCCL work: "
                f"{p.enq}, last completed NCCL work: {p.done}.This is most likely caused by "
                "incorrect usages of collectives, e.g., wrong sizes used across ranks, the order "
                "of collectives is not same for all ranks or the scheduled collective, for some "
                "reason, didn't run. Additionally, this can be caused by GIL deadlock or other "
                "reasons such as network errors or bugs in the communications library (e.g. "
                "NCCL), etc. "
            )
        err.append((t, self.c10(p, t, "E", "ProcessGroupNCCL.cpp", e.ln["dump"], pg + msg)))

    def _desync(self, p: RankPlan) -> str:
        c = self.culprit_rank if self.culprit_rank is not None else 0
        others = [r for r in range(self.W) if r != c]
        op = p.op
        s = self.seq
        return (
            f"\n\t - [{p.rank}] Timeout at collective: {op}, #{s}"
            "\n\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the "
            "desync are:"
            f"\n\t     [{c}] finished collective #{s - 1}, but didn't join collective #{s} "
            "(count from 1)"
            "\n\t - Snapshot of ranks' latest states:"
            f"\n\t   #{s - 1} finished ranks:"
            f"\n\t     [{c}] finished {op}"
            f"\n\t   #{s} started ranks:"
            f"\n\t     [{ranks_to_str(others)}] started {op}"
        )

    def _exception(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        e = self.e
        site = self.site()
        t = self.t_fault
        car = self.carets()
        tb = [
            "Traceback (most recent call last):",
            f'  File "{TRAIN}", line 214, in <module>',
            "    main()",
        ]
        if self.fault == "oom":
            tb += [
                f'  File "{TRAIN}", line 181, in main',
                "    loss = model(input_ids, labels=labels).loss",
            ]
            if car:
                tb.append("           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")
            tb += [
                f'  File "{site}/torch/nn/modules/module.py", line 1553, in _wrapped_call_impl',
                "    return self._call_impl(*args, **kwargs)",
            ]
            if car:
                tb.append("           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")
            tb += [
                f'  File "{site}/torch/nn/modules/module.py", line 1562, in _call_impl',
                "    return forward_call(*args, **kwargs)",
            ]
            if car:
                tb.append("           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^")
            tb += [
                f'  File "{site}/torch/nn/parallel/distributed.py", line 1636, in forward',
                "    else self._run_ddp_forward(*inputs, **kwargs)",
                f'  File "{site}/torch/nn/parallel/distributed.py", line 1454, in _run_ddp_forward',
                "    return self.module(*inputs, **kwargs)  # type: ignore[index]",
                '  File "/workspace/model.py", line 142, in forward',
                "    attn = torch.softmax(scores.float(), dim=-1).to(q.dtype)",
            ]
            free = rng.uniform(0.4, 2.2)
            used = 79.1 - free
            alloc = used - rng.uniform(2.0, 4.0)
            reserved = used - alloc - 0.6
            cls = "torch.OutOfMemoryError" if e.name >= "2.4" else "torch.cuda.OutOfMemoryError"
            if e.name == "2.1":
                msg = (
                    f"{cls}: CUDA out of memory. Tried to allocate 4.00 GiB. GPU {p.local} has a "
                    f"total capacty of 79.15 GiB of which {free:.2f} GiB is free. Process "
                    f"{p.pid} has {used:.2f} GiB memory in use. Of the allocated memory "
                    f"{alloc:.2f} GiB is allocated by PyTorch, and {reserved:.2f} GiB is "
                    "reserved by PyTorch but unallocated. If reserved but unallocated memory "
                    "is large try setting max_split_size_mb to avoid fragmentation.  See "
                    "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
                )
            else:
                msg = (
                    f"{cls}: CUDA out of memory. Tried to allocate 4.00 GiB. GPU {p.local} has a "
                    f"total capacity of 79.10 GiB of which {free:.2f} GiB is free. Including "
                    f"non-PyTorch memory, this process has {used:.2f} GiB memory in use. Of "
                    f"the allocated memory {alloc:.2f} GiB is allocated by PyTorch, and "
                    f"{reserved:.2f} GiB is reserved by PyTorch but unallocated. If reserved "
                    "but unallocated memory is large try setting "
                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
                    "  See documentation for Memory Management  "
                    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
                )
            tb.append(msg)
        else:  # cuda-error
            proxy_tid = p.pid + 171
            out.append(
                (
                    t - 0.2,
                    self.nccl_warn(
                        p,
                        t - 0.2,
                        "proxy.cc:1047",
                        "Cuda failure 'an illegal memory access was encountered'",
                        proxy_tid,
                    ),
                )
            )
            tb += [f'  File "{TRAIN}", line 196, in main', "    loss_val = loss.detach().item()"]
            if car:
                tb.append("               ^^^^^^^^^^^^^^^^^^^^^^^^^^")
            tb += [
                "RuntimeError: CUDA error: an illegal memory access was encountered",
                "CUDA kernel errors might be asynchronously reported at some other API call, "
                "so the stacktrace below might be incorrect.",
                "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
                "",
            ]
        err.append((t, self.hook(p, tb)))
        if "destroy" in e.ln:
            t2 = t + 0.9
            if e.name == "2.6":
                msg = (
                    "Warning: WARNING: destroy_process_group() was not called before program "
                    "exit, which can leak resources. For more info, please see "
                    "https://pytorch.org/docs/stable/distributed.html#shutdown (function "
                    "operator())"
                )
            else:
                msg = (
                    "Warning: WARNING: process group has NOT been destroyed before we destruct "
                    "ProcessGroupNCCL. On normal program exit, the application should call "
                    "destroy_process_group to ensure that any pending NCCL operations have "
                    "finished in this process. In rare cases this process can exit before this "
                    "point and block the progress of another member of the process group. This "
                    "constraint has always been present,  but this warning has only been added "
                    "since PyTorch 2.4 (function operator())"
                )
            err.append((t2, self.c10(p, t2, "W", "ProcessGroupNCCL.cpp", e.ln["destroy"], msg)))
