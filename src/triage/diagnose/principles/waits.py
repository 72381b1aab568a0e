"""Who waited on whom: the chain of waits, the link both ends waited across, the rank that never came.

HCCL's lines say whom a rank waited on (a timed-out link's far end, a notify wait's remote rank),
its connection probe which pair could not connect, its negotiation root which ranks never arrived,
its error CQEs which device a failed transfer went to, and torch_npu's agents which root address
they could not reach. Each principle here follows one of those to the rank (or link) the others
waited for. The peer pass (triage.job.peers) has already turned the ranks, devices and addresses the
lines name into global ranks (`Event.peer`, `Event.about`).
"""

from __future__ import annotations

from collections import Counter, defaultdict

import regex

from triage.diagnose.context import Context, evidence_of, failure_category, rank_culprit
from triage.diagnose.principles.peer_named import PEER_NAMED_SCORE, one_log_at_hand, peer_named
from triage.diagnose.principles.principle import Principle
from triage.job.peers import ranks_at
from triage.model import Category, Culprit, Event, Hypothesis
from triage.ranks import fmt_ranks

# The waits lead to one rank, whose log is here (it waited on no one) / whose log is missing.
CHAIN_END_SCORE = 0.85
CHAIN_END_NO_LOG_SCORE = 0.7
# The waits lead to several ranks.
CHAIN_ENDS_SCORE = 0.55
# The waits go round a cycle of more than two ranks: no one of them is the cause by this evidence.
CYCLE_SCORE = 0.5
# Two ranks each waited on the other: the link between their devices.
PAIR_LINK_SCORE = 0.6
# HCCL's probe found one pair that could not connect, each end waiting on the other / several such pairs.
DEVICE_LINK_SCORE = 0.9
DEVICE_LINKS_SCORE = 0.6
# The negotiation root listed the ranks that never connected.
NEVER_CONNECTED_SCORE = 0.85
# Most error CQEs name one device, from several ranks.
CQE_ENDPOINT_SCORE = 0.9
# The agents of every other server could not reach the root's advertised address.
UNREACHABLE_ROOT_SCORE = 0.9


