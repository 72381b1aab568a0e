"""Faults seen through the network: remote errors, IB completions, the first collective's connect, the store."""

from __future__ import annotations

import random

from .common import Line, RankPlan
from .eras import ASYNC_ENV_WARNING, TRAIN, WRONG_MASTER


class Network:
    """Job's part that writes network-shaped faults (a mixin of Job)."""

    def _remote_error(
        self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]
    ) -> None:
        """A local peer of a SIGKILLed rank: NCCL sees the socket close, the watchdog aborts."""
        e = self.e
        c = self.culprit_rank or 0
        t = p.t_timeout
        host = self.host_names[p.host]
        port = 40000 + (c * 977) % 20000
        last = f"socketProgress: Connection closed by remote peer {host}<{port}>"
        tid = p.pid + 173
        out.append((t - 0.01, self.nccl_warn(p, t - 0.01, "misc/socket.cc:50", last, tid)))
        out.extend(
            (t - 0.009, self.nccl_info(p, src, tid))
            for src in (
                "misc/socket.cc:752 -> 6",
                "transport/net_ib.cc:1130 -> 6",
                "proxy.cc:1474 -> 6",
            )
        )
        pg = self.pg(p)
        F = "ProcessGroupNCCL.cpp"
        ln = e.ln
        v = e.nccl_str
        what = (
            f"NCCL error: remote process exited or there was a network error, NCCL version {v}"
            "\nncclRemoteError: A call failed possibly due to a network error or a remote "
            f"process exiting prematurely. \nLast error:\n{last}"
        )
        status = (
            f"{self.seq}, last enqueued NCCL work: {p.enq}, last completed NCCL work: {p.done}."
        )
        lines = []
        if "either" in ln:
            lines.append(
                self.c10(
                    p,
                    t,
                    "E",
                    F,
                    ln["either"],
                    f"{pg}Exception (either an error or timeout) detected by "
                    f"watchdog at work: {status}",
                )
            )
        lines.append(
            self.c10(
                p,
                t + 1e-4,
                "E",
                F,
                ln["some"],
                f"[Rank {p.rank}] Some NCCL operations have failed or timed out. "
                "Due to the asynchronous nature of CUDA kernels, subsequent GPU "
                "operations might run on corrupted/incomplete data.",
            )
        )
        lines.append(
            self.c10(
                p,
                t + 2e-4,
                "E",
                F,
                ln["avoid"],
                f"[Rank {p.rank}] To avoid data inconsistency, we are taking the "
                "entire process down.",
            )
        )
        term = f"{pg}Process group watchdog thread terminated with exception: {what}"
        src = f"{e.build_root}/csrc/distributed/c10d/{F}"
        chk = [
            f"Exception raised from checkForNCCLErrorsInternal at {src}:{ln['errcheck']} (most "
            "recent call first):"
        ]
        chk += self.frames(
            p,
            [
                ("c10::Error::Error(c10::SourceLocation, std::string)", "libc10.so"),
                (
                    "c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::shared_ptr<c10d::NCCLComm>"
                    "&)",
                    "libtorch_cuda.so",
                ),
                ("c10d::ProcessGroupNCCL::WorkNCCL::checkAndSetException()", "libtorch_cuda.so"),
                ("c10d::ProcessGroupNCCL::watchdogHandler()", "libtorch_cuda.so"),
                ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", "libtorch_cuda.so"),
                *self.sys_frames(),
            ],
        )
        lines.append(self.c10(p, t + 3e-4, "E", F, ln["terminated"], term))
        lines += [
            *chk,
            "",
            f"terminate called after throwing an instance of '{e.terminate_type}'",
            f"  what():  {term}",
            *chk,
            "",
        ]
        err.append((t, "\n".join(lines)))

    def _ib_warn(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        bad = self.culprit_host
        if bad is None or p.host == bad:
            return
        nv = self.e.nccl
        peer_local = (p.local + rng.randrange(self.gpus)) % self.gpus
        port = 40000 + ((bad * self.gpus + peer_local) * 1031) % 20000
        ip = self.host_ips[bad]
        vend = rng.choice((129, 244))
        op, kind = rng.choice(((0, "Send"), (128, "Recv")))
        if nv >= (2, 22, 0):
            msg = (
                f"NET/IB: Got completion from peer {ip}<{port}> with status=12 opcode={op} "
                f"len=0 vendor err {vend} ({kind}) hca mlx5_{p.local % 8}"
            )
        elif nv >= (2, 20, 0):
            msg = (
                f"NET/IB : Got completion from peer {ip}<{port}> with status=12 opcode={op} "
                f"len=0 vendor err {vend} ({kind})"
            )
        elif nv >= (2, 18, 0):
            msg = (
                f"NET/IB : Got completion from peer {ip}<{port}> with error 12, opcode {op}, "
                f"len 0, vendor err {vend} ({kind})"
            )
        else:
            msg = (
                f"NET/IB : Got completion from peer {ip}<{port}> with error 12, opcode {op}, "
                f"len 0, vendor err {vend}"
            )
        t = self.t_fault + rng.uniform(28.0, 36.0)
        tid = p.pid + 173
        out.append((t, self.nccl_warn(p, t, "transport/net_ib.cc:1696", msg, tid)))
        for i, src in enumerate(
            (
                "transport/net_ib.cc:1700 -> 6",
                "transport/net.cc:1131 -> 6",
                "proxy.cc:869 -> 6",
                "proxy.cc:895 -> 6",
            )
        ):
            out.append((t + 1e-4 * (i + 1), self.nccl_info(p, src, tid)))

    def _first_collective(
        self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]
    ) -> None:
        """all_to_all at SeqNum=1: p2p connections to the culprit are refused."""
        c = self.culprit_rank or 0
        g = self.gpus
        nv = self.e.nccl
        t = p.t_enq + 0.002
        tid = p.pid + 175
        remote = [q for q in range(self.W) if q // g != p.host]
        for i, q in enumerate(remote[: 2 * g]):
            if q == c or p.rank == c:
                continue
            out.append(
                (
                    t + 1e-4 * i,
                    self.nccl_info(
                        p,
                        f"Channel {i % 2:02d}/1 : {p.rank}[{p.local}] -> {q}[{q % g}] [send] via "
                        f"NET/IB/{p.local % 8}/GDRDMA/Shared",
                    ),
                )
            )
        port = 40000 + (c * 977) % 20000
        ip = self.host_ips[c // g]
        if p.rank == c:
            tc = t + 0.05
            out.append(
                (
                    tc,
                    self.nccl_warn(
                        p,
                        tc,
                        "proxy.cc:1540",
                        f"[Proxy Service {c}] Failed to execute operation "
                        f"Connect from rank {c}, retcode 2",
                        tid,
                    ),
                )
            )
            out.append((tc + 1e-4, self.nccl_info(p, "transport/net.cc:1001 -> 2", tid)))
            out.append((tc + 2e-4, self.nccl_info(p, "proxy.cc:1311 -> 2", tid)))
            return
        if c not in remote:
            return
        tr = t + 0.01
        for k in range(2):
            if nv >= (2, 24, 0):
                msg = (
                    f"socketStartConnect: connect to {ip}<{port}> returned Connection refused, "
                    f"retrying ({k + 1}/34) after sleep for {100 * (k + 1)} msec"
                )
            else:
                msg = "Call to connect returned Connection refused, retrying"
            out.append((tr + k * 0.5, self.nccl_info(p, msg, tid)))
        tw = tr + 1.2
        if nv >= (2, 24, 0):  # ECONNREFUSED is retried since 2.24
            msg = (
                f"socketStartConnect: connect to {ip}<{port}> returned Connection refused, "
                "exceeded error retry count after 34 attempts"
            )
        else:
            msg = f"socketStartConnect: Connect to {ip}<{port}> failed : Connection refused"
        out.append((tw, self.nccl_warn(p, tw, "misc/socket.cc:484", msg, tid)))
        for i, src in enumerate(
            (
                "misc/socket.cc:564 -> 2",
                "misc/socket.cc:668 -> 2",
                "transport/net_ib.cc:1057 -> 2",
                "transport/net.cc:683 -> 2",
                "proxy.cc:1370 -> 2",
            )
        ):
            out.append((tw + 1e-4 * (i + 1), self.nccl_info(p, src, tid)))

    def _store(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        """Rendezvous through a TCPStore on rank 0; the culprit dials a wrong MASTER_ADDR."""
        e = self.e
        site = self.site()
        t0 = self.t_pg
        lg = self.clock.logging
        wrong = WRONG_MASTER
        c10d = f"{site}/torch/distributed"
        head = [
            "Traceback (most recent call last):",
            f'  File "{TRAIN}", line 214, in <module>',
            "    main()",
            f'  File "{TRAIN}", line 98, in main',
            '    dist.init_process_group(backend="nccl", timeout=timedelta(minutes=10))',
            f'  File "{c10d}/c10d_logger.py", line 79, in wrapper',
            "    return func(*args, **kwargs)",
            f'  File "{c10d}/c10d_logger.py", line 93, in wrapper',
            "    func_return = func(*args, **kwargs)",
            f'  File "{c10d}/distributed_c10d.py", line 1361, in init_process_group',
            "    store, rank, world_size = next(rendezvous_iterator)",
            f'  File "{c10d}/rendezvous.py", line 258, in _env_rendezvous_handler',
            "    store = _create_c10d_store(",
            f'  File "{c10d}/rendezvous.py", line 185, in _create_c10d_store',
            "    return TCPStore(",
        ]
        if self.carets():
            head.insert(13, "            ^^^^^^^^^^^^^^^^^^^")
            head.append("           ^^^^^^^^^")
        src = f"{e.build_root}/csrc/distributed/c10d"
        if p.fate == "store_server":
            t = p.t_exit - 0.3 if p.t_exit else t0
            tb = [
                *head,
                f"torch.distributed.DistStoreError: Timed out after 601 seconds waiting "
                f"for clients. {self.W - 1}/{self.W} clients joined.",
            ]
            err.append((t, "\n".join(tb)))
        elif p.fate == "store_wrong":
            k = 0
            tw = t0 + rng.uniform(20.0, 40.0)
            while tw < t0 + 600.0:
                msg = (
                    f"[c10d] The client socket has failed to connect to [{wrong}]:"
                    f"{self.master_port} (errno: 110 - Connection timed out)."
                )
                err.append(
                    (
                        tw,
                        self.c10(
                            p,
                            tw,
                            "W",
                            "socket.cpp",
                            697 if e.name < "2.5" else 752,
                            msg,
                            ranked=False,
                        ),
                    )
                )
                tw += rng.uniform(60.0, 140.0)
                k += 1
            t = p.t_exit - 0.4 if p.t_exit else t0
            frames = self.frames(
                p,
                [
                    ("c10::Error::Error(c10::SourceLocation, std::string)", "libc10.so"),
                    ("<unknown function>", "libc10.so"),
                    (
                        "c10d::detail::TCPClient::connect(c10d::detail::SocketAddress const&, "
                        "c10d::TCPStoreOptions const&, std::shared_ptr<c10d::Backoff>)",
                        "libtorch_cpu.so",
                    ),
                    (
                        "c10d::TCPStore::TCPStore(std::string, c10d::TCPStoreOptions const&)",
                        "libtorch_cpu.so",
                    ),
                    ("<unknown function>", "libtorch_python.so"),
                ],
            )
            tb = [
                *head,
                f"torch.distributed.DistNetworkError: The client socket has timed out "
                f"after 600000ms while trying to connect to ({wrong}, "
                f"{self.master_port}).",
                f"Exception raised from throwTimeoutError at {src}/socket.cpp:1021 (most "
                "recent call first):",
                *frames,
            ]
            err.append((t, "\n".join(tb)))
        else:
            tw = t0 + rng.uniform(0.0, 0.05)
            if self.flags["async_env"]:
                err.append(
                    (
                        tw,
                        self.c10(
                            p, tw, "W", "Utils.hpp", e.ln["utils"], ASYNC_ENV_WARNING, ranked=False
                        ),
                    )
                )
            tb_t = t0 + rng.uniform(1.5, 3.0)
            err.append(
                (
                    tb_t + 0.01,
                    self.c10(
                        p,
                        tb_t + 0.01,
                        "W",
                        "ProcessGroupNCCL.cpp",
                        e.ln["barrier"],
                        self._barrier_warning(p),
                    ),
                )
            )
            err.append(
                (
                    tb_t,
                    f"{lg(tb_t)} INFO train: rank {p.rank}/{self.W} joined the store at "
                    f"{self.host_ips[0]}:{self.master_port}; dist.barrier()",
                )
            )
            t = p.t_exit - 0.4 if p.t_exit else t0
            frames = self.frames(
                p,
                [
                    ("c10::Error::Error(c10::SourceLocation, std::string)", "libc10.so"),
                    (
                        "c10d::ProcessGroupNCCL::broadcastUniqueNCCLID(ncclUniqueId*, bool, "
                        "std::string const&, int)",
                        "libtorch_cuda.so",
                    ),
                    (
                        "c10d::ProcessGroupNCCL::getNCCLComm(std::string const&, c10::Device&, "
                        "c10d::OpType, int, bool)",
                        "libtorch_cuda.so",
                    ),
                    (
                        "c10d::ProcessGroupNCCL::barrier(c10d::BarrierOptions const&)",
                        "libtorch_cuda.so",
                    ),
                    ("<unknown function>", "libtorch_python.so"),
                ],
            )
            tb = [
                "Traceback (most recent call last):",
                f'  File "{TRAIN}", line 214, in <module>',
                "    main()",
                f'  File "{TRAIN}", line 101, in main',
                "    dist.barrier()",
                f'  File "{c10d}/c10d_logger.py", line 79, in wrapper',
                "    return func(*args, **kwargs)",
                f'  File "{c10d}/distributed_c10d.py", line 3936, in barrier',
                "    work = default_pg.barrier(opts=opts)",
                f"torch.distributed.DistBackendError: [{p.rank}] is setting up NCCL "
                "communicator and retrieving ncclUniqueId from [0] via c10d key-value store by "
                "key '0', but store->get('0') got error: Connection reset by peer",
                f"Exception raised from recvBytes at {src}/Utils.hpp:670 (most recent call first):",
                *frames,
            ]
            err.append((t, self.hook(p, tb)))

    # ---------------------------------------------------------------- launchers
