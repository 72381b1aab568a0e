"""Every principle of the diagnosis, firing and losing to a better-founded one.

test_fixtures.py shows each principle winning where it should (each bundle's expected.yaml names the
principle that must decide). Here each one fires on evidence of
its own — a rank it names — and must lose to a principle that names a different rank, for the
reason the scenario gives. Each test writes a small job (4 to 8 ranks, one log per rank, the line
formats of the committed real-* / nccl2* fixtures with only ranks, SeqNums, times and addresses
changed, healthy noise included) and checks the winner, its culprits, and that the loser is listed
among `hypotheses_lost` naming ranks that do not overlap the winner's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from triage.api import analyze
from triage.report.json_format import to_dict

# --- writing a job ----------------------------------------------------------------------------


def _verdict(tmp_path: Path, files: dict[str, list[str]]) -> dict[str, Any]:
    for name, lines in files.items():
        path = tmp_path / "logs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return to_dict(analyze([tmp_path / "logs"]))["verdict"]


def _who(culprits: list[dict[str, Any]]) -> set[tuple[str, Any]]:
    return {("rank", c["rank"]) if c["kind"] == "rank" else (c["kind"], c["host"]) for c in culprits}


def _hosts(culprits: list[dict[str, Any]]) -> set[str]:
    return {c["host"] for c in culprits if c["host"]}


def _loses(verdict: dict[str, Any], *, winner: str, culprits: set[tuple[str, Any]], loser: str,
           loser_culprits: set[tuple[str, Any]], clear: bool = True) -> dict[str, Any]:
    """The verdict names `culprits` by `winner`; `loser` fired, naming `loser_culprits`, and lost.

    `clear`: the winner's confidence is above the loser's score (no close rival marked it down).
    """
    lost = [(h["name"], h["score"], sorted(_who(h["culprits"]), key=str)) for h in verdict["hypotheses_lost"]]
    summary = (f"won: {verdict['hypothesis']} {verdict['confidence']} {sorted(_who(verdict['culprits']), key=str)}; "
               f"lost: {lost}; {verdict['reasoning']}")
    assert verdict["status"] == "diagnosed", summary
    assert verdict["hypothesis"] == winner, summary
    assert _who(verdict["culprits"]) == culprits, summary
    candidates = [h for h in verdict["hypotheses_lost"] if h["name"] == loser]
    assert candidates, summary
    named = [h for h in candidates if _who(h["culprits"]) == loser_culprits]
    assert named, summary
    (hypothesis,) = named
    assert not _who(hypothesis["culprits"]) & _who(verdict["culprits"]), summary
    if clear:
        assert hypothesis["score"] < verdict["confidence"], summary
    return hypothesis


def _py_time(second: float) -> str:
    """Python logging's `2026-11-22 21:20:07,365` for `second` seconds after 21:20:00."""
    ms = round(second * 1000)
    return f"2026-11-22 21:{20 + ms // 60000:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def _c10_time(second: float, ns: int) -> str:
    """c10's `1122 21:20:18.443812940` (the fraction is a monotonic clock's, not wall time)."""
    s = int(second)
    return f"1122 21:{20 + s // 60:02d}:{s % 60:02d}.{ns:09d}"


# --- a gloo job (CPU) as real_job.py writes it under torchrun --tee ----------------------------

SITE = "/opt/venv/lib/python3.11/site-packages"
GLOO_RECV_TIMEOUT = ("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
                     "Timed out waiting 5000ms for recv operation to complete")
GLOO_SEND_TIMEOUT = ("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] "
                     "Timed out waiting 5000ms for send operation to complete")


def _gloo_peer_closed(port: int) -> str:
    return (f"[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed "
            f"by peer [127.0.0.1]:{port}. This is typically caused by a remote worker crashing. Check the "
            "logs of the remote worker before reporting an error. GLHF! \U0001f3d6\ufe0f")


def _gloo_start(rank: int, world: int) -> list[str]:
    return [
        f"{SITE}/torch/_subclasses/functional_tensor.py:368: UserWarning: Failed to initialize NumPy: No "
        "module named 'numpy' (Triggered internally at /__w/pytorch/pytorch/torch/csrc/utils/tensor_numpy.cpp:84.)",
        '  cpu = _conversion_method_template(device=torch.device("cpu"))',
        f"{_py_time(3.3)} INFO train: rank {rank}/{world} (local_rank {rank}) starting on vm, pid {16540 + rank}",
        f"{_py_time(3.3)} INFO train.data: loading dataset index from /data/shards (rank {rank})",
        f"{_py_time(3.5)} INFO train: process group ready: backend=gloo world_size={world}",
        "/workspace/real_job.py:157: FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated. "
        "Please use `torch.amp.GradScaler('cuda', args...)` instead.",
        "  warnings.warn(",
        f"{_py_time(3.5)} INFO train.data: dataloader: 320 samples/rank, batch_size=32, num_workers=4",
        f"{_py_time(3.5)} WARNING train.data: dataloader: num_workers=4 is more than the 2 CPUs available; using 2",
        f"{_py_time(3.54)} INFO train: initial weights synchronised from rank 0",
    ]


def _gloo_steps(rank: int, last: int, *, first: int = 0) -> list[str]:
    lines = []
    for step in range(first, last + 1):
        lines.append(f"step {step} loss {11 + (rank * 7 + step * 5) % 13 + 0.1234 * (step + 1):.4f}")
        if step == 2:
            lines.append(f"{_py_time(7.36)} WARNING train: checkpoint: no checkpoint dir configured, "
                         "skipping save at step 2")
    return lines


