"""The far end that network errors name: one process's endpoint, the link between two hosts, or a host.

Peer errors name the other end of a failed connection (an address, a host, a rank on a network
line); the peer pass (triage.job.peers) has resolved each into a host (`Event.peer_host`). When most of
them name one host, reported from other hosts, and no rank there failed by itself, its network (or
its processes) went away; errors on both ends of one pair of hosts name the link between them, and
errors that all name one address and port name the one process listening there.
"""

from __future__ import annotations

from collections import defaultdict

from triage.diagnose.context import Context, evidence_of, rank_culprit
from triage.diagnose.principles.principle import Principle
from triage.model import Category, Culprit, Event, Hypothesis

# One host must be the far end of at least this share of the network errors.
MAJORITY_SHARE = 0.6
# Every error names one address and port, where one rank logged its own failure.
ENDPOINT_SCORE = 0.85
# Errors on both ends of one pair of hosts, and no rank failed by itself.
LINK_SCORE = 0.75
# Most errors name one host, reported from other hosts, and no rank there failed by itself.
HOST_SCORE = 0.8


def network_endpoint_link_or_host(ctx: Context) -> Hypothesis | None:
    hosts = ctx.job.hosts()
    if len(hosts) < 2:
        return None  # every peer shares the one host: an address says nothing
    named: dict[str, list[Event]] = defaultdict(list)
    reporters: dict[str, set[str]] = defaultdict(set)
    for f in ctx.facts.values():
        for event in f.peer_errors:
            peer = event.peer_host
            if peer and peer in hosts:
                named[peer].append(event)
                reporters[peer].add(f.state.host or "?")
    if not named:
        return None
    total = sum(len(es) for es in named.values())
    peer, events = max(named.items(), key=lambda kv: len(kv[1]))
    if len(events) < MAJORITY_SHARE * total:
        return None
    others = reporters[peer] - {peer}
    endpoints = {(e.fields.get("peer_ip"), e.fields.get("peer_port")) for e in events}
    if len(endpoints) == 1 and None not in next(iter(endpoints)) and len(events) > 1:
        # Every error names one address and port: one process there, not the host's network.
        ip, port = next(iter(endpoints))
        suspects = [r for r in hosts[peer] if ctx.facts[r].known_failures]
        if len(suspects) == 1:
            (rank,) = suspects
            own = ctx.facts[rank].known_failures
            return Hypothesis(
                name="network-endpoint", score=ENDPOINT_SCORE,
                category=own[0].category or Category.CRASHED_PROCESS,
                phase=ctx.phase([rank], own + events),
                culprits=[rank_culprit(ctx, rank, f"its endpoint {ip}<{port}> refused or dropped "
                                       f"{len(events)} connections, and it logged its own failure",
                                       own + events)],
                reasoning=f"All {len(events)} network errors name one endpoint, {ip}<{port}> on "
                          f"{peer}: a single process, not the host's network. Rank {rank} on "
                          f"{peer} logged its own failure ({own[0].message}).")
    if not others:
        return None  # errors only from the host's own ranks: its processes went, not its network
    if any(ctx.facts[r].self_failures for r in hosts[peer]):
        return None  # a rank there failed by itself: the lost connections follow from that
    if len(others) == 1:
        (other,) = others
        back = named.get(other, [])
        if back:
            culprit = Culprit(kind="link", host=peer, peer=other,
                              reason=f"{len(events)} network errors between {other} and {peer}",
                              evidence=evidence_of(events + back))
            return Hypothesis(
                name="network-link", score=LINK_SCORE, category=Category.NETWORK_FAULT,
                phase=ctx.phase(None, events), culprits=[culprit],
                reasoning=f"Network errors on both ends name the link between {other} and {peer}; "
                          "no rank failed by itself.")
    # One line from each reporting host first, so that the evidence shows what the reason says.
    firsts = list({ctx.host_of(e.rank) if e.rank is not None else None: e for e in reversed(events)}.values())[::-1]
    culprit = Culprit(kind="host", host=peer,
                      reason=f"named as the peer in {len(events)} of {total} network errors, "
                             f"reported from {len(others)} other host{'s' if len(others) != 1 else ''}",
                      evidence=evidence_of(firsts + [e for e in events if e not in firsts]))
    return Hypothesis(
        name="network-host", score=HOST_SCORE, category=Category.NETWORK_FAULT,
        phase=ctx.phase(hosts[peer], events), culprits=[culprit],
        reasoning=f"{len(events)} of {total} network errors name {peer} as the far end, reported "
                  f"from {len(others)} host{'s' if len(others) != 1 else ''}: its network "
                  "(NIC, cable, switch port) or its processes went away.")


PRINCIPLE = Principle(
    name="network-endpoint-link-or-host", emits=("network-endpoint", "network-link", "network-host"),
    run=network_endpoint_link_or_host,
    summary="Peer errors name the far end of a failed connection. When most of them name one host: if they "
            "all name one address and port where one rank logged its own failure, that process "
            "(network-endpoint); if they come from one other host that the host's own errors name back, the "
            "link between the two (network-link); if they come from other hosts and no rank of the named "
            "host failed by itself, its network or its processes went away (network-host).")
