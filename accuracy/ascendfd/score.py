"""ascend-fd's answer on a bundle scored against the bundle's truth (expected.yaml); not part of
ascend-fd.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .devices import RankDevice
from .diag_job import diagnose_bundle


# ---- scoring against expected.yaml (not part of ascend-fd) -------------------------------------
def _load_truth(bundle: Path) -> dict[str, Any]:
    """The bundle's injected truth (expected.yaml `truth`); where it has none (ascendfd-* bundles), the
    phase and culprit ranks its `expect` states."""
    import yaml

    f = bundle / "expected.yaml"
    if not f.is_file():
        return {}
    data = yaml.safe_load(f.read_text())
    if not isinstance(data, dict):
        return {}
    expect = data.get("expect") or {}
    truth = dict(data.get("truth") or {})
    truth.setdefault("phase", expect.get("phase"))
    truth.setdefault("culprit_ranks", [c["rank"] for c in expect.get("culprits") or [] if c["kind"] == "rank"])
    return truth


def _named(res: dict[str, Any], truth: dict[str, Any]) -> tuple[list[str], list[int], bool, bool]:
    """Map ascend-fd's root devices onto the truth's ranks.

    A root ``Device`` is the process whose plog ascend-fd read, so it maps to a rank by (server, pid)
    through ``truth.ranks``. A ``RankDevice`` carries its rank id. A device that ascend-fd only
    inferred (no plog, pid -1) maps by host and device id as printed. Returns the printed
    ``host/device`` list, the ranks, whether every culprit rank is among them, and whether they are
    exactly the culprit ranks.
    """
    ranks = truth.get("ranks") or []
    by_server = {str(r.get("server")): str(r.get("host_ip")) for r in ranks}
    by_pid = {(str(r.get("host_ip")), str(r.get("pid"))): int(r["rank"]) for r in ranks}
    by_dev = {(str(r.get("host_ip")), str(r.get("device"))): int(r["rank"]) for r in ranks}
    printed: set[str] = set()
    named: set[int] = set()
    if res.get("root_cause_device") == ["ALL Device"]:
        named = {int(r["rank"]) for r in ranks}
    for d in res.get("root_devices", []):
        if isinstance(d, RankDevice):
            printed.add(str(d))
            if d.rank_id.isdigit():
                named.add(int(d.rank_id))
            continue
        if d.worker_name == "worker-NA":
            continue
        host = by_server.get(d.worker_name, d.worker_name)
        printed.add(f"{host}/{d.device_id}")
        rank = by_pid.get((host, d.pid))
        if rank is None:
            rank = by_dev.get((host, d.device_id))
        if rank is not None:
            named.add(rank)
    culprits = {int(c) for c in truth.get("culprit_ranks") or []}
    if not culprits:  # a healthy bundle: right if ascend-fd names no rank
        return sorted(printed), sorted(named), not named, not named
    return sorted(printed), sorted(named), culprits <= named, culprits == named


def run(bundles: list[Path]) -> list[dict[str, Any]]:
    rows = []
    for b in bundles:
        res = diagnose_bundle(b)
        truth = _load_truth(b)
        printed, named, hit, exact = _named(res, truth)
        rows.append(
            {
                "bundle": b.name,
                "code": res["code"],
                "string": res["string"],
                "branch": res["branch"],
                "root_cause_device": res["root_cause_device"],
                "root_devices_printed": printed,
                "root_ranks": named,
                "first_error_device": res["first_error_device"],
                "last_error_device": res["last_error_device"],
                "remote_link": res["remote_link"],
                "device_link": res["device_link"],
                "truth_culprit_ranks": truth.get("culprit_ranks"),
                "truth_culprit_devices": truth.get("culprit_devices"),
                "truth_phase": truth.get("phase"),
                "truth_branch": truth.get("branch"),
                "truth_loser_branch": truth.get("loser_branch"),
                "names_culprit": hit,
                "exact": exact,
            }
        )
    return rows