def _traceback(rank: int, last: str, *, call: str = "all_reduce") -> list[str]:
    """A failing collective's traceback: the gradient all_reduce, a broadcast from rank 0, the
    expert group's all_reduce, or the step's monitored_barrier."""
    p = f"[rank{rank}]:"
    user, line, code = {
        "all_reduce": ([(191, "main", "reduce_grads(model, step)"), (133, "reduce_grads", "dist.all_reduce(p.grad)")],
                       3252, "work.wait()"),
        "broadcast": ([(188, "main", "dist.broadcast(p.data, src=0)")], 3151, "work.wait()"),
        "expert": ([(197, "main", "dist.all_reduce(expert_loss, group=expert_group)")], 3252, "work.wait()"),
        "monitored_barrier": ([(203, "main", "dist.monitored_barrier(timeout=STEP_TIMEOUT, wait_all_ranks=True)")],
                              5435, "return group_to_use.monitored_barrier(  # type:ignore[attr-defined]"),
    }[call]
    frames = [line for n, where, text in user
              for line in (f'{p}   File "/workspace/real_job.py", line {n}, in {where}', f"{p}     {text}")]
    name = "all_reduce" if call == "expert" else call
    return [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/workspace/real_job.py", line 212, in <module>',
        f"{p}     main()",
        *frames,
        f'{p}   File "{SITE}/torch/distributed/c10d_logger.py", line 83, in wrapper',
        f"{p}     return func(*args, **kwargs)",
        f"{p}            ^^^^^^^^^^^^^^^^^^^^^",
        f'{p}   File "{SITE}/torch/distributed/distributed_c10d.py", line {line}, in {name}',
        f"{p}     {code}",
        f"{p} {last}",
    ]


def _torchrun_failures(*, glog: str, when: str, host: str, pids: dict[int, int], culprit: int,
                       code: int = -9) -> list[str]:
    """A torchrun agent's SIGTERMs and ChildFailedError record: `culprit` as Root Cause.

    `glog` is its `MMDD HH:MM:SS` time, `when` the record's `YYYY-MM-DD_HH:MM:SS`, `pids` the global
    ranks of its workers (local ranks in that order) and their pids.
    """
    agent = 16538
    local = {rank: index for index, rank in enumerate(sorted(pids))}
    lines = [f"W{glog}.{70000 + rank:06d} {agent} torch/distributed/elastic/multiprocessing/api.py:1028] "
             f"Sending process {pid} closing signal SIGTERM" for rank, pid in pids.items() if rank != culprit]
    lines += [
        f"E{glog}.264000 {agent} torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: "
        f"{code}) local_rank: {local[culprit]} (pid: {pids[culprit]}) of binary: /opt/venv/bin/python3",
        "Traceback (most recent call last):",
        '  File "/opt/venv/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        "             ^^^^^^",
        f'  File "{SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 367, in wrapper',
        "    return f(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^",
        f'  File "{SITE}/torch/distributed/run.py", line 1028, in main',
        "    run(args)",
        f'  File "{SITE}/torch/distributed/launcher/api.py", line 383, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=======================================================",
        "real_job.py FAILED",
        "-------------------------------------------------------",
        "Failures:",
    ]

    def record(index: int, rank: int, code: int, signal: str) -> list[str]:
        return [f"[{index}]:", f"  time      : {when}", f"  host      : {host}",
                f"  rank      : {rank} (local_rank: {local[rank]})",
                f"  exitcode  : {code} (pid: {pids[rank]})  ({signal})", "  error_file: <N/A>",
                f"  traceback : Signal {-code} ({signal}) received by PID {pids[rank]}"]

    others = [rank for rank in sorted(pids) if rank != culprit]
    for index, rank in enumerate(others, start=1):
        lines += record(index, rank, -15, "SIGTERM")
    signal = {-9: "SIGKILL", -6: "SIGABRT", -11: "SIGSEGV"}[code]
    return [*lines, "-------------------------------------------------------", "Root Cause (first observed failure):",
            *record(0, culprit, code, signal), "======================================================="]


def _step_failed(second: float, step: int, error: str) -> str:
    """real_job.py's ON_ERROR_GRACE_S line: the error, then 10 s of 'emergency checkpoint'."""
    return f"{_py_time(second)} ERROR train: step {step} failed ({error[:200]}); writing emergency checkpoint"


# --- 1. named-by-tool ---------------------------------------------------------------------------


def test_named_by_tool_loses_when_it_names_many_waiting_ranks_and_another_failed_first(tmp_path: Path) -> None:
    """Rank 2 ran out of memory at step 4, caught it and skipped the batch — and with it the
    all_reduce of its expert group {2, 4, 5, 6}, where ranks 4, 5, 6 then waited and timed out.
    The monitored_barrier that ends each step (wait_all_ranks=True) reached rank 0 without them:
    it names ranks 4, 5, 6, each of which reported waiting on a peer. Rank 2 is the culprit."""
    world = 8
    files: dict[str, list[str]] = {}
    barrier = "[Rank 0]: Ranks 4, 5, 6 failed to pass monitoredBarrier in 5000 ms"
    for rank in range(world):
        lines = _gloo_start(rank, world) + _gloo_steps(rank, 3)
        if rank in (4, 5, 6):
            error = f"RuntimeError: {GLOO_RECV_TIMEOUT if rank % 2 else GLOO_SEND_TIMEOUT}"
            lines += [_step_failed(16.3 + rank / 100, 4, error), *_traceback(rank, error, call="expert")]
            files[f"rank{rank}.log"] = lines
            continue
        if rank == 2:
            oom = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 2 has a total "
                   "capacity of 79.10 GiB of which 2.08 GiB is free. Including non-PyTorch memory, this "
                   "process has 77.02 GiB memory in use.")
            lines.append(_step_failed(11.2, 4, oom).replace("writing emergency checkpoint", "skipping the batch"))
        lines += _gloo_steps(rank, 4, first=4)
        if rank == 0:
            lines += [f"[rank0]:[E{_c10_time(18.4, 443812940 + 40089 * k)} ProcessGroupGloo.cpp:2901] "
                      f"[Rank 0]: Rank {k} failed to pass monitoredBarrier in 5000 ms" for k in (4, 5, 6)]
            lines += [f"[rank0]:[E{_c10_time(18.4, 443962583)} ProcessGroupGloo.cpp:67] {barrier}"]
            lines += _traceback(0, f"RuntimeError: {barrier}", call="monitored_barrier")
        else:
            reached = (f"Rank {rank} successfully reached monitoredBarrier, but received errors while "
                       "waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.")
            lines += [f"[rank{rank}]:[E{_c10_time(18.4, 496175161 + rank)} ProcessGroupGloo.cpp:67] {reached}"]
            lines += _traceback(rank, f"RuntimeError: {reached}", call="monitored_barrier")
        files[f"rank{rank}.log"] = lines
    verdict = _verdict(tmp_path, files)
    lost = _loses(verdict, winner="first-failure", culprits={("rank", 2)}, loser="named-by-tool",
                  loser_culprits={("rank", 4), ("rank", 5), ("rank", 6)})
    assert lost["score"] == pytest.approx(0.6)  # more ranks than a tool's culprits usually are