def wait_chain(ctx: Context) -> Hypothesis | None:
    """Follow who waited on whom to the rank that waited on no one, or to a cycle.

    HCCL says whom a rank waited on (`remoteUserrank` of a link that timed out, a notify wait's
    `remote rank`, a LINK_ERROR_INFO row): rank 0 waits on 1, which waits on 2, which waits on no
    one. Timeouts cascade along such chains (HCCL DFX, docs/prior-art.md §A7; ascend-fd's wait
    chain, §A8), so the end of the chain is the cause, even where other ranks are silent too. A
    peer the peer pass could not place in global ranks (a sub-communicator's rank with no tag
    naming its communicator) is not followed.
    """
    waits: dict[int, Counter[int]] = defaultdict(Counter)
    evidence: dict[int, list[Event]] = defaultdict(list)
    for rank, facts in ctx.facts.items():
        for event in facts.timeouts + facts.peer_errors:
            # Only HCCL's lines say whom a rank waited on inside a collective (a link's remote rank, a
            # notify wait's); the peers other families name (`retrieving ncclUniqueId from [0]`, a
            # connection closed by rank 3) are where a connection came from, not a wait that cascades.
            peer = event.peer if event.family == "hccl" else None
            if peer is not None and peer != rank:
                waits[rank][peer] += 1
                evidence[rank].append(event)
    if not waits:
        return None
    ends: dict[int, list[int]] = defaultdict(list)  # end of a chain -> the ranks whose chain ends there
    cycles: set[tuple[int, ...]] = set()
    for start in waits:
        path = [start]
        while (node := path[-1]) in waits:
            cited = max(waits[node], key=lambda p: (waits[node][p], -p))  # the peer it cited most
            if cited in path:
                cycles.add(tuple(sorted(path[path.index(cited):])))
                break
            path.append(cited)
        else:
            ends[path[-1]].append(start)
    if ends:
        culprits = sorted(ends)
        chains = "; ".join(max((_chain_text(waits, start) for start in ends[end]), key=len) for end in culprits)
        own = [e for r in culprits if r in ctx.facts for e in ctx.facts[r].known_failures]
        logged = all(r in ctx.facts and ctx.facts[r].state.has_log for r in culprits)
        score = (CHAIN_END_SCORE if logged else CHAIN_END_NO_LOG_SCORE) if len(culprits) == 1 else CHAIN_ENDS_SCORE
        if not logged and one_log_at_hand(ctx):
            # One rank's log alone names whom it waited on: a lead, not a chain (absence in a
            # partial log is not evidence; the peer may itself have waited on another). The peer-named
            # principle names it, capped, with the logs that would confirm it; a chain it cannot
            # read as one lead (several peers) is capped alike.
            lead = peer_named(ctx)
            if lead is not None and [c.rank for c in lead.culprits] == culprits:
                return None
            score = min(score, PEER_NAMED_SCORE)
        return Hypothesis(
            name="wait-chain", score=score,
            category=failure_category(own) if own else Category.HUNG_PROCESS,
            phase=ctx.phase(culprits, [e for es in evidence.values() for e in es]),
            culprits=[rank_culprit(ctx, r, "the others' waits lead to it, and it waited on no one",
                                   [e for start in ends[r] for e in evidence[start]])
                      for r in culprits],
            reasoning=f"Who waited on whom, as HCCL logged it: {chains}. The chain ends at rank"
                      f"{'s' if len(culprits) > 1 else ''} {fmt_ranks(culprits)}, which waited on no one.")
    members = sorted({r for cycle in cycles for r in cycle})
    if len(cycles) == 1 and len(members) == 2:
        return _pair_link(ctx, members, evidence)
    return Hypothesis(
        name="wait-chain", score=CYCLE_SCORE, category=Category.HUNG_PROCESS,
        phase=ctx.phase(members, [e for es in evidence.values() for e in es]),
        culprits=[rank_culprit(ctx, r, "in a cycle of ranks each waiting on the next", evidence[r])
                  for r in members],
        reasoning="Who waited on whom, as HCCL logged it, goes round in a cycle ("
                  + "; ".join(" -> ".join(map(str, (*c, c[0]))) for c in sorted(cycles))
                  + "): each rank waits on the next, so no one of them is the cause by this evidence; "
                  "look for what made the first of them wait (its own errors, a link, a stale process).")


def _chain_text(waits: dict[int, Counter[int]], start: int) -> str:
    path = [start]
    while path[-1] in waits and len(path) <= len(waits):
        peer = max(waits[path[-1]], key=lambda p: (waits[path[-1]][p], -p))
        if peer in path:
            break
        path.append(peer)
    return " waited on ".join(f"rank {r}" for r in path)


def _pair_link(ctx: Context, pair: list[int], evidence: dict[int, list[Event]]) -> Hypothesis:
    """Two ranks each waiting on the other: HCCL's advice is the network between them ("if the link
    setup timeout is reported on both ends, check the network connectivity between the two ends")."""
    a, b = pair
    events = evidence[a] + evidence[b]
    device = {r: ctx.job.ranks[r].device if r in ctx.job.ranks else None for r in pair}
    culprit = Culprit(kind="link", rank=a, host=f"{ctx.host_of(a) or '?'}, device {device[a]}",
                      peer=f"rank {b} ({ctx.host_of(b) or '?'}, device {device[b]})", peer_rank=b,
                      reason="each end of this link waited on the other",
                      evidence=evidence_of(evidence[a][:2] + evidence[b][:2]))
    return Hypothesis(
        name="wait-chain", score=PAIR_LINK_SCORE, category=Category.NETWORK_FAULT, phase=ctx.phase(None, events),
        culprits=[culprit],
        reasoning=f"Ranks {a} and {b} each waited on the other and on no one else: neither process is "
                  "behind the other, the link between their devices is (NICs, cables, switch ports, "
                  "or a TLS or IP setting that differs).")


