"""python -m generators.jobgen OUT_DIR …: see the package's docstring."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .eras import ERAS, FAULTS, LAYOUTS
from .generate import generate, make_tar_gz

# --------------------------------------------------------------------------------------------
# CLI


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--era", choices=list(ERAS), default="2.4")
    ap.add_argument("--fault", choices=list(FAULTS), default="silent")
    ap.add_argument(
        "--culprit",
        default=None,
        help="global rank (for --fault ib: host name or 1-based host number)",
    )
    ap.add_argument(
        "--noise-lines",
        type=int,
        default=200,
        help="approximate noise lines per rank (init chatter, progress, warnings)",
    )
    ap.add_argument("--layout", choices=list(LAYOUTS), default="torchrun")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout-min", type=int, default=10, choices=(10, 30))
    ap.add_argument("--tp", type=int, default=2, help="tensor-parallel group size (fault subgroup)")
    ap.add_argument("--force", action="store_true", help="empty OUT_DIR first")
    ap.add_argument(
        "--tar",
        metavar="NAME",
        help="after generating, pack everything into OUT_DIR/NAME (.tar.gz)",
    )
    args = ap.parse_args(argv)
    out = Path(args.out_dir)
    if args.force and out.exists():
        shutil.rmtree(out)
    culprit: int | str | None = args.culprit
    if culprit is not None and args.fault != "ib":
        culprit = int(culprit)
    t0 = time.perf_counter()
    try:
        truth = generate(
            out,
            hosts=args.hosts,
            gpus=args.gpus,
            era=args.era,
            fault=args.fault,
            culprit=culprit,
            noise_lines=args.noise_lines,
            layout=args.layout,
            seed=args.seed,
            timeout_min=args.timeout_min,
            tp=args.tp,
        )
    except (ValueError, FileExistsError) as exc:
        print(f"jobgen: {exc}", file=sys.stderr)
        return 2
    if args.tar:
        tmp = out.with_name(out.name + ".tmp-pack")
        out.rename(tmp)
        out.mkdir()
        make_tar_gz(tmp, out / args.tar, mtime=truth.end_epoch)
        shutil.rmtree(tmp)
    dt = time.perf_counter() - t0
    who = truth.culprit_host or truth.culprit_rank
    print(
        f"{out}: {truth.world_size} ranks, {len(truth.files)} files, {truth.lines:,} lines, "
        f"{truth.bytes / 1e6:.1f} MB in {dt:.1f}s; fault={truth.fault} culprit={who} "
        f"seq={truth.seq} phase={truth.phase or '-'} category={truth.category or '-'}"
        + (
            f" group={truth.group_desc} {truth.group_ranks} seq={truth.group_seq}"
            if truth.group_desc
            else ""
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