# --- 2. first-failure ---------------------------------------------------------------------------


def test_first_failure_loses_when_its_only_evidence_is_a_line_no_rule_knows(tmp_path: Path) -> None:
    """Rank 5 logged an ERROR line early that no rule explains (an optional plugin it could not
    load, handled), then timed out like the others; rank 2 logged no timeout at all: it hung."""
    world = 6
    files: dict[str, list[str]] = {}
    for rank in range(world):
        steps = _gloo_steps(rank, 4)
        if rank == 5:
            steps.insert(2, f"{_py_time(5.1)} ERROR train.data: failed to import optional plugin 'fastjpeg' "
                            "(No module named 'fastjpeg'); falling back to PIL")
        lines = _gloo_start(rank, world) + steps
        if rank != 2:
            error = f"RuntimeError: {GLOO_SEND_TIMEOUT if rank % 2 else GLOO_RECV_TIMEOUT}"
            lines += [_step_failed(14.2 + rank / 100, 5, error)]
            lines += _traceback(rank, error)
        files[f"rank{rank}.log"] = lines
    verdict = _verdict(tmp_path, files)
    lost = _loses(verdict, winner="silent-rank", culprits={("rank", 2)}, loser="first-failure",
                  loser_culprits={("rank", 5)})
    assert lost["score"] <= 0.55


# --- an NCCL job, torch 2.3 (TORCH_NCCL_DESYNC_DEBUG=1), one log per rank -----------------------

LIB = "/opt/venv/lib/python3.10/site-packages/torch/lib"


def _nccl23_start(rank: int, world: int, *, per_host: int = 8) -> list[str]:
    host, ip, local = f"gpu-node-{rank // per_host + 1:02d}", f"10.42.0.{rank // per_host + 1}", rank % per_host
    who = f"{host}:{2798460 + 3 * rank}:{2798460 + 3 * rank} [{local}]"
    return [
        f"[{host}] launch env: RANK={rank} LOCAL_RANK={local} WORLD_SIZE={world} LOCAL_WORLD_SIZE={per_host} "
        "MASTER_ADDR=10.42.0.1 MASTER_PORT=29500 NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=eth0 NCCL_IB_HCA=mlx5 "
        f"TORCH_NCCL_ASYNC_ERROR_HANDLING=1 TORCH_NCCL_DESYNC_DEBUG=1 SLURM_JOB_ID=249488 SLURM_PROCID={rank}",
        f"torch 2.3.1+cu121 | cuda 12.1 | nccl 2.20.5 | python 3.10.14 | device cuda:{local} (NVIDIA H100 80GB HBM3)",
        "/opt/venv/lib/python3.10/site-packages/torch/_utils.py:831: UserWarning: TypedStorage is deprecated. "
        "It will be removed in the future and UntypedStorage will be the only storage class. This should only "
        "matter to you if you are using storages directly.  To access UntypedStorage directly, use "
        "tensor.untyped_storage() instead.",
        "  return self.fget.__get__(instance, owner)()",
        f"[rank{rank}]:[W ProcessGroupNCCL.cpp:3689] Rank {rank} using GPU {local} to perform barrier as devices "
        "used by this process are currently unknown. This can potentially cause a hang if this rank to GPU "
        "mapping is incorrect.Specify device_ids in barrier() to force use of a particular device.",
        f"{who} NCCL INFO Bootstrap : Using eth0:{ip}<0>",
        f"{who} NCCL INFO cudaDriverVersion 12040",
        f"{who} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; "
        f"OOB eth0:{ip}<0>",
        f"{who} NCCL INFO Using network IB",
        f"{who} NCCL INFO comm 0x55d346594600 rank {rank} nranks {world} cudaDev {local} nvmlDev {local} "
        "busId 1b000 commId 0xacc61bf7eef731eb - Init START",
        f"{who} NCCL INFO comm 0x55d346594600 rank {rank} nRanks {world} nNodes {(world + per_host - 1) // per_host} "
        f"localRanks {per_host} localRank {local}",
        f"{who} NCCL INFO Channel 00/0 : {rank}[{local}] -> {(rank + 1) % world}[{(local + 1) % per_host}] via P2P/IPC",
        f"{who} NCCL INFO Connected all rings",
        f"{who} NCCL INFO Connected all trees",
        f"{who} NCCL INFO comm 0x55d346594600 rank {rank} nranks {world} cudaDev {local} nvmlDev {local} "
        "busId 1b000 commId 0xacc61bf7eef731eb - Init COMPLETE",
        f"2024-06-11 17:19:39,304 INFO train: rank {rank}/{world} building model decoder-6.7b (6.74B params, bf16)",
        f"2024-06-11 17:19:42,396 INFO train: rank {rank}/{world} DDP(bucket_cap_mb=25, find_unused_parameters=False) -> 27 buckets",
        f"2024-06-11 17:19:56,198 INFO train: rank {rank}/{world} starting training from step 0",
    ]