def mutual_pair(ctx: Context, event: Event) -> tuple[int, int] | None:
    """The two ranks of an HCCL connect probe (srcRank could not reach dstRank), when each of them
    waited on the other: then, by HCCL's own advice, the network between them is the fault."""
    fields = event.fields
    if not ("culprit_device" in fields and "src_server" in fields and "src_device" in fields
            and "culprit_ip" in fields):
        return None
    # The peer pass resolved the probe's srcRank into `peer`, its dstRank into `about`.
    if event.peer is None or len(event.about) != 1:
        return None
    src, dst = event.peer, event.about[0]
    waited = {rank: {e.peer for e in ctx.facts[rank].timeouts + ctx.facts[rank].peer_errors}
              for rank in (src, dst) if rank in ctx.facts}
    if dst in waited.get(src, set()) and src in waited.get(dst, set()):
        return src, dst
    return None


def device_link(ctx: Context) -> Hypothesis | None:
    """The link between two devices that HCCL's probe found could not connect, each end waiting on
    the other (`CONNECT TIMEOUT DETECT RESULT`; HCCL: "if the link setup timeout is reported on
    both ends, check the network connectivity between the two ends")."""
    pairs: dict[tuple[int, int], list[Event]] = defaultdict(list)
    for event in ctx.job.events:
        if "src_server" in event.fields and (pair := mutual_pair(ctx, event)) is not None:  # a probe's line
            pairs[min(pair), max(pair)].append(event)
    if not pairs:
        return None
    (a, b), events = max(pairs.items(), key=lambda kv: len(kv[1]))
    fields = events[0].fields
    ends = (a, b)
    device = {r: ctx.job.ranks[r].device for r in ends}
    culprit = Culprit(kind="link", rank=a, host=f"{ctx.host_of(a) or '?'}, device {device[a]}",
                      peer=f"rank {b} ({ctx.host_of(b) or '?'}, device {device[b]})", peer_rank=b,
                      reason="HCCL's probe found this pair could not connect, and each end waited on the other",
                      evidence=evidence_of(events + [e for r in ends for e in ctx.facts[r].timeouts[:1]]))
    return Hypothesis(
        name="device-link", score=DEVICE_LINK_SCORE if len(pairs) == 1 else DEVICE_LINKS_SCORE,
        category=Category.NETWORK_FAULT,
        phase=ctx.phase(None, events), culprits=[culprit],
        reasoning=f"HCCL's connection probe found that {fields['src_server']}/{fields['src_device']} could not "
                  f"connect to {fields['culprit_ip']}/{fields['culprit_device']}, and both ends timed out "
                  f"waiting on each other: the network between ranks {a} and {b} (their NICs, cables, switch "
                  "ports, or a TLS or IP setting that differs), not either process.")


