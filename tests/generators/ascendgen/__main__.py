"""python -m generators.ascendgen OUT_DIR …: see the package's docstring."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .model import CANNS, FAULTS, LAYOUTS, LOSERS, Spec, Truth
from .truth import generate, plan, truth_dict


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--fault", choices=list(FAULTS), default="ei0006-silent")
    ap.add_argument("--culprit", type=int, default=None)
    ap.add_argument("--peer", type=int, default=None)
    ap.add_argument("--servers", type=int, default=1)
    ap.add_argument("--npus", type=int, default=8)
    ap.add_argument("--cann", choices=list(CANNS), default="8.0")
    ap.add_argument("--layout", choices=LAYOUTS, default="full")
    ap.add_argument("--launcher", choices=("torchrun", "shell"), default="torchrun")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    spec = Spec(
        name=Path(args.out_dir).name, fault=args.fault, culprit=args.culprit, peer=args.peer,
        servers=args.servers, npus=args.npus, cann=args.cann, layout=args.layout,
        launcher=args.launcher, seed=args.seed,
    )
    try:
        truth = generate(spec, args.out_dir)
    except (ValueError, FileExistsError) as exc:
        print(f"ascendgen: {exc}", file=sys.stderr)
        return 2
    print(f"{args.out_dir}: {truth.world_size} ranks, {len(truth.files)} files; fault={truth.fault} "
          f"culprits={truth.culprit_ranks} phase={truth.phase or '-'} branch={truth.branch or '-'}")
    return 0


__all__ = ["CANNS", "FAULTS", "LOSERS", "Spec", "Truth", "generate", "plan", "truth_dict"]


if __name__ == "__main__":
    raise SystemExit(main())
