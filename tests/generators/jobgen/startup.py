"""A rank's start: Python startup, NCCL init chatter, rings/trees, the tp sub-communicators."""

from __future__ import annotations

import random

from .common import Line, RankPlan, ranks_to_str
from .eras import AFFINITY, ASYNC_ENV_WARNING, BUS_IDS, WRONG_MASTER


class Startup:
    """Job's part that writes each rank's start (a mixin of Job)."""

    def _startup(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        e = self.e
        t = self.t_start + rng.uniform(-1.5, 0.0)
        site = self.site()
        master = self.host_names[0] if self.layout == "torchrun" else self.host_ips[0]
        if self.fault == "store" and p.rank == self.culprit_rank:
            master = WRONG_MASTER
        env = [
            f"RANK={p.rank}",
            f"LOCAL_RANK={p.local}",
            f"WORLD_SIZE={self.W}",
            f"LOCAL_WORLD_SIZE={self.gpus}",
            f"MASTER_ADDR={master}",
            f"MASTER_PORT={self.master_port}",
            "NCCL_DEBUG=INFO",
            "NCCL_SOCKET_IFNAME=eth0",
            "NCCL_IB_HCA=mlx5",
        ]
        if self.flags["async_env"]:
            env.append("NCCL_ASYNC_ERROR_HANDLING=1")
        else:
            env.append("TORCH_NCCL_ASYNC_ERROR_HANDLING=1")
        if self.fault == "desync":
            env.append("TORCH_NCCL_DESYNC_DEBUG=1")
        if self.layout != "torchrun":
            env.append(f"SLURM_JOB_ID={self.jobid} SLURM_PROCID={p.rank}")
        out.append((t, f"[{self.host_names[p.host]}] launch env: {' '.join(env)}"))
        nc = e.nccl_str
        out.append(
            (
                t + 0.001,
                f"torch {e.torch} | cuda {e.cuda} | nccl {nc} | "
                f"python {e.python} | device cuda:{p.local} (NVIDIA H100 80GB HBM3)",
            )
        )
        if p.rank == 0:
            out.append(
                (
                    t + 0.002,
                    f"config: run={self.run_id} model=decoder-6.7b seq_len=4096 "
                    f"micro_bs=2 grad_accum=1 lr=3.0e-04 warmup=2000 "
                    f"max_steps={self.total_steps} bf16=True "
                    f"timeout={self.timeout_ms // 60000}min",
                )
            )
            out.append(
                (t + 0.003, "data: /datasets/fineweb-edu/tokenized (512 shards, 1.21e+11 tokens)")
            )
        warns: list[str] = []
        if e.name in ("2.4", "2.5", "2.6"):
            warns.append(
                f"{site}/torch/utils/checkpoint.py:1399: FutureWarning: `torch.cpu.amp.autocast"
                "(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead."
                "\n  with device_autocast_ctx, torch.cpu.amp.autocast(**cpu_autocast_kwargs), "
                "recompute_context:  # type: ignore[attr-defined]"
            )
        warns.append(
            f"{site}/torch/_utils.py:831: UserWarning: TypedStorage is deprecated. It will be "
            "removed in the future and UntypedStorage will be the only storage class. This should "
            "only matter to you if you are using storages directly.  To access UntypedStorage "
            "directly, use tensor.untyped_storage() instead.\n"
            "  return self.fget.__get__(instance, owner)()"
        )
        if self.flags["loader"]:
            warns.append(
                f"{site}/torch/utils/data/dataloader.py:617: UserWarning: This DataLoader will "
                "create 8 worker processes in total. Our suggested max number of worker in current"
                " system is 6, which is smaller than what this DataLoader is going to create. "
                "Please be aware that excessive worker creation might get DataLoader running "
                "slow or even freeze, lower the worker number to avoid potential slowness/freeze "
                "if necessary."
                "\n  warnings.warn("
            )
        tw = t + rng.uniform(0.3, 1.2)
        for w in warns[: 1 + rng.randrange(len(warns))]:
            err.append((tw, w))
            tw += 0.01

    def _init_nccl(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        e = self.e
        nv = e.nccl
        t = self.t_pg + rng.uniform(0.0, 0.05)
        if self.flags["async_env"]:
            msg = ASYNC_ENV_WARNING
            if e.name == "2.1":
                msg = msg.replace("operator()", "getCvarInt")
            err.append((t, self.c10(p, t, "W", "Utils.hpp", e.ln["utils"], msg, ranked=False)))
        t = self.t_nccl + rng.uniform(0.0, 0.05)
        if not self.first_coll:
            msg = self._barrier_warning(p)
            err.append((t, self.c10(p, t, "W", "ProcessGroupNCCL.cpp", e.ln["barrier"], msg)))
        ip = self.host_ips[p.host]
        info: list[str] = []
        ni = self.nccl_info
        if nv >= (2, 26, 0):
            info.append(ni(p, f"NCCL version {e.nccl_str}+cuda{e.nccl_cuda}"))
            info.append(ni(p, "NCCL_SOCKET_IFNAME set by environment to eth0"))
        info.append(ni(p, f"Bootstrap : Using eth0:{ip}<0>"))
        if nv < (2, 26, 0) and p.rank == 0:
            info.append(f"NCCL version {e.nccl_str}+cuda{e.nccl_cuda}")
        if nv >= (2, 18, 0):
            info.append(
                ni(p, "cudaDriverVersion 12040" if nv < (2, 26, 0) else "cudaDriverVersion 12080")
            )
        if nv >= (2, 21, 0):
            info.append(
                ni(p, "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.")
            )
        else:
            info.append(
                ni(
                    p,
                    "NET/Plugin : dlerror=libnccl-net.so: cannot open shared object "
                    "file: No such file or directory No plugin found (libnccl-net.so), "
                    "using internal implementation",
                )
            )
        if nv < (2, 26, 0):
            info.append(ni(p, "NCCL_SOCKET_IFNAME set by environment to eth0"))
        info.append(ni(p, "NCCL_IB_HCA set by environment to mlx5"))
        devs = " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(min(self.gpus, 8)))
        info.append(ni(p, f"NET/IB : Using {devs} [RO]; OOB eth0:{ip}<0>"))
        if nv >= (2, 19, 0):
            info.append(ni(p, "Using non-device net plugin version 0"))
        info.append(ni(p, "Using network IB"))
        comm = self.comm_ptr(p)
        bus = BUS_IDS[p.local % 8]
        fn = "ncclCommInitRankConfig " if nv >= (2, 21, 0) else ""
        ids = (
            f"comm {comm} rank {p.rank} nranks {self.W} cudaDev {p.local} "
            f"nvmlDev {p.local} busId {bus} commId 0x{self.comm_id}"
        )
        if nv >= (2, 18, 0):
            info.append(ni(p, f"{fn}{ids} - Init START"))
        if nv >= (2, 26, 0):
            b = [rng.uniform(0.0001, 0.002) for _ in range(4)]
            info.append(
                ni(
                    p,
                    f"Bootstrap timings total {sum(b) + 0.3:.6f} (create {b[0]:.6f}, "
                    f"send {b[1]:.6f}, recv {0.3 + b[2]:.6f}, ring {b[3]:.6f}, "
                    "delay 0.000000)",
                )
            )
        info.append(ni(p, f"Setting affinity for GPU {p.local} to {AFFINITY[p.local % 8]}"))
        if nv >= (2, 17, 0):
            info.append(ni(p, f"NVLS multicast support is not available on dev {p.local}"))
        if nv >= (2, 20, 0):
            mn = " MNNVL 0" if nv >= (2, 21, 0) else ""
            info.append(
                ni(
                    p,
                    f"comm {comm} rank {p.rank} nRanks {self.W} nNodes {self.hosts} "
                    f"localRanks {self.gpus} localRank {p.local}{mn}",
                )
            )
        info.append(ni(p, self._trees(p)))
        info.append(ni(p, "P2P Chunksize set to 524288"))
        info.extend(ni(p, ch) for ch in self._channels(p))
        info.append(
            ni(
                p,
                "Connected all rings, use ring PXN 0 GDR 1"
                if nv >= (2, 24, 0)
                else "Connected all rings",
            )
        )
        info.append(ni(p, "Connected all trees"))
        info.append(ni(p, "threadThresholds 8/8/64 | 128/8/64 | 512 | 512"))
        nch = self.n_channels * 2
        info.append(
            ni(
                p,
                f"{nch} coll channels, {nch} collnet channels, 0 nvls channels, "
                f"{nch} p2p channels, 2 p2p channels per peer",
            )
        )
        done_ids = (
            ids
            if nv >= (2, 18, 0)
            else (f"comm {comm} rank {p.rank} nranks {self.W} cudaDev {p.local} busId {bus}")
        )
        info.append(ni(p, f"{fn}{done_ids} - Init COMPLETE"))
        if nv >= (2, 22, 0):
            parts = [rng.uniform(0.01, 0.3) for _ in range(8)]
            info.append(
                ni(
                    p,
                    f"Init timings - ncclCommInitRankConfig: rank {p.rank} nranks "
                    f"{self.W} total {sum(parts):.2f} (kernels {parts[0]:.2f}, alloc "
                    f"{parts[1]:.2f}, bootstrap {parts[2]:.2f}, allgathers "
                    f"{parts[3]:.2f}, topo {parts[4]:.2f}, graphs {parts[5]:.2f}, "
                    f"connections {parts[6]:.2f}, rest {parts[7]:.2f})",
                )
            )
        dt = self.init_dur / max(1, len(info))
        for i, line in enumerate(info):
            out.append((t + 0.01 + i * dt + rng.uniform(0.0, dt * 0.5), line))

    def _barrier_warning(self, p: RankPlan) -> str:
        e = self.e
        if e.name == "2.6":
            return (
                f"{self.pg(p)} using GPU {p.local} as device used by this process is "
                "currently unknown. This can potentially cause a hang if this rank to GPU "
                "mapping is incorrect. You can pecify device_id in init_process_group() to "
                "force use of a particular device."
            )
        if e.c10_stamp:
            return (
                f"{self.pg(p)} using GPU {p.local} to perform barrier as devices used by this "
                "process are currently unknown. This can potentially cause a hang if this rank "
                "to GPU mapping is incorrect.Specify device_ids in barrier() to force use of a "
                "particular device,or call init_process_group() with a device_id."
            )
        return (
            f"Rank {p.rank} using GPU {p.local} to perform barrier as devices used by this "
            "process are currently unknown. This can potentially cause a hang if this rank to "
            "GPU mapping is incorrect.Specify device_ids in barrier() to force use of a "
            "particular device."
        )

    def _ring_next_prev(self, p: RankPlan, c: int) -> tuple[int, int]:
        """Ring c visits each host's GPUs rotated by c, then moves on to the next host."""
        g = self.gpus
        order = [(p2 + c) % g for p2 in range(g)]
        pos = order.index(p.local)
        if pos + 1 < g:
            nxt = p.host * g + order[pos + 1]
        else:
            nxt = ((p.host + 1) % self.hosts) * g + order[0]
        prv = (
            p.host * g + order[pos - 1] if pos > 0 else ((p.host - 1) % self.hosts) * g + order[-1]
        )
        return nxt, prv

    def _channels(self, p: RankPlan) -> list[str]:
        g = self.gpus
        out = []
        for c in range(self.n_channels):
            nxt, prv = self._ring_next_prev(p, c)
            if prv // g != p.host:
                out.append(
                    f"Channel {c:02d}/0 : {prv}[{prv % g}] -> {p.rank}[{p.local}] "
                    f"[receive] via NET/IB/{p.local % 8}/GDRDMA"
                )
            if nxt // g == p.host:
                out.append(
                    f"Channel {c:02d}/0 : {p.rank}[{p.local}] -> {nxt}[{nxt % g}] via P2P/IPC"
                )
            else:
                out.append(
                    f"Channel {c:02d}/0 : {p.rank}[{p.local}] -> {nxt}[{nxt % g}] "
                    f"[send] via NET/IB/{p.local % 8}/GDRDMA"
                )
        return out

    def _trees(self, p: RankPlan) -> str:
        g = self.gpus
        parts = []
        for c in range(min(self.n_channels, 4)):
            up = p.rank - 1 if p.local > 0 else (-1 if p.host == 0 else p.rank - g)
            down = p.rank + 1 if p.local + 1 < g else -1
            cross = p.rank + g if p.local == 0 and p.host + 1 < self.hosts else -1
            parts.append(f"[{c}] {down}/{cross}/-1->{p.rank}->{up}")
        return "Trees " + " ".join(parts)

    def _setup(self, p: RankPlan, rng: random.Random, out: list[Line], err: list[Line]) -> None:
        t = self.t_setup + rng.uniform(0.0, 0.4)
        lg = self.clock.logging
        err.append(
            (
                t,
                f"{lg(t)} INFO train: rank {p.rank}/{self.W} building model "
                "decoder-6.7b (6.74B params, bf16)",
            )
        )
        t2 = t + rng.uniform(2.0, 5.0)
        err.append(
            (
                t2,
                f"{lg(t2)} INFO train: rank {p.rank}/{self.W} DDP(bucket_cap_mb=25, "
                f"find_unused_parameters={self.flags['unused']}) "
                f"-> {self.n_buckets} buckets",
            )
        )
        if p.rank == 0:
            t3 = t2 + 0.2
            err.append(
                (
                    t3,
                    f"{lg(t3)} INFO train: optimizer AdamW(lr=3.0e-04, betas=(0.9, 0.95), "
                    "weight_decay=0.1), scheduler cosine(warmup=2000)",
                )
            )
        if self.first_coll:
            t4 = self.t_fstep - rng.uniform(0.2, 1.0)
            err.append(
                (
                    t4,
                    f"{lg(t4)} INFO train: rank {p.rank}/{self.W} routing warm-up: "
                    "all_to_all_single over 16777216 tokens",
                )
            )
            return
        t5 = self.t_train0 - rng.uniform(0.5, 2.0)
        err.append(
            (t5, f"{lg(t5)} INFO train: rank {p.rank}/{self.W} starting training from step 0")
        )

    def _init_tp(self, p: RankPlan, out: list[Line], err: list[Line]) -> None:
        """Fault subgroup: the script's tp group line and the tp communicator's NCCL init.

        ProcessGroupNCCL creates a group's communicator at its first collective (step 1's tp
        all-reduce); with no device_id bound there is no parent comm to split, so NCCL logs a
        plain ncclCommInitRankConfig with the group-local rank, nranks tp and the group's commId.
        """
        rng = random.Random((self.seed << 20) ^ (p.rank * 0x5851F42D + 11))  # noqa: S311
        e, nv, tp = self.e, self.e.nccl, self.tp
        k, g = self.tp_index(p.rank), p.rank % tp
        ranks = self.tp_ranks(k)
        lg = self.clock.logging
        t = self.t_setup + 0.45 + rng.uniform(0.0, 0.05)
        err.append(
            (
                t,
                f"{lg(t)} INFO train: rank {p.rank}/{self.W} tensor parallel: tp_size={tp} "
                f"tp_rank={g} group [{ranks_to_str(ranks)}] (new_group desc=tp); gradients are "
                "all-reduced over the default group",
            )
        )
        ni = self.nccl_info
        base = 0x55D000000000 + (((p.aslr * 7919) << 4) & 0xFFFFFFFF0)
        comm = f"0x{base + 0x3A8F40 + 0x1000 * k:x}"
        bus = BUS_IDS[p.local % 8]
        fn = "ncclCommInitRankConfig " if nv >= (2, 21, 0) else ""
        ids = (
            f"comm {comm} rank {g} nranks {tp} cudaDev {p.local} nvmlDev {p.local} "
            f"busId {bus} commId 0x{self.tp_comm_id(k)}"
        )
        info: list[str] = []
        if nv < (2, 26, 0) and g == 0:  # rank 0 of every communicator prints the banner
            info.append(f"NCCL version {e.nccl_str}+cuda{e.nccl_cuda}")
        info.append(ni(p, "Using network IB"))
        if nv >= (2, 18, 0):
            info.append(ni(p, f"{fn}{ids} - Init START"))
        if nv >= (2, 26, 0):
            b = [rng.uniform(0.0001, 0.002) for _ in range(4)]
            info.append(
                ni(
                    p,
                    f"Bootstrap timings total {sum(b) + 0.01:.6f} (create {b[0]:.6f}, "
                    f"send {b[1]:.6f}, recv {0.01 + b[2]:.6f}, ring {b[3]:.6f}, "
                    "delay 0.000000)",
                )
            )
        info.append(ni(p, f"Setting affinity for GPU {p.local} to {AFFINITY[p.local % 8]}"))
        if nv >= (2, 20, 0):
            mn = " MNNVL 0" if nv >= (2, 21, 0) else ""
            info.append(
                ni(
                    p,
                    f"comm {comm} rank {g} nRanks {tp} nNodes 1 localRanks {tp} localRank {g}{mn}",
                )
            )
        down = g + 1 if g + 1 < tp else -1
        up = g - 1 if g > 0 else -1
        trees = " ".join(f"[{c}] {down}/-1/-1->{g}->{up}" for c in range(min(self.n_channels, 4)))
        info.append(ni(p, f"Trees {trees}"))
        info.append(ni(p, "P2P Chunksize set to 524288"))
        nxt = (g + 1) % tp
        nxt_dev = (p.local - g + nxt) % self.gpus
        info.extend(
            ni(p, f"Channel {c:02d}/0 : {g}[{p.local}] -> {nxt}[{nxt_dev}] via P2P/IPC")
            for c in range(self.n_channels)
        )
        info.append(
            ni(
                p,
                "Connected all rings, use ring PXN 0 GDR 1"
                if nv >= (2, 24, 0)
                else "Connected all rings",
            )
        )
        info.append(ni(p, "Connected all trees"))
        info.append(ni(p, "threadThresholds 8/8/64 | 16/8/64 | 512 | 512"))
        nch = self.n_channels
        info.append(
            ni(
                p,
                f"{nch} coll channels, {nch} collnet channels, 0 nvls channels, "
                f"{nch} p2p channels, {nch} p2p channels per peer",
            )
        )
        done_ids = (
            ids
            if nv >= (2, 18, 0)
            else f"comm {comm} rank {g} nranks {tp} cudaDev {p.local} busId {bus}"
        )
        info.append(ni(p, f"{fn}{done_ids} - Init COMPLETE"))
        if nv >= (2, 22, 0):
            parts = [rng.uniform(0.005, 0.08) for _ in range(8)]
            info.append(
                ni(
                    p,
                    f"Init timings - ncclCommInitRankConfig: rank {g} nranks {tp} total "
                    f"{sum(parts):.2f} (kernels {parts[0]:.2f}, alloc {parts[1]:.2f}, bootstrap "
                    f"{parts[2]:.2f}, allgathers {parts[3]:.2f}, topo {parts[4]:.2f}, graphs "
                    f"{parts[5]:.2f}, connections {parts[6]:.2f}, rest {parts[7]:.2f})",
                )
            )
        t0 = self.t_train0 + 0.2 * self.step_time + rng.uniform(0.0, 0.05)
        dt = rng.uniform(0.3, 0.6) / len(info)
        for i, line in enumerate(info):
            out.append((t0 + i * dt + rng.uniform(0.0, dt * 0.5), line))
