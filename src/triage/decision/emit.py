"""What schedulers consume, written from a Decision: Slurm's `--exclude=` host list and `scontrol`
drain lines, kubectl cordon / taint / node-condition lines, the global ranks to drop.

Every output is empty of actions unless the decision excludes something; names that the target
cannot take (a host Slurm cannot list, a node name Kubernetes refuses) are left out and said so in
a comment where the output has comments. Free text (the reasons come from log lines) is reduced to
characters that are inert inside double quotes in a shell and in a Slurm reason.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from triage.decision.hostlist import compress, valid_name
from triage.lazy_regex import lazy_re
from triage.model import Decision, Exclusion

TAINT_KEY = "triage/fault"
CONDITION_TYPE = "TriageFault"  # the node condition a patch sets (CamelCase, like the kubelet's own)
MAX_REASON = 200  # characters of a reason on a drain line or in a node condition
_INERT = lazy_re(r"[^A-Za-z0-9 .,:;()/_=+@%<>'-]")
# Kubernetes: a node name is a DNS subdomain (RFC 1123), a taint value a label value.
_DNS_SUBDOMAIN = lazy_re(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = lazy_re(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")


def inert(text: str, limit: int = MAX_REASON) -> str:
    """`text` on one line, with only characters no shell or Slurm quoting acts on, at most `limit` long."""
    flat = " ".join(_INERT.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[:limit - 3].rstrip() + "..."


def comment(decision: Decision) -> str:
    return f"# triage: {decision.action}: {inert(decision.reason, 400)}"


def _why_of(decision: Decision) -> dict[str, str]:
    """host -> why it is excluded (a link: at both ends)."""
    why: dict[str, str] = {}
    for e in decision.exclude:
        for host in (e.host, e.peer if e.kind == "link" else None):
            if host:
                why.setdefault(host, _why(e))
    return why


def _why(e: Exclusion) -> str:
    if e.kind == "link":
        ends = " <-> ".join(x for x in (e.host, e.peer) if x)
        return f"link {ends}: {e.why}"
    return (f"rank {e.rank}: " if e.rank is not None else "") + e.why


# --- Slurm ----------------------------------------------------------------------------------------

def slurm_hosts(decision: Decision) -> tuple[list[str], list[str]]:
    """(the hosts Slurm can take, the ones it cannot)."""
    ok = [h for h in decision.hosts if valid_name(h)]
    return ok, [h for h in decision.hosts if h not in ok]


def slurm_exclude(decision: Decision) -> str:
    """`--exclude=node[01-03,07]` (a line for `sbatch $(cat FILE)`), or "" when nothing is excluded."""
    hosts, _ = slurm_hosts(decision)
    return f"--exclude={compress(hosts)}\n" if hosts else ""


def slurm_drain(decision: Decision) -> str:
    """A shell script: one `scontrol update … state=drain reason="…"` line per excluded node."""
    hosts, refused = slurm_hosts(decision)
    why = _why_of(decision)
    lines = [comment(decision)]
    lines += [f"# not a Slurm node name, left out: {inert(h, 80)}" for h in refused]
    lines += [f'scontrol update nodename={h} state=drain reason="triage: {inert(why[h])}"' for h in hosts]
    return "\n".join(lines) + "\n"


# --- Kubernetes -----------------------------------------------------------------------------------

def k8s_node_name(host: str) -> bool:
    return len(host) <= 253 and bool(_DNS_SUBDOMAIN.fullmatch(host))


def taint_value(decision: Decision) -> str:
    """The taint's value: what kind of fault (a label value: 63 characters of [A-Za-z0-9_.-])."""
    value = decision.rule[:63].strip("-_.")
    return value if _LABEL_VALUE.fullmatch(value) else "fault"


def node_condition_patch(decision: Decision, host: str) -> dict[str, Any]:
    """A strategic-merge patch of a Node's status that sets the TriageFault condition (the fields of
    a NodeCondition: type, status, reason in CamelCase, message)."""
    # A condition's reason is one CamelCase word starting with a letter (a user's row id may not be).
    reason = "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", decision.rule) if part)[:128]
    return {"status": {"conditions": [{"type": CONDITION_TYPE, "status": "True",
                                       "reason": reason if reason[:1].isalpha() else f"Row{reason}",
                                       "message": inert(_why_of(decision).get(host, decision.reason), 1024)}]}}


def kubectl(decision: Decision) -> str:
    """A shell script: `kubectl cordon`, `kubectl taint … :NoSchedule` and a status patch per node."""
    lines = [comment(decision)]
    for host in decision.hosts:
        if not k8s_node_name(host):
            lines.append(f"# not a Kubernetes node name, left out: {inert(host, 80)}")
            continue
        patch = json.dumps(node_condition_patch(decision, host), separators=(",", ":"), ensure_ascii=True)
        lines += [f"kubectl cordon {host}",
                  f"kubectl taint nodes {host} {TAINT_KEY}={taint_value(decision)}:NoSchedule --overwrite",
                  f"kubectl patch node {host} --subresource=status --type=strategic -p {shlex.quote(patch)}"]
    return "\n".join(lines) + "\n"


# --- ranks ----------------------------------------------------------------------------------------

def ranks(decision: Decision) -> str:
    """The global ranks to drop, one per line (`shrink_group(ranks_to_exclude=…)`, ncclCommShrink)."""
    return "".join(f"{r}\n" for r in decision.ranks)
