"""Soak: back-to-back `triage.health.check` calls while ranks are frozen (SIGSTOP) at random moments.

    python tools/health_soak.py [--ranks 4] [--freezes 6] [--freeze-s 3.5] [--timeout 2] [--seed N]

Starts a torchrun job (gloo, CPU) whose ranks call `check(timeout=…)` back to back, with a short
step between calls, and record every result. Meanwhile this process freezes a random rank at a
random moment `--freezes` times, for `--freeze-s` seconds each (SIGSTOP, then SIGCONT). After the
last freeze it lets the ranks run on, then asks them (through a file) to stop at a common call.

It prints, per call index that every rank made, whether the ranks agreed (ok, missing, wrong,
exclude, phase), the disagreements, and whether the group realigned: every call after the last
freeze's failures passed on every rank. Exit status 0 when no call index disagreed and the group
realigned. It depends on timing by design (random moments): it is a soak, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def _rank(args: argparse.Namespace) -> None:
    import torch.distributed as dist

    from triage.health import check

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    out = Path(args.out)
    store = dist.distributed_c10d._get_default_store()
    stop_at = made = calls = 0
    with (out / f"rank{rank}.jsonl").open("a", buffering=1) as f:
        f.write(json.dumps({"pid": os.getpid()}) + "\n")
        while not stop_at or calls < stop_at:
            r = check(timeout=args.timeout, tag="soak")
            made += 1
            calls = getattr(r, "call", made)  # a result without it: an older triage.health, for comparison
            f.write(json.dumps({"call": calls, "ok": r.ok, "missing": r.missing, "wrong": r.wrong,
                                "exclude": getattr(r, "exclude", ()), "phase": r.phase,
                                "elapsed": round(r.elapsed, 4)}) + "\n")
            if rank == 0 and not stop_at and (out / "stop").exists():
                store.compare_set("soak/stop", "", str(calls + 100))  # once: every rank reads the same
            if not stop_at and calls % 20 == 0 and store.check(["soak/stop"]):
                stop_at = int(store.get("soak/stop"))
            time.sleep(args.step_ms / 1000)
    final = check(timeout=30, tag="final")
    (out / f"final{rank}.json").write_text(json.dumps({"ok": final.ok, "reason": final.reason}))
    dist.destroy_process_group()


def _read(out: Path) -> tuple[dict[int, int], dict[int, list[dict[str, Any]]]]:
    pids: dict[int, int] = {}
    records: dict[int, list[dict[str, Any]]] = {}
    for path in out.glob("rank*.jsonl"):
        rank = int(path.stem[4:])
        for text in path.read_text().splitlines():
            if not text.endswith("}"):
                continue
            record = json.loads(text)
            if "pid" in record:
                pids[rank] = record["pid"]
            else:
                records.setdefault(rank, []).append(record)
    return pids, records


def _launch(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)  # noqa: S311 (moments to freeze at, not secrets)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*"):
        old.unlink()
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(args.ranks),
               str(HERE), "--rank-program", "--out", str(out), "--timeout", str(args.timeout),
               "--step-ms", str(args.step_ms)]
    job = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(out / "console.log", "w"))  # noqa: SIM115
    while len(_read(out)[0]) < args.ranks:
        time.sleep(0.1)
    pids = _read(out)[0]
    frozen_log = []
    for _ in range(args.freezes):
        time.sleep(rng.uniform(0.2, 2.0))
        rank = rng.randrange(args.ranks)
        os.kill(pids[rank], signal.SIGSTOP)
        time.sleep(args.freeze_s)
        os.kill(pids[rank], signal.SIGCONT)
        frozen_log.append(rank)
    time.sleep(args.after_s)
    (out / "stop").write_text("1")
    try:
        code = job.wait(timeout=300)
    except subprocess.TimeoutExpired:
        job.kill()
        code = -1
    return _report(args, out, frozen_log, code)


def _report(args: argparse.Namespace, out: Path, frozen: list[int], code: int) -> int:
    _, records = _read(out)
    by_call: dict[int, dict[int, tuple[Any, ...]]] = defaultdict(dict)
    for rank, rows in records.items():
        for r in rows:
            by_call[r["call"]][rank] = (r["ok"], tuple(r["missing"]), tuple(r["wrong"]), tuple(r["exclude"]),
                                        r["phase"])
    common = sorted(c for c, ranks in by_call.items() if len(ranks) == args.ranks)
    disagree = [c for c in common if len(set(by_call[c].values())) > 1]
    failed = [c for c in common if not by_call[c][0][0]]
    last_failed = max(failed, default=0)
    tail = [c for c in common if c > last_failed]
    finals = [json.loads(p.read_text()) for p in sorted(out.glob("final*.json"))]
    print(f"health soak: {args.ranks} ranks, gloo, timeout {args.timeout:g} s, {args.freezes} freezes of "
          f"{args.freeze_s:g} s (ranks {frozen}), job exit {code}")
    print(f"  call indices made by every rank: {len(common)}; disagreeing: {len(disagree)}; failed (agreed): "
          f"{len(failed)}")
    for c in disagree[:10]:
        print(f"    call {c}: {by_call[c]}")
    print(f"  after the last failed call ({last_failed}): {len(tail)} calls, all passed on every rank; "
          f"final check on a fresh tag: {sum(f['ok'] for f in finals)}/{len(finals)} ok")
    named = sorted({m for c in failed for m in by_call[c][0][1]})
    print(f"  ranks named missing: {named}")
    realigned = len(tail) > 0 and len(finals) == args.ranks and all(f["ok"] for f in finals)
    return 0 if not disagree and realigned and code == 0 else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--freezes", type=int, default=6)
    parser.add_argument("--freeze-s", type=float, default=3.5)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--step-ms", type=float, default=5.0, help="the work between two checks")
    parser.add_argument("--after-s", type=float, default=5.0, help="how long the ranks run on after the last freeze")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", default="/tmp/triage-health-soak")
    parser.add_argument("--rank-program", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank_program:
        _rank(args)
    else:
        raise SystemExit(_launch(args))


if __name__ == "__main__":
    main()
