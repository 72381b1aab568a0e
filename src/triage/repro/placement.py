"""Which backend a run uses and which GPU each rank gets, checked before any rank starts.

The errors here name the setting to change in the words of the launcher the user ran (see
launcher_env.LAUNCHER_OPTIONS): a rank that finds no GPU of its own fails at once and says why, rather
than in the middle of comm_init with a CUDA error.
"""

from __future__ import annotations

import os
from pathlib import Path


class PlacementError(ValueError):
    """The ranks cannot be placed on this host; the message says what to change."""


def visible_gpus() -> int:
    """How many NVIDIA GPUs this process may use, counted without initialising CUDA.

    A process that forks ranks must not initialise CUDA first (its children could not use it), so
    this reads the device nodes the driver makes (/dev/nvidia0, …) and CUDA_VISIBLE_DEVICES. A GPU
    that is there but whose CUDA cannot start is reported by the rank that tries, in comm_init.
    """
    present = sum(1 for p in Path("/dev").glob("nvidia*") if p.name[len("nvidia"):].isdigit())
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None or not present:
        return present
    listed = 0
    for entry in visible.split(","):
        entry = entry.strip()
        if not entry or entry.startswith("-"):
            break  # CUDA stops at the first invalid entry
        listed += 1
    return min(listed, present)


def resolve_backend(requested: str, gpus: int) -> str:
    if requested == "auto":
        return "nccl" if gpus else "gloo"
    if requested == "nccl" and not gpus:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        where = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        raise PlacementError(f"--backend nccl: no GPU is visible to this process{where}; "
                             "use --backend gloo to test on CPU")
    return requested


def check_local_ranks(local_ranks: int, gpus: int, ranks_per_gpu: int, option: str) -> None:
    """NCCL: every local rank needs a GPU (or a share of one, with --ranks-per-gpu)."""
    if local_ranks <= gpus * ranks_per_gpu:
        return
    fits = gpus * ranks_per_gpu
    share = -(-local_ranks // max(1, gpus))
    per = f" with --ranks-per-gpu {ranks_per_gpu}" if ranks_per_gpu > 1 else ""
    raise PlacementError(
        f"{local_ranks} ranks on this host but {gpus} GPU{'s' if gpus != 1 else ''} visible{per}: "
        f"set {option} to {fits}, or add --ranks-per-gpu {share} to share each GPU between ranks "
        "(each its own NCCL host: that tests the network path, not the GPU's links)")