def _nccl23_steps(rank: int, world: int, last: int) -> list[str]:
    lines = []
    for step in range(last - 5, last + 1):
        ms = 2_000 + step * 1_573
        lines.append(f"2024-06-11 17:{19 + ms // 60_000:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d} INFO train: "
                     f"rank {rank}/{world} step {step}/20000 | loss {10.9 - step * 0.0285:.4f} | lr 1.620e-05 | "
                     "grad_norm 2.005 | 1.57s/it | tok/s 41,615 | mem 61.9GiB")
    return lines


def _nccl23_frames(func: str, line: int) -> list[str]:
    return [
        f"Exception raised from {func} at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:{line} (most recent call first):",
        f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x1ba (0x7f11b1a219d7 in {LIB}/libc10.so)",
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        f"std::ratio<1l, 1000l> > >) + 0x33f (0x7f9db1ad4f6e in {LIB}/libtorch_cuda.so)",
        f"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x71 (0x7f9db1a8c19d in {LIB}/libtorch_cuda.so)",
        f"frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x259 (0x7f9db1a6465b in {LIB}/libtorch_cuda.so)",
        "frame #4: <unknown function> + 0x9bc45 (0x7f1cb1a9bc45 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
        "frame #5: <unknown function> + 0xbdcbb (0x7f7fb1abdcbb in /lib/x86_64-linux-gnu/libc.so.6)",
        "frame #6: clone + 0x392 (0x7f7fb1ab8bed in /lib/x86_64-linux-gnu/libc.so.6)",
        "",
    ]


def _nccl23_timeout(rank: int, seq: int, enqueued: int, *, report: list[str] | None = None,
                    numel: int = 4229381, ran_ms: int = 600041, op: str = "ALLREDUCE") -> list[str]:
    work = (f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, "
            f"Timeout(ms)=600000) ran for {ran_ms} milliseconds before timing out.")
    caught = f"[Rank {rank}] Watchdog caught collective operation timeout: {work}"
    terminated = f"[PG 0 Rank {rank}] Process group watchdog thread terminated with exception: {caught}"
    lines = [f"[rank{rank}]:[E ProcessGroupNCCL.cpp:565] {caught}"]
    if report is not None:
        lines += [f"[rank{rank}]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank {rank}] ",
                  f"\t - [{rank}] Timeout at collective: {op}, #{seq}", *report]
    lines += [
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank {rank}] Timeout at NCCL work: {seq}, last "
        f"enqueued NCCL work: {enqueued}, last completed NCCL work: {seq - 1}.",
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:579] [Rank {rank}] Some NCCL operations have failed or timed out. "
        "Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.",
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:585] [Rank {rank}] To avoid data inconsistency, we are taking "
        "the entire process down.",
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:1414] {terminated}",
        *_nccl23_frames("checkTimeout", 567),
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {terminated}",
        *_nccl23_frames("checkTimeout", 567),
    ]
    return lines


# --- 3. silent-rank -------------------------------------------------------------------------------


def test_silent_rank_loses_to_the_desync_report(tmp_path: Path) -> None:
    """The desync reports of six ranks say rank 3 finished collective #3027 but never joined
    #3028, which rank 5 had started; rank 3, a straggler, timed out at #3028 later by itself. Rank
    5's log was copied before its watchdog fired, so it shows no timeout: silent, but the reports say
    it was in the collective. Rank 3 is the culprit."""
    world = 8
    report = [
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
        "\t     [3] finished collective #3027, but didn't join collective #3028 (count from 1)",
        "\t - Snapshot of ranks' latest states:",
        "\t   #3027 finished ranks:",
        "\t     [3] finished ALLREDUCE",
        "\t   #3028 started ranks:",
        "\t     [0, 1, 2, 4, 5, 6, 7] started ALLREDUCE",
    ]
    files: dict[str, list[str]] = {}
    for rank in range(world):
        lines = _nccl23_start(rank, world) + _nccl23_steps(rank, world, 108)
        if rank == 3:
            lines += _nccl23_timeout(rank, 3028, 3028, ran_ms=600012)
        elif rank != 5:
            lines += _nccl23_timeout(rank, 3028, 3055, report=report, ran_ms=600031 + rank)
        files[f"rank-{rank:04d}.log"] = lines
    verdict = _verdict(tmp_path, files)
    _loses(verdict, winner="named-by-tool", culprits={("rank", 3)}, loser="silent-rank",
           loser_culprits={("rank", 5)})


# --- 4. collective-mismatch -----------------------------------------------------------------------


