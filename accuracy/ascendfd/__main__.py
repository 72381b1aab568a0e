"""What ascend-fd's root-cluster rules would answer on a bundle of raw Ascend logs.

    python -m accuracy.ascendfd [--json OUT] tests/fixtures/ascend-*/

One line per bundle: ascend-fd's code, branch and root devices, the ranks they are, the bundle's
truth, and whether the culprit is among them; then the totals. The port itself: __init__.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .keywords import COMMIT, SRC
from .score import run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m accuracy.ascendfd",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    ap.add_argument("bundles", nargs="+", type=Path)
    ap.add_argument("--json", type=Path, help="write the per-bundle rows here")
    args = ap.parse_args(argv)
    rows = run([b for b in args.bundles if b.is_dir()])
    for r in rows:
        roots = ",".join(r["root_cause_device"]) or "-"
        truth = ",".join(str(x) for x in r["truth_culprit_devices"] or []) or "-"
        print(
            f"{r['bundle']:42s} code={r['code']} [{r['branch']}] roots={roots} "
            f"= ranks {r['root_ranks']} | truth ranks {r['truth_culprit_ranks']} ({truth}) "
            f"{r['truth_phase']}/{r['truth_branch']} | "
            f"{('RIGHT' if r['exact'] else 'RIGHT(among ' + str(len(r['root_ranks'])) + ')') if r['names_culprit'] else 'WRONG'}"
        )
    n = sum(r["names_culprit"] for r in rows)
    x = sum(r["exact"] for r in rows)
    print(
        f"ascend-fd's root devices include the culprit in {n}/{len(rows)} bundles, "
        f"are exactly the culprit in {x}/{len(rows)} (source @ {COMMIT[:12]})"
    )
    if args.json:
        args.json.write_text(
            json.dumps({"source": SRC, "commit": COMMIT, "rows": rows}, indent=2, default=str)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