def never_connected(ctx: Context) -> Hypothesis | None:
    """The ranks the root of HCCL's communicator negotiation waited for and never saw.

    After HCCL_CONNECT_TIMEOUT the root lists how many ranks it needed and which connected
    (`[DisplayConnectionedRank]`); the others never arrived (ascend-fd code 121). Only the world's
    negotiation is read: a sub-communicator's list holds its own ranks, not global ones.
    """
    for event in ctx.job.events:
        fields = event.fields
        if "connected" not in fields:
            continue
        needed = fields.get("clients_expected", "")
        if not needed.isdigit():
            continue
        if int(needed) != ctx.job.world_size or ctx.job.unlisted:
            continue  # (a world too large to hold every rank is not listed rank by rank)
        seen = {int(n) for n in regex.findall(r"\[(\d+)\]", fields["connected"])}
        missing = sorted(set(range(int(needed))) - seen - could_not_reach_root(ctx))
        if not missing or len(missing) * 2 > int(needed):
            continue
        own = [e for r in missing if r in ctx.facts for e in ctx.facts[r].known_failures]
        return Hypothesis(
            name="never-connected", score=NEVER_CONNECTED_SCORE,
            category=failure_category(own) if own else Category.HUNG_PROCESS,
            phase=ctx.phase(missing, [event]),
            culprits=[rank_culprit(ctx, r, "never connected to the root of the communicator negotiation",
                                   [*[e for e in own if e.rank == r][:2], event]) for r in missing],
            reasoning=f"The root of HCCL's communicator negotiation needed {needed} ranks and "
                      f"{len(seen)} connected: rank{'s' if len(missing) > 1 else ''} {fmt_ranks(missing)} "
                      "never did, so every other rank's negotiation timed out waiting for "
                      f"{'them' if len(missing) > 1 else 'it'}.")
    return None


def cqe_endpoint(ctx: Context) -> Hypothesis | None:
    """The device that most error CQEs name as their far end (HCCL; ascend-fd's code 116).

    An error CQE is a RoCE transfer that failed between two devices; when one device's port fails,
    every peer that talks to it gets CQEs naming it, and it gets CQEs naming them: the endpoint
    most named is the broken one.
    """
    named: Counter[tuple[str, str]] = Counter()
    reporters: dict[tuple[str, str], set[int]] = defaultdict(set)
    evidence: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for rank, facts in ctx.facts.items():
        for event in facts.peer_errors:
            fields = event.fields
            if fields.get("peer_ip") and fields.get("peer_device", "").isdigit():
                far = (fields["peer_ip"], fields["peer_device"])
                named[far] += 1
                reporters[far].add(rank)
                evidence[far].append(event)
    if sum(named.values()) < 2:
        return None
    (far, count), *rest = named.most_common()
    ranks = ranks_at(ctx.job, *far)
    if len(ranks) != 1 or (rest and rest[0][1] == count) or len(reporters[far]) < 2:
        return None
    (rank,) = ranks
    return Hypothesis(
        name="cqe-endpoint", score=CQE_ENDPOINT_SCORE, category=Category.NETWORK_FAULT,
        phase=ctx.phase([rank], evidence[far]),
        culprits=[rank_culprit(ctx, rank, f"its device ({far[0]}, device {far[1]}) is the far end of {count} "
                               f"of {sum(named.values())} error CQEs, from {len(reporters[far])} ranks",
                               evidence[far])],
        reasoning=f"Error CQEs (RoCE transfers that failed) from ranks {fmt_ranks(sorted(reporters[far]))} name "
                  f"{far[0]} device {far[1]}, rank {rank}'s, as their far end: its port or link is the one that "
                  "failed. Check it with `hccn_tool -i <dev> -link -g` and `-net_health -g`.")


def unreachable_root(ctx: Context) -> Hypothesis | None:
    """Agents that could not reach the negotiation root at the address it advertised.

    HCCL's root (the communicator's rank 0, which creates the root info) advertises one address;
    when the agents of other servers all fail to connect to it while its own server's agents
    did, the address is the fault: an interface only its own host can reach (a docker bridge,
    HCCL_SOCKET_IFNAME / HCCL_IF_IP unset there), not the agents the root lists as missing.
    """
    found = root_unreachable(ctx)
    if found is None:
        return None
    root, agents, events = found
    ip, port = events[0].fields["peer_ip"], events[0].fields["peer_port"]
    return Hypothesis(
        name="unreachable-root", score=UNREACHABLE_ROOT_SCORE, category=Category.NETWORK_FAULT,
        phase=ctx.phase([root], events),
        culprits=[rank_culprit(ctx, root, f"it advertised {ip}:{port} as the negotiation root, which the "
                               "agents of the other servers cannot reach", events)],
        reasoning=f"Ranks {fmt_ranks(agents)}, on other servers than the root's, all failed to connect to the "
                  f"negotiation root at {ip}:{port}, the address rank {root} advertised, while the agents of its "
                  "own server connected: that address is reachable only from its host (a docker bridge, a "
                  f"host-only interface). Set HCCL_SOCKET_IFNAME (or HCCL_IF_IP) on rank {root}'s server to the "
                  "interface the servers share. The ranks the root lists as missing only could not reach it.")