def test_traceback_collective_mismatch_loses_to_a_rank_killed_first(tmp_path: Path) -> None:
    """Rank 1 was SIGKILLed (the agent's Root Cause, exitcode -9) during step 5. The survivors lost
    their connections to it wherever they were: five in the step's gradient all_reduce, rank 3 still
    in the broadcast before it (its data comes through rank 1 in gloo's broadcast tree). The odd
    frame is a consequence; rank 1 is the culprit."""
    world = 8
    files: dict[str, list[str]] = {}
    for rank in range(world):
        lines = _gloo_start(rank, world) + _gloo_steps(rank, 4)
        if rank == 3:
            lines += _traceback(rank, f"RuntimeError: {_gloo_peer_closed(41000 + rank)}", call="broadcast")
        elif rank in (0, 2, 4, 5, 6):
            read_error = ("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
                          f"[127.0.0.1]:{946 + rank}: Connection reset by peer. This is typically caused by a remote "
                          "worker hanging or bugs in the application. Check the logs of the remote worker before "
                          "reporting an error. GLHF! \U0001f3d6\ufe0f")
            lines += _traceback(rank, f"RuntimeError: {read_error if rank % 2 == 0 else _gloo_peer_closed(41000 + rank)}")
        files[f"rank{rank}.log"] = lines
    files["torchrun.log"] = _torchrun_failures(glog="1122 21:20:38", when="2026-11-22_21:20:38", host="localhost",
                                               pids={rank: 16540 + rank for rank in range(world)}, culprit=1)
    verdict = _verdict(tmp_path, files)
    lost = _loses(verdict, winner="first-failure", culprits={("rank", 1)}, loser="collective-mismatch",
                  loser_culprits={("rank", 3)})
    assert lost["score"] == pytest.approx(0.7)


# --- an NCCL job, torch 2.4 / 2.5 / 2.7, several hosts, one log per rank ---------------------------

LIB311 = "/opt/venv/lib/python3.11/site-packages/torch/lib"
# What differs between the releases' watchdog records (nccl24-ib-host3, nccl25-lagging-rank9,
# nccl26-subgroup-hang-rank5): versions, the c10 line numbers, the process-group prefix.
RELEASE = {
    "2.4": {"torch": "torch 2.4.1+cu124 | cuda 12.4 | nccl 2.20.5 | python 3.11.9", "day": "2024-08-20",
            "mmdd": "820", "pg": "PG 0 (default_pg)", "lines": (607, 1664, 1709, 621, 627, 1515, 609)},
    "2.5": {"torch": "torch 2.5.1+cu124 | cuda 12.4 | nccl 2.21.5 | python 3.11.10", "day": "2024-11-19",
            "mmdd": "1119", "pg": "PG ID 0 PG GUID 0(default_pg)", "lines": (616, 1785, 1834, 630, 636, 1601, 618)},
    # torch >= 2.6 wording (nccl26-subgroup-hang-rank5); NCCL 2.26 stamps its WARN lines.
    "2.7": {"torch": "torch 2.7.1+cu126 | cuda 12.6 | nccl 2.26.2 | python 3.12.11", "day": "2025-07-08",
            "mmdd": "708", "pg": "PG ID 0 PG GUID 0(default_pg)", "lines": (632, 2168, 2199, 655, 661, 1895, 635)},
}


def _hms(second: float) -> str:
    """The wall clock `second` seconds after 03:40:00."""
    minute = 40 + int(second) // 60
    return f"{3 + minute // 60:02d}:{minute % 60:02d}:{int(second) % 60:02d}"


def _nccl_py(release: str, second: float) -> str:
    ms = round(second * 1000)
    return f"{RELEASE[release]['day']} {_hms(ms // 1000)},{ms % 1000:03d}"


def _nccl_c10(release: str, second: float, ns: int) -> str:
    return f"{RELEASE[release]['mmdd']} {_hms(second)}.{ns:09d}"


def _host(rank: int, per_host: int = 4) -> tuple[str, str, int]:
    """(host, its address, local rank)."""
    return f"gpu-node-{rank // per_host + 1:02d}", f"10.42.0.{rank // per_host + 1}", rank % per_host


def _nccl_start(release: str, rank: int, world: int, *, pid: int, training: bool = True,
                per_host: int = 4) -> list[str]:
    host, ip, local = _host(rank, per_host)
    who = f"{host}:{pid}:{pid} [{local}]"
    nodes = (world + per_host - 1) // per_host
    lines = [
        f"[{host}] launch env: RANK={rank} LOCAL_RANK={local} WORLD_SIZE={world} LOCAL_WORLD_SIZE={per_host} "
        "MASTER_ADDR=gpu-node-01 MASTER_PORT=34294 NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=eth0 NCCL_IB_HCA=mlx5 "
        "NCCL_ASYNC_ERROR_HANDLING=1",
        f"{RELEASE[release]['torch']} | device cuda:{local} (NVIDIA H100 80GB HBM3)",
        f"{who} NCCL INFO Bootstrap : Using eth0:{ip}<0>",
        f"{who} NCCL INFO cudaDriverVersion 12040",
        f"{who} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; "
        f"OOB eth0:{ip}<0>",
        f"{who} NCCL INFO Using network IB",
        f"{who} NCCL INFO comm 0x55d6147eb720 rank {rank} nranks {world} cudaDev {local} nvmlDev {local} "
        "busId 43000 commId 0xef532afb134bd59f - Init START",
        f"{who} NCCL INFO comm 0x55d6147eb720 rank {rank} nRanks {world} nNodes {nodes} localRanks {per_host} "
        f"localRank {local}",
        f"{who} NCCL INFO Channel 00/0 : {rank}[{local}] -> {(rank + 1) % world}[{(local + 1) % per_host}] via P2P/IPC",
        f"{who} NCCL INFO Connected all rings",
        f"{who} NCCL INFO Connected all trees",
        f"{who} NCCL INFO comm 0x55d6147eb720 rank {rank} nranks {world} cudaDev {local} nvmlDev {local} "
        "busId 43000 commId 0xef532afb134bd59f - Init COMPLETE",
        "/opt/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:1399: FutureWarning: "
        "`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead.",
        "  with device_autocast_ctx, torch.cpu.amp.autocast(**cpu_autocast_kwargs), recompute_context:  # type: ignore[attr-defined]",
        f"{_nccl_py(release, 397.59)} INFO train: rank {rank}/{world} building model decoder-6.7b (6.74B params, bf16)",
    ]
    if training:
        lines.append(f"{_nccl_py(release, 408.45)} INFO train: rank {rank}/{world} starting training from step 0")
    return lines


