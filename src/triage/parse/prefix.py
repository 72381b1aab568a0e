"""Peel the prefixes that launchers stack in front of a log line, and learn who wrote it.

Real lines carry several prefixes at once, outermost first, e.g.
`(RayWorkerWrapper pid=270291, ip=10.1.2.3) [rank3]:[E219 10:31:07.59 ProcessGroupNCCL.cpp:616] …`
or ` 5: [default1]:[rank9]:[E…] …` (Slurm label, torchrun tee, c10 envelope). The c10 envelope
itself stays in the text: rules search inside it.
"""

from __future__ import annotations

from dataclasses import dataclass

from triage.lazy_regex import lazy_re
from triage.model import Identity

_ANSI = lazy_re(r"\x1b\[[0-9;?]*[A-Za-z]")
# Kubernetes CRI file lines: `<RFC3339Nano> stdout|stderr F|P <text>`.
_CRI = lazy_re(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) (?:stdout|stderr) [FP] ")
# kubectl logs --prefix: `[pod/job-worker-3/trainer] `.
_KUBECTL = lazy_re(r"^\[pod/(?P<pod>[^/\]\s]+)/[^\]\s]+\] ")
# srun --label: right-aligned task id, or `P<component> <id>: ` for heterogeneous jobs.
_SLURM_LABEL = lazy_re(r"^(?:P\d+ )?\s*(?P<task>\d{1,9}): (?=\S|\s*$)")
# Open MPI --tag-output: `[1,3]<stdout>:`.
_MPI = lazy_re(r"^\[\d+,(?P<rank>\d{1,9})\]<(?:stdout|stderr)>:")
# Ray actors: `(WorkerDict pid=3490362)`, `(RayWorkerWrapper pid=270291, ip=10.175.94.190)`.
_RAY = lazy_re(r"^\((?P<actor>\w+) pid=(?P<pid>\d{1,9})(?:, ip=(?P<ip>[\d.]+))?\) ")
# torchrun --tee/--redirects console prefix `[{role}{local_rank}]:`; role `rank` is ambiguous with
# c10's global `[rankN]:`, so it is handled with that one below.
_TORCHRUN_ROLE = lazy_re(r"^\[(?P<role>(?!rank\d)[A-Za-z_][\w-]*?)(?P<local>\d+)\]:")
_RANK = lazy_re(r"^\[rank(?P<rank>\d+)\]:")
# A rank of more digits than this is no rank (and Python's int() refuses 4,300): the prefix is
# peeled, so the line's own envelope shows, but nothing is learnt from it.
_MAX_DIGITS = 9


@dataclass
class Peeled:
    text: str  # the line with the launcher prefixes removed (the c10 envelope stays)
    identity: Identity


def clean(line: str) -> str:
    """Drop ANSI colours and what a carriage return overwrote (tqdm bars)."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "\r" in line:
        line = line.rstrip("\r")
        line = line[line.rfind("\r") + 1 :]
    return line


def peel(line: str) -> Peeled:
    """Strip launcher prefixes from `line` and return what they say about its writer."""
    identity = Identity()
    learnt = identity.learnt_from
    text = clean(line)
    rank_prefixes: list[int] = []
    slurm_task: int | None = None
    for _ in range(8):  # prefixes stack a few deep at most; the bound guards odd input
        first = text[:1]
        if not (first in "[(P" or first.isdigit() or first.isspace()) or not first:
            break  # no prefix begins so (an NCCL line begins with its host): nothing to try
        # Each prefix is tried only where the line begins as it must (a regex call per prefix and
        # per peeled layer is most of the cost of a line), in the same order as ever.
        if first == "[":
            if text.startswith("[pod/") and (m := _KUBECTL.match(text)):
                identity.host = identity.host or m["pod"]
                learnt.setdefault("host", "kubectl --prefix")
                text = text[m.end():]
            elif text[1:2].isdigit() and (m := _MPI.match(text)):
                identity.rank = int(m["rank"])
                learnt["rank"] = "mpirun --tag-output"
                text = text[m.end():]
            elif m := _TORCHRUN_ROLE.match(text):
                if len(m["local"]) <= _MAX_DIGITS:
                    identity.local_rank = int(m["local"])
                    learnt["local_rank"] = "torchrun tee prefix"
                text = text[m.end():]
            elif text.startswith("[rank") and (m := _RANK.match(text)):
                if len(m["rank"]) <= _MAX_DIGITS:
                    rank_prefixes.append(int(m["rank"]))
                text = text[m.end():]
            else:
                break
        elif first == "(":
            if m := _RAY.match(text):
                identity.pid = int(m["pid"])
                learnt["pid"] = "ray actor prefix"
                if m["ip"]:
                    identity.host = m["ip"]
                    learnt["host"] = "ray actor prefix"
                text = text[m.end():]
            else:
                break
        elif first.isdigit() and (m := _CRI.match(text)):
            text = text[m.end():]
        elif slurm_task is None and rank_prefixes == [] and (m := _SLURM_LABEL.match(text)):
            slurm_task = int(m["task"])
            text = text[m.end():]
        else:
            break
    if rank_prefixes:
        # The innermost `[rankN]:` is c10's global rank; an outer one is a torchrun tee prefix with
        # role "rank", which carries the local rank.
        identity.rank = rank_prefixes[-1]
        learnt["rank"] = "[rankN]: prefix"
        if len(rank_prefixes) > 1:
            identity.local_rank = rank_prefixes[0]
            learnt["local_rank"] = "torchrun tee prefix"
    if slurm_task is not None:
        if identity.rank is None and identity.local_rank is None:
            identity.rank = slurm_task
            learnt["rank"] = "srun --label"
        else:
            learnt["slurm_task"] = str(slurm_task)
    return Peeled(text=text, identity=identity)
