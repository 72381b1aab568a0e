"""Who wrote a source, as far as its path tells: rank, local rank, host, pid, device.

Layouts recognised (docs/formats.md §2.5, §5.1, §6): torchrun `--log-dir`
`…/attempt_N/<local_rank>/{stdout,stderr}.log`, `rank3.log` / `rank-0003` / `rank_3.out`,
Slurm `%x-%j-%t.out` and `%N.log`, host folders (`node07/`, `host_1_10.0.0.2/`, `gpu-a100-3/`),
NCCL_DEBUG_FILE `nccl.%h.%p`, CANN `plog-<pid>_<ts>.log` and `device-<id>/device-<pid>_<ts>.log`,
server folders named by IP (`10.0.0.2/`).
"""

from __future__ import annotations

import functools
from pathlib import PurePosixPath

import regex

from triage.lazy_regex import lazy_compile
from triage.model import Identity

_TORCHRUN = lazy_compile(r"(?:^|/)attempt_\d+/(?P<local>\d+)/(?:stdout|stderr|error)\.(?:log|json)$")
# The node's log dir (`<log_dir>/<run_id>_<rand>`) above a file, or a writer's folder, of the layout.
_LOG_DIR = lazy_compile(r"^(?:(?P<dir>.*)/)?attempt_\d+/\d+(?:/(?:stdout|stderr|error)\.(?:log|json))?$")
TORCHRUN_LOCAL = "torchrun --log-dir layout"  # how a local rank learnt from the layout is recorded
ONE_NODE = ("torchrun --log-dir local rank, as the rank on a single node (no other node's files, host "
            "or rank here; on a later node it is another rank)")
ONE_NODE_NOTE = ("rank {rank} is its torchrun local rank, taken as the rank because nothing here shows another "
                 "node: on a later node of a multi-node job it is another rank")
NODE_BASE = "torchrun --log-dir local rank plus its node's base (the rank of another worker's file there)"
_RANK = lazy_compile(r"(?:^|[/_.-])(?:rank|global_rank|grank)[_-]?0*(?P<rank>\d+)(?=[._/-]|$)", regex.I)
_LOCAL = lazy_compile(r"(?:^|[/_.-])local[_-]?rank[_-]?0*(?P<local>\d+)(?=[._/-]|$)", regex.I)
_SLURM_TASK = lazy_compile(r"(?:^|[/_.-])(?:task|proc)[_-]?0*(?P<task>\d+)(?=[._-]|$)", regex.I)
_SLURM_JOB_TASK = lazy_compile(r"-(?P<job>\d{2,})-(?P<task>\d+)\.(?:out|err|log)$")
_NCCL_FILE = lazy_compile(r"(?:^|/)nccl[._-](?P<host>[A-Za-z][\w-]*)\.(?P<pid>\d+)(?:\.log)?$")
# MindSpore's msrun: `<log_dir>/msrun_log/worker_<rank>.log` (and scheduler.log), one file per rank. The
# underscore tells it from a host's file: host names (Kubernetes pods `job-worker-3`) cannot hold one.
_MSRUN = lazy_compile(r"(?:^|/)worker_(?P<rank>\d+)\.log$")
_PLOG = lazy_compile(r"(?:^|/)(?:plog|device)-(?P<pid>\d+)_\d+\.log$")
# CANN's device-side logs sent to the host: `debug/device-<devId>/device-<pid>_<ts>.log`.
_DEVICE_DIR = lazy_compile(r"(?:^|/)device-(?P<device>\d{1,3})/device-\d+_\d+\.log$")
_HOST_DIR = lazy_compile(
    r"^(?:host_\d+_(?P<ip>[\d.]+)|(?P<bare_ip>\d{1,3}(?:\.\d{1,3}){3})"
    r"|(?P<name>(?:node|host|worker|nid|gpu|compute|dgx|hgx|cn|ip|trn|pod)[\w.-]*?\d[\w.-]*))$",
    regex.I,
)
# `node07.log`, and a node's launcher console as people save it: `node07-console.log`, `node07_stdout.txt`.
_HOST_FILE = lazy_compile(
    r"^(?P<name>(?:node|host|worker|nid|gpu|compute|dgx|hgx|cn|trn)[\w-]*?\d[\w-]*?)"
    r"(?:[-_.](?:console|stdout|stderr|output))?\.(?:log|out|err|txt)$",
    regex.I,
)
_HUGE_NUMBER = lazy_compile(r"\d{31,}")