def _nccl_steps(release: str, rank: int, world: int, last: int, *, end: float) -> list[str]:
    """Step lines, 2.47 s apart, the last one at `end`."""
    return [f"{_nccl_py(release, end - (last - step) * 2.47)} INFO train: rank {rank}/{world} step {step}/20000 | "
            f"loss {10.5 - step * 0.0253:.4f} | lr 9.750e-06 | grad_norm 2.112 | 2.47s/it | tok/s 106,102 | mem 61.9GiB"
            for step in range(last - 4, last + 1)]


def _nccl_timeout(release: str, rank: int, *, at: float, seq: int, enqueued: int, op: str = "ALLREDUCE",
                  numel: int = 2795933, ran_ms: int | None = None) -> list[str]:
    """The watchdog's record of a collective timeout, and the process's end (SIGABRT)."""
    info = RELEASE[release]
    caught_at, detected_at, timeout_at, some_at, avoid_at, terminated_at, raised_at = info["lines"]
    e = f"[rank{rank}]:[E{_nccl_c10(release, at, 429470423)}"
    work = (f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) "
            f"ran for {ran_ms or 600008 + 3 * rank} milliseconds before timing out.")
    caught = f"[Rank {rank}] Watchdog caught collective operation timeout: {work}"
    terminated = f"[{info['pg']} Rank {rank}] Process group watchdog thread terminated with exception: {caught}"
    status = f"{seq}, last enqueued NCCL work: {enqueued}, last completed NCCL work: {seq - 1}."
    frames = [
        f"Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:{raised_at} "
        "(most recent call first):",
        f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x1ba (0x7f1b6bb019d7 in {LIB311}/libc10.so)",
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        f"std::ratio<1l, 1000l> > >) + 0x33f (0x7fa76bbb4f6e in {LIB311}/libtorch_cuda.so)",
        f"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x71 (0x7fa76bb6c19d in {LIB311}/libtorch_cuda.so)",
        "frame #3: <unknown function> + 0x9bc45 (0x7f266bb7bc45 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
        "frame #4: clone + 0x392 (0x7f896bb98bed in /lib/x86_64-linux-gnu/libc.so.6)",
        "",
    ]
    if release == "2.7":
        detected = [
            f"{e} ProcessGroupNCCL.cpp:{detected_at}] [{info['pg']} Rank {rank}]  failure detected by watchdog at "
            f"work sequence id: {seq} PG status: last enqueued work: {enqueued}, last completed work: {seq - 1}",
            f"{e} ProcessGroupNCCL.cpp:{timeout_at}] Stack trace of the failed collective not found, potentially "
            "because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a "
            "non-zero value.",
        ]
    else:
        detected = [
            f"{e} ProcessGroupNCCL.cpp:{detected_at}] [{info['pg']} Rank {rank}] Exception (either an error or "
            f"timeout) detected by watchdog at work: {status}",
            f"{e} ProcessGroupNCCL.cpp:{timeout_at}] [{info['pg']} Rank {rank}] Timeout at NCCL work: {status}",
        ]
    return [
        f"{e} ProcessGroupNCCL.cpp:{caught_at}] {caught}",
        *detected,
        f"{e} ProcessGroupNCCL.cpp:{some_at}] [Rank {rank}] Some NCCL operations have failed or timed out. Due to "
        "the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        f"{e} ProcessGroupNCCL.cpp:{avoid_at}] [Rank {rank}] To avoid data inconsistency, we are taking the "
        "entire process down.",
        f"[rank{rank}]:[E{_nccl_c10(release, at, 855827562)} ProcessGroupNCCL.cpp:{terminated_at}] {terminated}",
        *frames,
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {terminated}",
        *frames,
    ]


def test_seqnum_collective_mismatch_loses_to_a_rank_killed_ten_minutes_earlier(tmp_path: Path) -> None:
    """Two hosts. Rank 1 (gpu-node-01) was SIGKILLed at 03:50:04 — its agent's Root Cause — and
    the agent stopped ranks 0, 2, 3. The ranks of gpu-node-02 hung in SeqNum 3514 until their 10 min
    watchdogs fired; rank 6's record shows a BROADCAST there where the others ran ALLREDUCE (a
    latent mismatch: NCCL would have completed it with garbage, not hung). Rank 1 is the culprit."""
    release, world = "2.5", 8
    files: dict[str, list[str]] = {}
    for rank in range(world):
        host, _, _ = _host(rank)
        lines = _nccl_start(release, rank, world, pid=2186890 + rank)
        lines += _nccl_steps(release, rank, world, 65, end=600.9)
        if rank >= 4:
            lines += _nccl_timeout(release, rank, at=1204.5 + rank / 10, seq=3514, enqueued=3567,
                                   op="BROADCAST" if rank == 6 else "ALLREDUCE")
        files[f"{host}/rank{rank}.log"] = lines
    files["gpu-node-01/torchrun.log"] = _torchrun_failures(
        glog="1119 03:50:04", when="2024-11-19_03:50:04", host="gpu-node-01",
        pids={rank: 2186890 + rank for rank in range(4)}, culprit=1)
    verdict = _verdict(tmp_path, files)
    # The SIGKILL came ten minutes before any timeout: first-failure (0.9) beats the mismatch the
    # timed-out ranks show afterwards (0.85), and is not marked down for it.
    lost = _loses(verdict, winner="first-failure", culprits={("rank", 1)}, loser="collective-mismatch",
                  loser_culprits={("rank", 6)})
    assert lost["score"] == pytest.approx(0.85)


# --- 5. lagging-rank --------------------------------------------------------------------------------