def root_unreachable(ctx: Context) -> tuple[int, list[int], list[Event]] | None:
    """(root, the agents that could not reach it, their lines) when every failing agent is on
    another server than the root's and its own server's agents are not among them."""
    dialled: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for facts in ctx.facts.values():
        for event in facts.peer_errors:
            fields = event.fields
            # torch_npu's agents dialling the root's address (HCCL's own lines name a rank or device).
            if event.family == "hccl" and "peer_port" in fields and "peer_rank" not in fields and fields.get("peer_ip"):
                dialled[fields["peer_ip"], fields["peer_port"]].append(event)
    if not dialled:
        return None
    events = max(dialled.values(), key=len)
    agents = sorted({e.rank for e in events if e.rank is not None})
    root = 0  # torch_npu: rank 0 creates the root info the others fetch from the store (docs/formats.md §5.9)
    root_host = ctx.host_of(root)
    if len(agents) < 2 or root in agents or root_host is None:
        return None
    if any(ctx.host_of(r) == root_host for r in agents):
        return None  # agents of the root's own server failed too: not its address
    return root, agents, events


def could_not_reach_root(ctx: Context) -> set[int]:
    """Agents that tried to join HCCL's negotiation and could not reach a root whose address only
    its own server could reach: they arrived, the root's address is the fault."""
    found = root_unreachable(ctx)
    return set(found[1]) if found else set()


WAIT_CHAIN = Principle(
    name="wait-chain", emits=("wait-chain",), run=wait_chain,
    summary="HCCL logs whom each rank waited on (a timed-out link's far end, a notify wait's remote rank); "
            "timeouts cascade along those waits, so following them from every waiting rank leads to the "
            "rank that waited on no one: the cause, even where other ranks are silent too. Two ranks each "
            "waiting on the other point at the link between their devices; a longer cycle names its "
            "members, weakly.")
DEVICE_LINK = Principle(
    name="device-link", emits=("device-link",), run=device_link,
    summary="HCCL's connection probe (`CONNECT TIMEOUT DETECT RESULT`) names a pair of devices that could not "
            "connect, and each end waited on the other: by HCCL's own advice the network between the two "
            "(NICs, cables, switch ports, a TLS or IP setting that differs) is the fault, not either process.")
NEVER_CONNECTED = Principle(
    name="never-connected", emits=("never-connected",), run=never_connected,
    summary="After HCCL_CONNECT_TIMEOUT the root of the world communicator's negotiation lists which ranks "
            "connected: the few that never did are what every other rank's negotiation waited for (less "
            "the agents that could not reach a root address only its own server could reach).")
CQE_ENDPOINT = Principle(
    name="cqe-endpoint", emits=("cqe-endpoint",), run=cqe_endpoint,
    summary="Error CQEs are RoCE transfers that failed between two devices; when one device's port fails, "
            "every peer that talks to it logs CQEs naming it. The device most named as the far end, by "
            "several ranks and with no tie, is the broken one, and its rank is named.")
UNREACHABLE_ROOT = Principle(
    name="unreachable-root", emits=("unreachable-root",), run=unreachable_root,
    summary="torch_npu's rank 0 advertises the address of HCCL's negotiation root; when the agents of every "
            "other server fail to reach it while those of its own server do, the address is the fault (an "
            "interface only its host can reach, HCCL_SOCKET_IFNAME or HCCL_IF_IP unset there), and rank 0 "
            "is named, not the ranks the root lists as missing.")
