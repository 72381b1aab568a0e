"""The decisions' ring of store keys (triage.health.protocol.SLOTS), in a real one-rank gloo group.

Each scenario runs in its own process (torch.distributed's state is per process) over a real
TCPStore, and prints what it saw as JSON. The ring is what keeps the fast path at one store request
per rank with no deletes: call n decides in slot n % SLOTS, replacing the decision of call n - SLOTS.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

pytest.importorskip("torch")

PRELUDE = textwrap.dedent("""
    import json
    from datetime import timedelta
    import torch.distributed as dist
    from triage.health import check
    from triage.health.protocol import SLOTS
    from triage.health.result import TAG
    store = dist.TCPStore("127.0.0.1", 0, 1, True, timedelta(seconds=30))
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    name = dist.GroupMember.WORLD.group_name
    ring = dist.PrefixStore(f"{TAG}/{name}/default/", dist.distributed_c10d._get_default_store())  # check's own
    slot = lambda n: f"{n % SLOTS}/d"
""")


def _run(body: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_keys_stop_growing_once_the_ring_is_full() -> None:
    seen = _run("""
        counts = []
        for n in range(1, 3 * SLOTS + 1):
            assert check(timeout=30).ok
            if n % SLOTS == 0:
                counts.append(store.num_keys())
        print(json.dumps({"counts": counts, "last": ring.get(slot(3 * SLOTS)).decode(), "slots": SLOTS}))
    """)
    first, *rest = seen["counts"]
    assert rest == [first, first], seen
    assert seen["last"] == f"{3 * seen['slots']} ok"


def test_a_slot_holding_what_this_rank_did_not_expect_is_replaced_and_the_check_passes() -> None:
    # An earlier round's decision other than the one this rank read there (as if it had missed it):
    # the check replaces it, at the cost of a second request, and passes.
    seen = _run("""
        for _ in range(5):
            assert check(timeout=30).ok
        ring.set(slot(6), f"{6 - SLOTS} something else")
        result = check(timeout=30)
        print(json.dumps({"ok": result.ok, "call": result.call, "held": ring.get(slot(6)).decode()}))
    """)
    assert seen == {"ok": True, "call": 6, "held": "6 ok"}


def test_a_decision_taken_over_by_a_later_round_is_said_lost_and_the_group_cannot_realign() -> None:
    # The others went on SLOTS calls without this rank: its call's slot holds a later call's decision.
    seen = _run("""
        for _ in range(5):
            assert check(timeout=30).ok
        ring.set(slot(6), f"{6 + SLOTS} ok")
        lost, after = check(timeout=30), check(timeout=30)
        print(json.dumps({"lost": [lost.ok, lost.call, lost.reason, list(lost.exclude)],
                          "after": [after.ok, after.reason]}))
    """)
    ok, call, reason, exclude = seen["lost"]
    assert (ok, call, exclude) == (False, 6, [])
    assert "decision is lost" in reason and f"went on {256} checks past check #6" in reason, reason
    assert seen["after"][0] is False
    assert "cannot realign" in seen["after"][1], seen