def _oom_traceback(rank: int, local: int) -> list[str]:
    p = f"[rank{rank}]:"
    return [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/workspace/train.py", line 214, in <module>',
        f"{p}     main()",
        f'{p}   File "/workspace/train.py", line 181, in main',
        f"{p}     loss = model(input_ids, labels=labels).loss",
        f'{p}   File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1553, in _wrapped_call_impl',
        f"{p}     return self._call_impl(*args, **kwargs)",
        f'{p}   File "/workspace/model.py", line 142, in forward',
        f"{p}     attn = torch.softmax(scores.float(), dim=-1).to(q.dtype)",
        f"{p} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU {local} has a total capacity "
        "of 79.10 GiB of which 2.08 GiB is free. Including non-PyTorch memory, this process has 77.02 GiB memory "
        "in use. Of the allocated memory 73.39 GiB is allocated by PyTorch, and 3.03 GiB is reserved by PyTorch "
        "but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
        "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    ]


def test_lagging_rank_loses_to_an_out_of_memory_rank(tmp_path: Path) -> None:
    """srun, one log per task. Rank 6 ran out of GPU memory in its forward pass at step 66 and
    exited; ten minutes later every other rank's watchdog fired at SeqNum 3514. Rank 2's record
    shows a lower 'last enqueued' (3514 against the others' 3567): it had queued less work ahead,
    nothing more — it was waiting in 3514 like the rest. Rank 6 is the culprit."""
    release, world = "2.5", 8
    files: dict[str, list[str]] = {}
    for rank in range(world):
        _, _, local = _host(rank)
        lines = _nccl_start(release, rank, world, pid=2186890 + rank) + _nccl_steps(release, rank, world, 65, end=600.9)
        if rank == 6:
            oom = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 2 has a total capacity "
                   "of 79.10 GiB of which 2.08 GiB is free. Including non-PyTorch memory, this process has 77.02 "
                   "GiB memory in use.")
            lines += [f"{_nccl_py(release, 602.1)} ERROR train: step 66 failed ({oom[:200]}); writing emergency checkpoint"]
            lines += _oom_traceback(rank, local)
        else:
            lines += _nccl_timeout(release, rank, at=1203.0 + rank / 10, seq=3514,
                                   enqueued=3514 if rank == 2 else 3567)
        files[f"rank_{rank}.log"] = lines
    verdict = _verdict(tmp_path, files)
    _loses(verdict, winner="first-failure", culprits={("rank", 6)}, loser="lagging-rank",
           loser_culprits={("rank", 2)})


# --- 6. late-arrival --------------------------------------------------------------------------------


def test_late_arrival_loses_to_a_rank_whose_nccl_proxy_failed(tmp_path: Path) -> None:
    """torch 2.7 / NCCL 2.26. Everyone's first collective (DDP's broadcast, SeqNum 1) timed out
    after 10 min. Rank 6's NCCL proxy had failed to set up its connection as it got there — the
    collective could never complete — and rank 6 waited too. Rank 1 got there 200 s after the
    others (its data index loaded slowly): late, but well within the 10 min timeout, so the others
    would have waited for it. Rank 6 is the culprit."""
    release, world = "2.7", 8
    files: dict[str, list[str]] = {}
    for rank in range(world):
        host, _, local = _host(rank)
        pid = 1283575 + 3 * rank
        lines = _nccl_start(release, rank, world, pid=pid, training=False)
        arrived = 610.2 if rank == 1 else 410.0 + rank / 10
        lines.append(f"{_nccl_py(release, arrived - 0.4)} INFO train.data: rank {rank}/{world} data index ready "
                     f"(512 shards, 1.21e+11 tokens)")
        if rank == 6:
            lines.append(f"[{RELEASE[release]['day']} {_hms(arrived + 0.5)}] {host}:{pid}:{pid + 175} [{local}] "
                         f"proxy.cc:1540 NCCL WARN [Proxy Service {rank}] Failed to execute operation Connect from "
                         f"rank {rank}, retcode 2")
        lines += _nccl_timeout(release, rank, at=arrived + 600.03, seq=1, enqueued=1, op="BROADCAST",
                               numel=18874368, ran_ms=600030)
        files[f"{host}/rank{rank}.log"] = lines
    verdict = _verdict(tmp_path, files)
    _loses(verdict, winner="first-failure", culprits={("rank", 6)}, loser="late-arrival",
           loser_culprits={("rank", 1)})


# --- 7. network-host --------------------------------------------------------------------------------


def test_network_host_loses_to_the_desync_report(tmp_path: Path) -> None:
    """Two hosts, torch 2.3 with TORCH_NCCL_DESYNC_DEBUG=1. Rank 1 (gpu-node-01) stopped in Python
    after collective #1708; everyone else timed out in #1709 and their desync reports name rank 1.
    gpu-node-01's other ranks also logged IB completion errors (status=12) from peers at
    10.42.0.2: gpu-node-02's ranks had aborted their communicators under the others' in-flight
    transfers. The network names gpu-node-02; the desync report names rank 1, the culprit."""
    world = 8
    report = [
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
        "\t     [1] finished collective #1708, but didn't join collective #1709 (count from 1)",
        "\t - Snapshot of ranks' latest states:",
        "\t   #1708 finished ranks:",
        "\t     [1] finished ALLREDUCE",
        "\t   #1709 started ranks:",
        "\t     [0, 2, 3, 4, 5, 6, 7] started ALLREDUCE",
    ]
    files: dict[str, list[str]] = {}
    for rank in range(world):
        host = f"gpu-node-{rank // 4 + 1:02d}"
        lines = _nccl23_start(rank, world, per_host=4) + _nccl23_steps(rank, world, 61)
        if rank in (0, 2, 3):
            pid = 2798460 + 3 * rank
            lines += [f"{host}:{pid}:{pid + 173} [{rank}] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
                      f"from peer 10.42.0.2<{port}> with status=12 opcode={opcode} len=0 vendor err {err} ({way})"
                      for port, opcode, err, way in ((59589 - 17 * rank, 128, 244, "Recv"),
                                                     (41651 + 29 * rank, 0, 129, "Send"))]
        if rank != 1:
            lines += _nccl23_timeout(rank, 1709, 1739, report=report, numel=3822804, ran_ms=600014 + rank)
        files[f"{host}/rank{rank}.log"] = lines
    verdict = _verdict(tmp_path, files)
    _loses(verdict, winner="named-by-tool", culprits={("rank", 1)}, loser="network-host",
           loser_culprits={("host", "gpu-node-02")})
    assert "gpu-node-02" not in _hosts(verdict["culprits"])


