"""Deterministic generator of the logs a distributed PyTorch/NCCL job leaves behind.

No GPU is needed: the generator writes the files a real job would have written, line by line, in
the exact envelopes of each PyTorch/NCCL era (see docs in ``docs/formats.md``):
c10 ``[E ProcessGroupNCCL.cpp:…]`` / ``[rank3]:[E709 17:05:38.162555850 …]`` lines, NCCL
``host:pid:tid [dev] NCCL INFO …`` chatter with WARN lines preceded by a blank line, torchrun agent
logs with the ChildFailedError block, Slurm ``srun --label`` prefixes, training progress, Python
warnings and teardown noise.

Everything is seeded: the same arguments always produce the same bytes.

Usage::

    python -m generators.jobgen OUT_DIR --hosts 8 --gpus 8 --era 2.4 --fault silent --culprit 11 \\
        --noise-lines 2000 [--layout torchrun|per-rank|slurm-label] [--seed 1] [--tp 2]

or, as a library::

    from generators.jobgen import generate
    truth = generate("out/job", hosts=2, gpus=8, era="2.4", fault="silent", culprit=11)

Eras: 2.1, 2.3, 2.4, 2.5, 2.6 (the 2.6 era renders the >=2.6 wording; its build is torch 2.7.1
with NCCL 2.26.2, so NCCL WARN lines carry timestamps and init prints ``Init timings``).

Faults: none, silent, missing, oom, sigkill, ib, mismatch, lagging, desync, store,
first-collective, cuda-error, subgroup.  ``--culprit`` is a global rank, except for ``ib`` where it
names the bad host (``gpu-node-03`` or its 1-based number ``3``).

``subgroup``: the ranks are split into tensor-parallel groups of ``--tp`` consecutive ranks
({0,1}, {2,3}, … for tp=2; every rank calls ``dist.new_group(ranks, group_desc="tp")`` once per
group, so group k has PG GUID k+1 and is PG ID 1 in its members).  Each step does one ALLREDUCE in
the rank's tp group (its own SeqNum counter) and then the data-parallel gradient all-reduce in the
default PG.  The culprit hangs in Python right before its tp all-reduce: it logs nothing more and is
SIGTERMed by the launcher.  Its tp peers time out in the tp group (``[PG ID 1 PG GUID 3(tp) Rank
0]``, the tp SeqNum and counters, their group-local rank in ``[Rank g]``); every other rank
finishes its tp all-reduce and times out a little later in the default PG at one SeqNum.  The tp
communicators are created lazily at the first tp all-reduce (no ``device_id`` was bound, so NCCL
gets ``ncclCommInitRankConfig``, not ``ncclCommSplit``) and print their own Init START/COMPLETE
lines (``rank {group_rank} nranks {tp}``, one commId per group).

``lagging``: the culprit stalls on the host side (data loader, checkpoint, a code path the others
did not take) after its last step line, before it enqueues the collective the others then wait in.
It has nothing in flight (last enqueued = last completed = the stuck SeqNum - 1), so its watchdog
never fires; the others time out in that SeqNum, having enqueued the rest of the step.  From the 2.3
era on its heartbeat monitor logs the dump signal of the first rank that timed out (2.4+:
``Received a dump signal due to a collective timeout from  rank N … Last enqueued NCCL work: s-1,
last completed NCCL work: s-1.``); 2.1 prints nothing.  The launcher then stops it.
"""

from .common import Clock, RankPlan, Truth, host_ip, host_name, ranks_to_str
from .eras import ERAS, FAULTS, LAYOUTS, TRUTH, Era
from .generate import compress_file, generate, make_tar_gz, plan
from .job import Job

__all__ = [
    "ERAS", "FAULTS", "LAYOUTS", "TRUTH", "Clock", "Era", "Job", "RankPlan", "Truth", "compress_file", "generate",
    "host_ip", "host_name", "make_tar_gz", "plan", "ranks_to_str",
]
