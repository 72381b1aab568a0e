"""Cross-rank configuration: what each rank's logs and dumps state of its setup, and who differs.

Read from events (no second pass over the logs):

- `nccl` / `cuda`: the NCCL banner (`NCCL version 2.28.9+cuda13.0`, rule nccl-version);
- `comm_lib`: the library version a flight-recorder dump states (`comm_lib_version`);
- `env:<NAME>`: the `NCCL_*` / `TORCH_NCCL_*` / `HCCL_*` settings NCCL echoes (`NCCL_SOCKET_IFNAME set
  by environment to eth0`, rule nccl-env-setting);
- `timeout:<group>`: the collective timeout a dump's entries carry, per process group;
- `members:<group>`: the ranks a dump's pg_config lists for a group.

A key whose ranks do not all agree is a `ConfigItem`: its values with their ranks, and the minority
(the ranks outside a clear majority; none when the values split evenly). Settings that differ by
design from process to process (NCCL_HOSTID, CUDA_VISIBLE_DEVICES, the rank's own device) are not
compared.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from triage.model import Event, Evidence
from triage.parse.fr.events import DUMP, GROUP

# Per-process by design: a difference is no finding.
PER_PROCESS = ("NCCL_HOSTID", "CUDA_VISIBLE_DEVICES", "NCCL_COMM_ID", "HCCL_IF_IP", "NCCL_DEBUG_FILE",
               "NCCL_LOCAL_RANK", "NCCL_RAS_ADDR")
# Keys whose minority can explain a failure to set up communication (init, first connection).
AFFECTS_INIT = ("nccl", "cuda", "comm_lib", "env:NCCL_SOCKET_IFNAME", "env:NCCL_IB_HCA", "env:NCCL_NET",
                "env:NCCL_IB_GID_INDEX", "env:NCCL_SOCKET_FAMILY", "env:NCCL_PROTO", "env:NCCL_ALGO",
                "env:HCCL_SOCKET_IFNAME", "env:HCCL_IF_BASE_PORT", "env:NCCL_CROSS_NIC", "env:NCCL_P2P_DISABLE",
                "env:NCCL_IB_DISABLE", "env:NCCL_NET_PLUGIN")
MAX_ITEMS = 32  # keys shown; the rest are counted
MAX_VALUES = 8  # values per key


@dataclass
class ConfigItem:
    key: str
    values: dict[str, list[int]]  # value -> ranks that stated it
    minority: list[int]  # ranks outside the majority value (empty: no clear majority)
    majority: str | None
    evidence: dict[int, Evidence] = field(default_factory=dict)  # rank -> the line that stated it

    def label(self) -> str:
        from triage.ranks import fmt_ranks

        shown = "; ".join(f"{v} on rank{'s' if len(rs) > 1 else ''} {fmt_ranks(rs)}"
                          for v, rs in sorted(self.values.items(), key=lambda kv: -len(kv[1]))[:MAX_VALUES])
        return f"{self.key}: {shown}"


def build_config(events: list[Event]) -> list[ConfigItem]:
    """Every key two ranks state differently, the keys with a minority first.

    Only the events of STATING_RULES and of dumps (family `fr`) are read, and the keys of the two
    never meet: a caller that has them at hand may pass those alone, one kind after the other."""
    said: dict[str, dict[int, tuple[str, Evidence]]] = defaultdict(dict)
    for e in events:
        if (e.rule_id not in STATING_RULES and e.family != "fr") or e.rank is None:
            continue  # most events state no configuration: not asked one by one
        for key, value in _stated(e):
            said[key].setdefault(e.rank, (value, e.evidence))
    items = []
    for key, by_rank in said.items():
        values: dict[str, list[int]] = defaultdict(list)
        for rank, (value, _) in sorted(by_rank.items()):
            values[value].append(rank)
        if len(values) < 2:
            continue
        counts = Counter({v: len(rs) for v, rs in values.items()})
        (common, top), (_, second) = counts.most_common(2)
        minority = sorted(r for v, rs in values.items() if v != common for r in rs) if top > second and top >= 2 else []
        items.append(ConfigItem(key, dict(values), minority, common if minority else None,
                                {r: ev for r, (_, ev) in by_rank.items() if r in minority}))
    items.sort(key=lambda i: (not i.minority, i.key not in AFFECTS_INIT, i.key))
    return items[:MAX_ITEMS]


STATING_RULES = ("nccl-version", "nccl-env-setting")  # the rules whose events `_stated` reads, with fr's


def _stated(e: Event) -> list[tuple[str, str]]:
    f = e.fields
    out: list[tuple[str, str]] = []
    if e.rule_id == "nccl-version":
        out += [("nccl", f.get("nccl_version", "")), ("cuda", f.get("cuda_version", ""))]
    elif e.rule_id == "nccl-env-setting":
        name = f.get("env_name", "")
        if name and name not in PER_PROCESS:
            out.append((f"env:{name}", f.get("env_value", "")))
    elif e.family == "fr" and e.rule_id == DUMP:
        out.append(("comm_lib", f.get("fr_lib_version", "")))
    elif e.family == "fr" and e.rule_id == GROUP:
        group = f.get("fr_pg_desc") or f.get("fr_pg", "")
        out += [(f"timeout:{group}", f.get("fr_timeout_ms", "")), (f"members:{group}", f.get("fr_pg_ranks", ""))]
    return [(k, v) for k, v in out if v]