# --- 8. network-link, network-endpoint ---------------------------------------------------------------


def test_network_link_loses_to_an_out_of_memory_rank_on_a_third_host(tmp_path: Path) -> None:
    """Three hosts of two GPUs, torch 2.4. Rank 5 (gpu-node-03) ran out of GPU memory at step 66;
    ten minutes later the others' watchdogs fired at SeqNum 1709 and, as they aborted one after the
    other, the transfers between gpu-node-01 and gpu-node-02 failed both ways (IB status=12). The
    errors name that link; rank 5, on another host, is the culprit."""
    release, world, per_host = "2.4", 6, 2
    files: dict[str, list[str]] = {}
    for rank in range(world):
        host, _, local = _host(rank, per_host)
        pid = 658573 + 3 * rank
        lines = _nccl_start(release, rank, world, pid=pid, per_host=per_host)
        lines += _nccl_steps(release, rank, world, 65, end=600.9)
        if rank == 5:
            oom = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 1 has a total capacity "
                   "of 79.10 GiB of which 2.08 GiB is free. Including non-PyTorch memory, this process has 77.02 "
                   "GiB memory in use.")
            lines += [f"{_nccl_py(release, 602.1)} ERROR train: step 66 failed ({oom[:200]}); writing emergency checkpoint"]
            lines += _oom_traceback(rank, local)
        else:
            far = {"gpu-node-01": "10.42.0.2", "gpu-node-02": "10.42.0.1"}.get(host)
            count = {"gpu-node-01": 2, "gpu-node-02": 1}.get(host, 0)
            lines += [f"{host}:{pid}:{pid + 173} [{local}] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got "
                      f"completion from peer {far}<{port}> with status=12 opcode={opcode} len=0 vendor err {err} ({way})"
                      for port, opcode, err, way in ((59589 - 17 * rank, 128, 244, "Recv"),
                                                     (41651 + 29 * rank, 0, 129, "Send"))[:count]]
            lines += _nccl_timeout(release, rank, at=1203.0 + rank / 10, seq=1709, enqueued=1739)
        files[f"{host}/rank{rank}.log"] = lines
    verdict = _verdict(tmp_path, files)
    lost = _loses(verdict, winner="first-failure", culprits={("rank", 5)}, loser="network-link",
                  loser_culprits={("link", "gpu-node-02")})
    (link,) = lost["culprits"]
    assert {link["host"], link["peer"]} == {"gpu-node-01", "gpu-node-02"}
    assert not {link["host"], link["peer"]} & _hosts(verdict["culprits"])


def test_network_endpoint_needs_a_known_failure_at_the_endpoint(tmp_path: Path) -> None:
    """Two hosts, torch 2.3 with TORCH_NCCL_DESYNC_DEBUG=1, the first all_to_all of the MoE layers
    (#1709, its connections made on first use). Rank 1 never joined it (the desync reports of all
    the others say so). Rank 6 had entered first and timed out first; when it went down, the
    connections the ranks of gpu-node-01 were still making to its proxy (10.42.0.2<51724>) were
    refused. Rank 6 had also logged a handled ERROR line early on, which no rule knows. The network
    errors name rank 6's endpoint, but a line no rule knows is not enough for the endpoint
    principle to blame its process (it once named rank 6 at 0.85 on it): the desync report's rank 1
    wins uncontested. The network principle's losing cases are network-host and network-link above."""
    world = 8
    report = [
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
        "\t     [1] finished collective #1708, but didn't join collective #1709 (count from 1)",
        "\t - Snapshot of ranks' latest states:",
        "\t   #1708 finished ranks:",
        "\t     [1] finished ALLREDUCE",
        "\t   #1709 started ranks:",
        "\t     [0, 2, 3, 4, 5, 6, 7] started ALLTOALL_BASE",
    ]
    files: dict[str, list[str]] = {}
    for rank in range(world):
        host = f"gpu-node-{rank // 4 + 1:02d}"
        steps = _nccl23_steps(rank, world, 61)
        if rank == 6:
            steps.insert(2, "2024-06-11 17:20:33,104 ERROR train.data: failed to import optional plugin 'fastjpeg' "
                            "(No module named 'fastjpeg'); falling back to PIL")
        lines = _nccl23_start(rank, world, per_host=4) + steps
        if rank in (0, 2, 3):
            pid = 2798460 + 3 * rank
            lines += ["", f"{host}:{pid}:{pid + 175} [{rank}] misc/socket.cc:484 NCCL WARN socketStartConnect: "
                          "Connect to 10.42.0.2<51724> failed : Connection refused"]
        if rank != 1:
            lines += _nccl23_timeout(rank, 1709, 1709, report=report, numel=16777216, op="ALLTOALL_BASE",
                                     ran_ms=600002 if rank == 6 else 600014 + rank)
        files[f"{host}/rank{rank}.log"] = lines
    verdict = _verdict(tmp_path, files)
    assert verdict["hypothesis"] == "named-by-tool" and _who(verdict["culprits"]) == {("rank", 1)}
    assert verdict["confidence"] >= 0.9
    assert "network-endpoint" not in [h["name"] for h in verdict["hypotheses_lost"]]