def identity_from_path(name: str) -> Identity:
    """Identity learnt from a source's display name (`archive!member` paths included)."""
    # A run of digits no path means (longer than any rank, pid or stamp) names nothing; Python
    # would refuse to read one of over 4,300 digits.
    path = _HUGE_NUMBER.sub("#", name.replace("\\", "/").replace("!", "/"))
    identity = Identity()
    learnt = identity.learnt_from
    # Each pattern is tried only where the word it needs is there (`casefold` for the patterns
    # that ignore case): most paths are asked of a dozen patterns and hold the words of two.
    if "attempt_" in path and (m := _TORCHRUN.search(path)):
        identity.local_rank = int(m["local"])
        learnt["local_rank"] = TORCHRUN_LOCAL
    # Rank words count in the file name and its folder only: a job folder called
    # `hang-rank2/` says nothing about who wrote each file inside it.
    near = "/".join(path.split("/")[-2:])
    words = near.casefold()
    if "local" in words and (m := _LOCAL.search(near)):
        identity.local_rank = int(m["local"])
        learnt["local_rank"] = "file name"
    msrun = "worker_" in path and _MSRUN.search(path)
    if m := msrun:
        identity.rank = int(m["rank"])
        learnt["rank"] = "msrun worker_<rank>.log name"
    elif "rank" in words and (m := _last(_RANK, near)):
        identity.rank = int(m["rank"])
        learnt["rank"] = "file name"
    elif m := ("-" in near and _SLURM_JOB_TASK.search(near)) or (
            ("task" in words or "proc" in words) and _last(_SLURM_TASK, near)):
        identity.rank = int(m["task"])
        learnt["rank"] = "slurm %t file name"
    if "nccl" in path and (m := _NCCL_FILE.search(path)):
        identity.host, identity.pid = m["host"], int(m["pid"])
        learnt["host"] = learnt["pid"] = "NCCL_DEBUG_FILE name"
    elif ("plog-" in path or "device-" in path) and (m := _PLOG.search(path)):
        identity.pid = int(m["pid"])
        learnt["pid"] = "CANN plog name"
    if "device-" in path and (m := _DEVICE_DIR.search(path)):
        identity.device = int(m["device"])
        learnt["device"] = "CANN device-<id> folder"
    if (folder := _cann_folder(path)) and (m := _RANK.fullmatch(folder)):
        # ModelArts and ascend-fd collections keep one CANN tree per rank: `process_log/rank_76/`.
        if identity.rank is None:
            identity.rank = int(m["rank"])
            learnt["rank"] = "folder holding a CANN log tree"
    elif identity.host is None and folder:
        identity.host = folder
        learnt["host"] = "folder holding a CANN log tree"
    if identity.host is None and not msrun:
        parts = path.split("/")
        if host := _host_file(parts[-1]):
            identity.host = host
            learnt["host"] = "file name"
        for part in reversed(parts[:-1]):
            if host := _host_folder(part):
                identity.host = host
                learnt["host"] = "folder name"
                break
    return identity


# A job's files share their names and folders (`stdout.log`, `attempt_0/`, a node's folder): each
# is matched once.
@functools.lru_cache(maxsize=4096)
def _host_file(name: str) -> str | None:
    """The host a file's name names (`node07.log`), if any."""
    return m["name"] if (m := _HOST_FILE.match(name)) else None


@functools.lru_cache(maxsize=4096)
def _host_folder(name: str) -> str | None:
    """The host a folder's name names (`node07`, `host_1_10.0.0.2`, `10.0.0.2`), if any."""
    return (m["ip"] or m["bare_ip"] or m["name"]) if (m := _HOST_DIR.match(name)) else None


def log_dir(name: str) -> str | None:
    """The torchrun log dir of one node (`…/<run_id>_<rand>`, "" when not given) that holds a file
    of its `--log-dir` layout or a worker's `attempt_N/<local_rank>` folder; None for other paths."""
    m = _LOG_DIR.match(name.replace("\\", "/").replace("!", "/"))
    return None if m is None else m["dir"] or ""


def group_key(name: str) -> str:
    """Sources written by the same process share a key: torchrun's stdout.log and stderr.log."""
    parts = name.replace("!", "/").rsplit("/", 2)
    if len(parts) > 1 and parts[-1] in ("stdout.log", "stderr.log", "error.json") and parts[-2].isdigit():
        folder = "/".join(parts[:-1])
        return folder if _normal(folder) else str(PurePosixPath(folder))
    return name


def _normal(path: str) -> bool:
    """Whether `PurePosixPath(path)` would give `path` back as it is (no empty or `.` component)."""
    return bool(path) and "//" not in path and "/./" not in path and not path.startswith("./") \
        and not path.endswith(("/", "/.")) and path != "."


def shared_folders(names: list[str]) -> int:
    """How many leading folders every source shares (never the file name itself)."""
    split = [n.replace("\\", "/").replace("!", "/").split("/")[:-1] for n in names]
    if not split:
        return 0
    shared = 0
    for parts in zip(*split, strict=False):
        if len(set(parts)) != 1:
            break
        shared += 1
    return shared


def _cann_folder(path: str) -> str | None:
    """The folder a server's (or a rank's) CANN logs were copied into:
    `<server>/[ascend/log/|process_log/](debug|run)/plog/…`."""
    parts = path.split("/")
    for i in range(len(parts) - 2, 0, -1):
        if parts[i] in ("debug", "run") and (parts[i + 1] == "plog" or parts[i + 1].startswith("device-")):
            above = [p for p in parts[:i] if p.lower() not in _CANN_ROOT_FOLDERS]
            return above[-1] if above and not above[-1].startswith(".") else None
    return None


# `process_log` is where ascend-fd's collection puts a server's `~/ascend/log`.
_CANN_ROOT_FOLDERS = {"log", "logs", "ascend", "ascend_log", "ascend-log", "process_log", "~"}


def _last(pattern: regex.Pattern[str], text: str) -> regex.Match[str] | None:
    """The match nearest the end: the file name wins over its folder."""
    found = None
    for found in pattern.finditer(text):  # noqa: B007 - keep the last
        pass
    return found
