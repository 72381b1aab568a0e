"""The principles of DESIGN §4, one function each: given the job's facts, a scored candidate.

Each returns None when its evidence is absent. Scores are how strongly that evidence alone
supports the candidate; the verdict stage weighs candidates against each other.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import regex

from triage.diagnose.facts import RankFacts, is_crash_exit, is_victim_exit
from triage.diagnose.phase import job_phase
from triage.job import INIT_CALLS, Job
from triage.model import Category, Culprit, Event, Evidence, Hypothesis, Kind, Phase, ProcessGroup
from triage.ranks import fmt_ranks, parse_ranks


@dataclass
class Context:
    job: Job
    facts: dict[int, RankFacts]

    @property
    def expected(self) -> list[int]:
        return sorted(self.facts)

    def waiters(self) -> list[int]:
        return [r for r, f in self.facts.items() if f.reported_wait]

    def host_of(self, rank: int) -> str | None:
        state = self.job.ranks.get(rank)
        return state.host if state else None

    def phase(self, culprits: list[int] | None = None, events: list[Event] | None = None) -> Phase:
        return job_phase(self.job, self.facts, culprits, events)


def _evidence(events: list[Event], limit: int = 4) -> list[Evidence]:
    seen: list[Evidence] = []
    for event in events:
        if event.evidence not in seen:
            seen.append(event.evidence)
        if len(seen) >= limit:
            break
    return seen


def _rank_culprit(ctx: Context, rank: int, reason: str, events: list[Event]) -> Culprit:
    return Culprit(kind="rank", rank=rank, host=ctx.host_of(rank), reason=reason,
                   evidence=_evidence(events))


# --- 1. a tool already named it -------------------------------------------------------------

def named_by_tool(ctx: Context) -> Hypothesis | None:
    named: dict[int, list[Event]] = defaultdict(list)
    hosts: dict[str, list[Event]] = defaultdict(list)
    for event in ctx.job.events:
        if event.kind is not Kind.CULPRIT_NAMED or "snapshot" in event.fields:
            continue  # RAS snapshots are weighed together (diagnose/ras.py)
        if _mutual_pair(ctx, event) is not None:
            continue  # both ends waited on each other: the link between them (device_link)
        ranks = parse_ranks(event.fields.get("culprit_ranks", ""))
        ranks += _ranks_by_pid_or_address(ctx, event)
        for rank in ranks:
            named[rank].append(event)
        if not ranks and (host := event.fields.get("culprit_host")):
            hosts[host.split(".")[0]].append(event)
    if not named and not hosts:
        return None
    held_up = _held_up(ctx, named) + sorted(_could_not_reach_root(ctx) & set(named)) + _hit_by_cqe_first(ctx, named)
    for rank in held_up:
        named.pop(rank, None)
    if not named and not hosts:
        return None
    events = [e for es in named.values() for e in es] + [e for es in hosts.values() for e in es]
    tools = sorted({e.rule_id for e in events})
    culprits = [
        _rank_culprit(ctx, rank, f"{es[0].message} ({', '.join(sorted({e.rule_id for e in es}))})", es)
        for rank, es in sorted(named.items())
    ]
    culprits += [Culprit(kind="host", host=h, reason=f"named by {es[0].rule_id}",
                         evidence=_evidence(es)) for h, es in sorted(hosts.items())]
    # What the named rank's own lines say it suffered (a rule that knows the failure) beats what
    # the naming tool says of it, which beats the tool's general category.
    own = [e for r in named if r in ctx.facts for e in ctx.facts[r].known_failures] or [
        e for r in named if r in ctx.facts for e in ctx.facts[r].peer_errors
        if e.category and _names_itself_or_own(e, r)]
    said = [c for e in events if (c := _named_as(e)) is not None]
    category = (_failure_category(own) if own else said[0] if said else
                next((e.category for e in events if e.category), Category.HUNG_PROCESS))
    score = 0.9 if len(culprits) <= max(2, len(ctx.expected) // 8) else 0.6
    unlogged = [r for r in named if r not in ctx.facts or not ctx.facts[r].state.has_log]
    if len(named) > 1 and len(unlogged) == len(named):
        # Several ranks named and none of their logs here: one may only have been held up by
        # another (a hang inside their sub-group); their logs would tell which.
        score = 0.45
    who = fmt_ranks(list(named)) if named else ", ".join(hosts)
    return Hypothesis(
        name="named-by-tool",
        score=score,
        category=category,
        phase=ctx.phase(list(named), events),
        culprits=culprits,
        reasoning=f"{', '.join(tools)} named {'rank' if len(named) == 1 else 'ranks'} {who} "
                  "as the one(s) the others were waiting for." + (
                      f" It also named rank{'s' if len(held_up) > 1 else ''} {fmt_ranks(held_up)}, "
                      f"but {'those' if len(held_up) > 1 else 'that rank'} reported waiting on a "
                      f"peer {'themselves' if len(held_up) > 1 else 'itself'}: held up, not the "
                      "cause." if held_up else ""),
    )


# HCCL's heartbeat says what it found on the device it names (peers.md A7): a process that no
# longer beats (exited, or its network went), one whose operators stopped counting, a link error.
_EXCEPTION_CATEGORY = (("lost", Category.CRASHED_PROCESS), ("stuck", Category.HUNG_PROCESS),
                       ("cqe", Category.NETWORK_FAULT))


def _named_as(event: Event) -> Category | None:
    """The category a naming line itself gives its culprit (HCCL's exception type or status)."""
    text = event.fields.get("exception", "").lower()
    return next((c for word, c in _EXCEPTION_CATEGORY if word in text), None) if text else None


def _names_itself_or_own(event: Event, rank: int) -> bool:
    """A failure of the rank's own: an error, or a peer error whose far end is not another rank
    (`cannot reach negotiation root`: its own way out is what failed)."""
    return event.kind is not Kind.PEER_ERROR or not event.fields.get("peer_rank") or \
        event.fields.get("peer_rank") == str(rank)


def _could_not_reach_root(ctx: Context) -> set[int]:
    """Agents that tried to join HCCL's negotiation and could not reach a root whose address only
    its own server could reach: they arrived, the root's address is the fault."""
    found = _root_unreachable(ctx)
    return set(found[1]) if found else set()


def _hit_by_cqe_first(ctx: Context, named: dict[int, list[Event]]) -> list[int]:
    """Ranks a heartbeat names that had themselves logged an error CQE before it: they left because
    of the link, and the heartbeat only saw them go (peers.md A7: CQE ranks above LOST)."""
    held = []
    for rank, events in named.items():
        if rank not in ctx.facts or not all(_named_as(e) is Category.CRASHED_PROCESS for e in events):
            continue
        cqes = [e for e in ctx.facts[rank].peer_errors if e.family == "hccl" and e.fields.get("peer_device")]
        firsts = [e.time for e in cqes if e.time is not None]
        if firsts and any(e.time is None or e.time > min(firsts) for e in events):
            held.append(rank)
    return held


def _held_up(ctx: Context, named: dict[int, list[Event]]) -> list[int]:
    """Named ranks that themselves reported waiting while another named rank stayed silent."""
    if len(named) < 2:
        return []
    waiting = [r for r in named if r in ctx.facts and ctx.facts[r].reported_wait]
    silent = [r for r in named if r in ctx.facts and not ctx.facts[r].reported_wait
              and ctx.facts[r].state.has_log]
    return sorted(waiting) if silent else []


def _ranks_by_pid_or_address(ctx: Context, event: Event) -> list[int]:
    pid, ip = event.fields.get("culprit_pid"), event.fields.get("culprit_ip")
    found: list[int] = []
    for rank, state in ctx.job.ranks.items():
        pids = {e.identity.pid for e in state.events}
        if pid and pid.isdigit() and int(pid) in pids:
            found.append(rank)
    if not found and ip:
        host = ctx.job.ip_hosts.get(ip, ip)
        device = event.fields.get("culprit_device")
        on_host = [(rank, state) for rank, state in ctx.job.ranks.items() if state.host == host]
        # A device is matched to the rank whose own logs say they drove it (CANN key info,
        # device-<id>/ folders). Without that, NVIDIA's device is the local rank under the
        # launchers' default placement; an NPU's is not (ASCEND_RT_VISIBLE_DEVICES).
        devices_known = any(state.device is not None for _, state in on_host)
        for rank, state in on_host:
            if device is None:
                found.append(rank)
            elif devices_known:
                if str(state.device) == device:
                    found.append(rank)
            elif event.family != "hccl" and str(state.local_rank) == device:
                found.append(rank)
    return found


# --- 2. a rank failed by itself before the others timed out ---------------------------------

def first_failure(ctx: Context) -> Hypothesis | None:
    failed = {r: f for r, f in ctx.facts.items() if f.self_failures}
    if not failed:
        return None
    timed = sorted((f.first_failure_time, r) for r, f in failed.items()
                   if f.first_failure_time is not None)
    if timed:
        first_time = timed[0][0]
        # Ranks that failed within a second of the first are the same event seen twice.
        winners = [r for t, r in timed if t - first_time <= 1.0]
        winners += [r for r, f in failed.items() if f.first_failure_time is None and len(failed) == 1]
    else:
        winners = sorted(failed)
    waits = [f.first_wait_time for f in ctx.facts.values() if f.first_wait_time is not None]
    before_waits = timed and waits and timed[0][0] <= min(waits) + 1.0
    share = len(failed) / max(1, len(ctx.expected))
    if len(winners) == 1:
        # Failing before anyone waited is the strongest sign there is; with no waits at all it
        # is strong too; after the waits began, it may be one more consequence.
        score = 0.9 if before_waits else 0.85 if not waits else 0.7
    elif share > 0.5:
        score = 0.35  # most ranks failed alike: a job-wide fault, not one rank
    else:
        score = 0.6
    events = [e for r in winners for e in failed[r].self_failures]
    category = _failure_category(events)
    known = all(failed[r].known_failures for r in winners)
    if all(e.kind is Kind.EXIT and not is_crash_exit(e) for e in events):
        # A launcher's "exited with 1", and no line of its own says why: strong only when it came
        # before every other rank's trouble.
        score = min(score, 0.7 if before_waits else 0.55)
    elif not known:
        score = min(score, 0.55)  # only lines no rule knows: evidence, but weak
    elif not _others_logged(ctx, winners):
        # Only the failing rank's own log: a fault local by nature still names it, but nothing
        # shows that no other rank failed earlier.
        score = min(score, 0.65 if _local_by_nature(events) else 0.5)
    culprits = [
        _rank_culprit(ctx, r, f"failed first: {_headline(failed[r].self_failures).message}",
                      _own_lines_first(failed[r].self_failures)) for r in sorted(winners)
    ]
    when = " before any peer timed out" if before_waits else ""
    rank_word = "rank" if len(winners) == 1 else "ranks"
    return Hypothesis(
        name="first-failure",
        score=score,
        category=category,
        phase=ctx.phase(winners, events),
        culprits=culprits,
        reasoning=f"{rank_word.capitalize()} {fmt_ranks(winners)} failed by {'itself' if len(winners) == 1 else 'themselves'}"
                  f"{when} ({_headline(events).message}); the other ranks' errors follow from it.",
    )


def _own_lines_first(events: list[Event]) -> list[Event]:
    """The rank's own lines before a launcher's record of its exit: they say why."""
    return sorted(events, key=lambda e: e.kind is Kind.EXIT)


def _headline(events: list[Event]) -> Event:
    return _own_lines_first(events)[0]


def _others_logged(ctx: Context, ranks: list[int]) -> bool:
    return any(f.state.has_log for r, f in ctx.facts.items() if r not in ranks)


_LOCAL_CATEGORIES = (Category.OOM, Category.DEVICE_ERROR, Category.CRASHED_PROCESS,
                     Category.CONFIG_MISMATCH)


def _local_by_nature(events: list[Event]) -> bool:
    """GPU errors, OOM, a crash or abort of the process, invalid usage, an exception of its own."""
    return any(e.kind is not Kind.UNEXPLAINED and (e.category in _LOCAL_CATEGORIES or e.category is None)
               for e in events)


def _failure_category(events: list[Event]) -> Category:
    """The category its rule gives the first failure; a crash when the rule says nothing."""
    return next((e.category for e in events if e.category), Category.CRASHED_PROCESS)


# --- 3. the silent rank ----------------------------------------------------------------------

def silent_rank(ctx: Context) -> Hypothesis | None:
    waiters = ctx.waiters()
    if not waiters or not ctx.job.world_size:
        return None
    failed = {r for r, f in ctx.facts.items() if f.self_failures}
    silent = [r for r in ctx.expected if r not in waiters and r not in failed]
    if not silent:
        return None
    timed_out = [r for r in waiters if ctx.facts[r].timeouts]
    if failed or not timed_out:
        # After a rank crashed, or when the others lost their peers at once rather than timing
        # out, the launcher tears the rest down: a rank it stopped (SIGTERM) before it had time to
        # time out is explained by that, not silent by itself.
        silent = [r for r in silent if not ctx.facts[r].stopped_by_launcher]
        if not silent:
            return None
    with_log = [r for r in silent if ctx.facts[r].state.has_log]
    without_log = [r for r in silent if not ctx.facts[r].state.has_log]
    n = len(ctx.expected)
    small = max(2, n // 10)
    phase = ctx.phase(silent)
    if with_log and len(with_log) <= small:
        score = 0.8 if not without_log else 0.55
        sample = [e for r in waiters[:1] for e in (ctx.facts[r].timeouts + ctx.facts[r].peer_errors)[:1]]
        culprits = [
            Culprit(kind="rank", rank=r, host=ctx.host_of(r),
                    reason="did not report the timeout every other rank reported; its last lines "
                           "show where it stopped",
                    evidence=ctx.facts[r].state.last_lines[:2] + _evidence(sample, 1))
            for r in with_log
        ]
        exited = [r for r in with_log if any(not is_victim_exit(e) for e in ctx.facts[r].exits)]
        category = Category.CRASHED_PROCESS if exited else Category.HUNG_PROCESS
        reasoning = (f"{len(waiters)} of {n} ranks timed out or lost a peer; rank"
                     f"{'s' if len(with_log) > 1 else ''} {fmt_ranks(with_log)} did not, so "
                     f"{'they were' if len(with_log) > 1 else 'it was'} the one the others waited for.")
    elif without_log and len(without_log) <= max(1, n // 16) and not with_log:
        score = 0.65
        culprits = [Culprit(kind="rank", rank=r, host=ctx.host_of(r),
                            reason="left no log while every other rank reported a timeout")
                    for r in without_log]
        category = Category.UNKNOWN
        reasoning = (f"{len(waiters)} of {n} ranks timed out or lost a peer; rank"
                     f"{'s' if len(without_log) > 1 else ''} {fmt_ranks(without_log)} left no log at all: "
                     "it crashed or hung before writing anything, or its log was not collected.")
    else:
        return None
    reasoning += _where_waiting_began(ctx)
    return Hypothesis(name="silent-rank", score=score, category=category, phase=phase,
                      culprits=culprits, reasoning=reasoning)


def _where_waiting_began(ctx: Context) -> str:
    """Which group and collective the first rank to give up was waiting in."""
    firsts = []
    for group in ctx.job.groups.values():
        for member in group.members.values():
            for event in member.timeouts:
                if member.stuck_seq is not None:
                    when = event.time if event.time is not None else float("inf")
                    firsts.append((when, group.default, member.rank, group, member))
    if not firsts:
        return ""
    *_, group, member = min(firsts, key=lambda f: f[:3])
    op = f"{member.stuck_op} " if member.stuck_op else ""
    text = f" The waiting began in {op}SeqNum {member.stuck_seq} of {group.label}"
    if not group.default:
        peers = sorted(r for r, m in group.members.items() if m.stuck_seq == member.stuck_seq)
        text += (f", where rank{'s' if len(peers) > 1 else ''} {fmt_ranks(peers)} timed out first: "
                 "the hang is inside that group")
    return text + "."


# --- 3b. the wait chain ----------------------------------------------------------------------

def wait_chain(ctx: Context) -> Hypothesis | None:
    """Follow who waited on whom to the rank that waited on no one, or to a cycle.

    HCCL says whom a rank waited on (`remoteUserrank` of a link that timed out, a notify wait's
    `remote rank`, a LINK_ERROR_INFO row): rank 0 waits on 1, which waits on 2, which waits on no
    one. Timeouts cascade along such chains (HCCL DFX, peers.md A7; ascend-fd's wait chain, A8),
    so the end of the chain is the cause, even where other ranks are silent too. Group-local
    ranks (a sub-communicator's) are not followed: they are not global ranks.
    """
    waits: dict[int, Counter[int]] = defaultdict(Counter)
    evidence: dict[int, list[Event]] = defaultdict(list)
    for rank, facts in ctx.facts.items():
        for event in facts.timeouts + facts.peer_errors:
            peer = _waited_on(ctx, event) if event.family == "hccl" else None
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
        score = (0.85 if logged else 0.7) if len(culprits) == 1 else 0.55
        return Hypothesis(
            name="wait-chain", score=score,
            category=_failure_category(own) if own else Category.HUNG_PROCESS,
            phase=ctx.phase(culprits, [e for es in evidence.values() for e in es]),
            culprits=[_rank_culprit(ctx, r, "the others' waits lead to it, and it waited on no one",
                                    [e for start in ends[r] for e in evidence[start]])
                      for r in culprits],
            reasoning=f"Who waited on whom, as HCCL logged it: {chains}. The chain ends at rank"
                      f"{'s' if len(culprits) > 1 else ''} {fmt_ranks(culprits)}, which waited on no one.")
    members = sorted({r for cycle in cycles for r in cycle})
    if len(cycles) == 1 and len(members) == 2:
        return _pair_link(ctx, members, evidence)
    return Hypothesis(
        name="wait-chain", score=0.5, category=Category.HUNG_PROCESS,
        phase=ctx.phase(members, [e for es in evidence.values() for e in es]),
        culprits=[_rank_culprit(ctx, r, "in a cycle of ranks each waiting on the next", evidence[r])
                  for r in members],
        reasoning="Who waited on whom, as HCCL logged it, goes round in a cycle ("
                  + "; ".join(" -> ".join(map(str, (*c, c[0]))) for c in sorted(cycles))
                  + "): each rank waits on the next, so no one of them is the cause by this evidence; "
                  "look for what made the first of them wait (its own errors, a link, a stale process).")


def _pair_link(ctx: Context, pair: list[int], evidence: dict[int, list[Event]]) -> Hypothesis:
    """Two ranks each waiting on the other: HCCL's advice is the network between them ("if the link
    setup timeout is reported on both ends, check the network connectivity between the two ends")."""
    a, b = pair
    events = evidence[a] + evidence[b]
    device = {r: ctx.job.ranks[r].device if r in ctx.job.ranks else None for r in pair}
    culprit = Culprit(kind="link", rank=a, host=f"{ctx.host_of(a) or '?'}, device {device[a]}",
                      peer=f"rank {b} ({ctx.host_of(b) or '?'}, device {device[b]})", peer_rank=b,
                      reason="each end of this link waited on the other",
                      evidence=_evidence(evidence[a][:2] + evidence[b][:2]))
    return Hypothesis(
        name="wait-chain", score=0.6, category=Category.NETWORK_FAULT, phase=ctx.phase(None, events),
        culprits=[culprit],
        reasoning=f"Ranks {a} and {b} each waited on the other and on no one else: neither process is "
                  "behind the other, the link between their devices is (NICs, cables, switch ports, "
                  "or a TLS or IP setting that differs).")


def _waited_on(ctx: Context, event: Event) -> int | None:
    """The global rank a line says its writer waited on; a group rank through its communicator.

    The address of a link that timed out is unambiguous: `remoteIpAddr[server/device]`, or a
    device of the writer's own server (a P2P link's `remote physic id`). Otherwise HCCL names the peer in the communicator's
    own ranks (`remoteUserrank[1]` of `group_name_1`); the operation's tag ends with the
    communicator's identifier (`AllReduce_group_name_1`), and each member's init line gave its rank
    there (`…ConfigInner:ranks[4], rank[1] … identifier[…]`).
    """
    fields = event.fields
    if (device := fields.get("peer_device", "")).isdigit() and event.kind is Kind.TIMEOUT:
        if ip := fields.get("peer_ip"):
            at = _ranks_at(ctx, ip, device)
        else:
            host = ctx.job.ranks[event.rank].host if event.rank in ctx.job.ranks else None
            at = [r for r, s in ctx.job.ranks.items() if host and s.host == host and s.device == int(device)]
        if len(at) == 1:
            return at[0]
    peer = fields.get("peer_pg_rank") or fields.get("peer_rank", "")
    if not peer.isdigit():
        return None
    comms = {key: group for key, group in ctx.job.groups.items() if key.startswith("comm:")}
    tag = fields.get("tag", "")
    for key, group in comms.items():
        if tag and tag.endswith("_" + key[len("comm:"):]):
            found = [r for r, m in group.members.items() if m.group_rank == int(peer)]
            return found[0] if len(found) == 1 else None
    # HCCL names peers by their rank in the communicator of the operation. Without a tag that
    # says which (a graph-mode `HcomAllReduce_<hash>_0`, a line with no tag), that is the world's
    # rank only where the world is the job's one communicator, and only if the world has it.
    world = ctx.job.world_size
    if len(comms) > 1 or (world is not None and int(peer) >= world):
        return None
    return int(peer)


def _mutual_pair(ctx: Context, event: Event) -> tuple[int, int] | None:
    """The two ranks of an HCCL connect probe (srcRank could not reach dstRank), when each of them
    waited on the other: then, by HCCL's own advice, the network between them is the fault."""
    fields = event.fields
    if event.family != "hccl" or not {"src_server", "src_device", "culprit_ip", "culprit_device"} <= fields.keys():
        return None
    src = _ranks_at(ctx, fields["src_server"], fields["src_device"])
    dst = _ranks_at(ctx, fields["culprit_ip"], fields["culprit_device"])
    if len(src) != 1 or len(dst) != 1:
        return None
    waited = {rank: {_waited_on(ctx, e) for e in ctx.facts[rank].timeouts + ctx.facts[rank].peer_errors}
              for rank in (src[0], dst[0]) if rank in ctx.facts}
    if dst[0] in waited.get(src[0], set()) and src[0] in waited.get(dst[0], set()):
        return src[0], dst[0]
    return None


def device_link(ctx: Context) -> Hypothesis | None:
    """The link between two devices that HCCL's probe found could not connect, each end waiting on
    the other (`CONNECT TIMEOUT DETECT RESULT`; HCCL: "if the link setup timeout is reported on
    both ends, check the network connectivity between the two ends")."""
    pairs: dict[tuple[int, int], list[Event]] = defaultdict(list)
    for event in ctx.job.events:
        if (pair := _mutual_pair(ctx, event)) is not None:
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
                      evidence=_evidence(events + [e for r in ends for e in ctx.facts[r].timeouts[:1]]))
    return Hypothesis(
        name="device-link", score=0.9 if len(pairs) == 1 else 0.6, category=Category.NETWORK_FAULT,
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
        needed = fields.get("clients_expected", "")
        if event.family != "hccl" or "connected" not in fields or not needed.isdigit():
            continue
        if int(needed) != ctx.job.world_size or ctx.job.unlisted:
            continue  # (a world too large to hold every rank is not listed rank by rank)
        seen = {int(n) for n in regex.findall(r"\[(\d+)\]", fields["connected"])}
        missing = sorted(set(range(int(needed))) - seen - _could_not_reach_root(ctx))
        if not missing or len(missing) * 2 > int(needed):
            continue
        own = [e for r in missing if r in ctx.facts for e in ctx.facts[r].known_failures]
        return Hypothesis(
            name="never-connected", score=0.85,
            category=_failure_category(own) if own else Category.HUNG_PROCESS,
            phase=ctx.phase(missing, [event]),
            culprits=[_rank_culprit(ctx, r, "never connected to the root of the communicator negotiation",
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
            if event.family == "hccl" and fields.get("peer_ip") and fields.get("peer_device", "").isdigit():
                far = (fields["peer_ip"], fields["peer_device"])
                named[far] += 1
                reporters[far].add(rank)
                evidence[far].append(event)
    if sum(named.values()) < 2:
        return None
    (far, count), *rest = named.most_common()
    ranks = _ranks_at(ctx, *far)
    if len(ranks) != 1 or (rest and rest[0][1] == count) or len(reporters[far]) < 2:
        return None
    (rank,) = ranks
    return Hypothesis(
        name="cqe-endpoint", score=0.9, category=Category.NETWORK_FAULT,
        phase=ctx.phase([rank], evidence[far]),
        culprits=[_rank_culprit(ctx, rank, f"its device ({far[0]}, device {far[1]}) is the far end of {count} "
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
    found = _root_unreachable(ctx)
    if found is None:
        return None
    root, agents, events = found
    ip, port = events[0].fields["peer_ip"], events[0].fields["peer_port"]
    return Hypothesis(
        name="unreachable-root", score=0.9, category=Category.NETWORK_FAULT,
        phase=ctx.phase([root], events),
        culprits=[_rank_culprit(ctx, root, f"it advertised {ip}:{port} as the negotiation root, which the "
                                "agents of the other servers cannot reach", events)],
        reasoning=f"Ranks {fmt_ranks(agents)}, on other servers than the root's, all failed to connect to the "
                  f"negotiation root at {ip}:{port}, the address rank {root} advertised, while the agents of its "
                  "own server connected: that address is reachable only from its host (a docker bridge, a "
                  f"host-only interface). Set HCCL_SOCKET_IFNAME (or HCCL_IF_IP) on rank {root}'s server to the "
                  "interface the servers share. The ranks the root lists as missing only could not reach it.")


def _root_unreachable(ctx: Context) -> tuple[int, list[int], list[Event]] | None:
    """(root, the agents that could not reach it, their lines) when every failing agent is on
    another server than the root's and its own server's agents are not among them."""
    dialled: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for facts in ctx.facts.values():
        for event in facts.peer_errors:
            fields = event.fields
            if event.family == "hccl" and "peer_port" in fields and "peer_rank" not in fields and fields.get("peer_ip"):
                dialled[fields["peer_ip"], fields["peer_port"]].append(event)
    if not dialled:
        return None
    events = max(dialled.values(), key=len)
    agents = sorted({e.rank for e in events if e.rank is not None})
    root = 0  # torch_npu: rank 0 creates the root info the others fetch from the store (formats.md §5.9)
    root_host = ctx.host_of(root)
    if len(agents) < 2 or root in agents or root_host is None:
        return None
    if any(ctx.host_of(r) == root_host for r in agents):
        return None  # agents of the root's own server failed too: not its address
    return root, agents, events


def _chain_text(waits: dict[int, Counter[int]], start: int) -> str:
    path = [start]
    while path[-1] in waits and len(path) <= len(waits):
        peer = max(waits[path[-1]], key=lambda p: (waits[path[-1]][p], -p))
        if peer in path:
            break
        path.append(peer)
    return " waited on ".join(f"rank {r}" for r in path)


# --- 4. the lagging rank, and ranks that disagree on the collective -------------------------

def collective_mismatch(ctx: Context) -> Hypothesis | None:
    """Inside one group, ranks that timed out at the same SeqNum in a different collective."""
    for group in _groups_by_progress(ctx):
        by_seq: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for rank, m in group.members.items():
            if m.stuck_seq is not None and m.stuck_op:
                by_seq[m.stuck_seq][m.stuck_op].append(rank)
        for seq, ops in sorted(by_seq.items()):
            if len(ops) < 2:
                continue
            majority_op = max(ops, key=lambda op: len(ops[op]))
            odd = sorted(r for op, ranks in ops.items() if op != majority_op for r in ranks)
            if len(odd) >= len(ops[majority_op]):
                continue
            where = "" if group.default else f" of {group.label}"
            culprits = [_rank_culprit(ctx, r, f"was in {group.members[r].stuck_op} at SeqNum {seq}"
                                      f"{where} while the others were in {majority_op}",
                                      group.members[r].timeouts)
                        for r in odd]
            events = [e for r in odd for e in group.members[r].timeouts]
            return Hypothesis(
                name="collective-mismatch",
                score=0.85,
                category=Category.COLLECTIVE_MISMATCH,
                phase=ctx.phase(odd, events),
                culprits=culprits,
                reasoning=f"At SeqNum {seq}{where}, {len(ops[majority_op])} ranks ran {majority_op} "
                          f"but rank{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} ran something "
                          "else: the ranks issued different collectives, so none could complete.",
            )
    return None


def fingerprint_mismatch(ctx: Context) -> Hypothesis | None:
    """Ranks that were about to run a different collective than the rest, by majority.

    Two sources say which collective each rank was in: TORCH_DISTRIBUTED_DEBUG=DETAIL's
    fingerprints (each line gives the writer's and one other rank's), and, without it, the
    collective each failing rank's traceback ends in.
    """
    fingerprints: dict[str, dict[int, str]] = defaultdict(dict)
    evidence: dict[int, list[Event]] = defaultdict(list)
    calls: dict[int, tuple[str, Event]] = {}
    for event in ctx.job.events:
        fields = event.fields
        if "fp_seq" in fields and "op" in fields:
            writer = event.rank if event.rank is not None else int(fields["fp_rank"])
            seq = fields["fp_seq"]
            # The writer's own fingerprint first: the other rank's can be garbled.
            fingerprints[seq][writer] = _signature(fields["op"], fields.get("shape"),
                                                   fields.get("dtype"))
            if fields.get("peer_op") and fields.get("peer_fp_seq") == seq:
                fingerprints[seq].setdefault(int(fields["peer_rank"]), _signature(
                    fields["peer_op"], fields.get("peer_shape"), fields.get("peer_dtype")))
            evidence[writer].append(event)
        elif "call" in fields and event.rank is not None and fields["call"] not in INIT_CALLS:
            calls[event.rank] = (fields["call"], event)  # the innermost frame comes last
    for seq, by_rank in sorted(fingerprints.items(), key=lambda kv: int(kv[0])):
        odd, common = _minority(by_rank, minimum=3)
        if odd:
            events = [e for r in by_rank for e in evidence.get(r, [])]
            culprits = [_rank_culprit(ctx, r, f"was about to run {by_rank[r]} as collective "
                                      f"{int(seq) + 1} while the others ran {common}",
                                      evidence.get(r) or events) for r in odd]
            return Hypothesis(
                name="collective-mismatch", score=0.9, category=Category.COLLECTIVE_MISMATCH,
                phase=ctx.phase(odd, events), culprits=culprits,
                reasoning=f"TORCH_DISTRIBUTED_DEBUG=DETAIL compared the ranks' collective number "
                          f"{int(seq) + 1}: {len(by_rank) - len(odd)} ranks ran {common}, rank"
                          f"{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} "
                          f"{', '.join(sorted({by_rank[r] for r in odd}))}: the ranks took "
                          "different code paths.")
    by_call = {r: call for r, (call, _) in calls.items()}
    odd, common = _minority(by_call, minimum=3)
    if odd and len(odd) <= max(1, len(ctx.expected) // 4):
        culprits = [_rank_culprit(ctx, r, f"its traceback ends in {by_call[r]}() while the "
                                  f"others' end in {common}()", [calls[r][1]]) for r in odd]
        events = [calls[r][1] for r in odd]
        return Hypothesis(
            name="collective-mismatch", score=0.7, category=Category.COLLECTIVE_MISMATCH,
            phase=ctx.phase(odd, events), culprits=culprits,
            reasoning=f"When the job failed, {len(by_call) - len(odd)} ranks were blocked in "
                      f"{common}() but rank{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} in "
                      f"{', '.join(sorted({by_call[r] for r in odd}))}(): the ranks issued "
                      "different collectives, so none could complete.")
    return None


def _signature(op: str, shape: str | None, dtype: str | None) -> str:
    return f"{op}[{shape}]" + (f" {dtype}" if dtype else "") if shape is not None else op


def _minority(by_rank: dict[int, str], minimum: int) -> tuple[list[int], str]:
    """The ranks outside a clear majority value, and that value; none when there is no majority."""
    if len(by_rank) < minimum:
        return [], ""
    counts = Counter(by_rank.values())
    (common, top), *rest = counts.most_common()
    if not rest or (rest and rest[0][1] == top) or top < 2:
        return [], common
    return sorted(r for r, v in by_rank.items() if v != common), common


def parameter_mismatch(ctx: Context) -> Hypothesis | None:
    """Ranks whose own value of a collective's parameter the others do not share (HCCL EI0005).

    Building a link, two ranks compare the collective they are about to run (tag, count, op,
    data type); each side logs its own value and the other's. The detecting ranks are not the
    cause: the cause is the rank whose own value is the odd one out.
    """
    own: dict[str, dict[int, str]] = defaultdict(dict)
    evidence: dict[int, list[Event]] = defaultdict(list)
    for event in ctx.job.events:
        fields = event.fields
        if event.family != "hccl" or "local_value" not in fields or event.rank is None:
            continue
        parameter = fields.get("parameter") or "parameter"
        own[parameter][event.rank] = fields["local_value"]
        evidence[event.rank].append(event)
    for parameter, by_rank in sorted(own.items()):
        if len(set(by_rank.values())) < 2:
            continue
        odd, common = _minority(by_rank, minimum=3)
        events = [e for r in by_rank for e in evidence[r]]
        if odd:
            culprits = [_rank_culprit(ctx, r, f"ran the collective with {parameter} {by_rank[r]} where the "
                                      f"others had {common}", evidence[r]) for r in odd]
            score, reasoning = 0.9, (
                f"HCCL compared the collective's {parameter} between ranks as they built links: rank"
                f"{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} had "
                f"{', '.join(sorted({by_rank[r] for r in odd}))}, the other {len(by_rank) - len(odd)} "
                f"reporting ranks {common}. The ranks that reported the mismatch only detected it.")
            if parameter in ("tag", "cmdType", "op") and (silent := _silent_besides(ctx, by_rank)):
                # Different operations meet where ranks are at different places in the program: the
                # ones ahead finished the step before, the others are held back, and a rank that
                # logged nothing at all is what holds them.
                score = 0.6
                reasoning += (f" But they differ in which operation they ran, and rank"
                              f"{'s' if len(silent) > 1 else ''} {fmt_ranks(silent)} logged nothing: "
                              "the ranks met at different points of the program, so the mismatch may "
                              "follow from what held the others back.")
        else:
            odd = sorted(by_rank)
            culprits = [_rank_culprit(ctx, r, f"has {parameter} {by_rank[r]}; its peers disagree", evidence[r])
                        for r in odd]
            score, reasoning = 0.5, (
                f"HCCL found the collective's {parameter} inconsistent ("
                + ", ".join(f"rank {r}: {v}" for r, v in sorted(by_rank.items()))
                + "), and no majority says which rank is the odd one.")
        return Hypothesis(name="parameter-mismatch", score=score, category=Category.COLLECTIVE_MISMATCH,
                          phase=ctx.phase(odd, events), culprits=culprits, reasoning=reasoning)
    return None


def _silent_besides(ctx: Context, reporting: dict[int, str]) -> list[int]:
    """Ranks with a log but no failure and no wait of their own, among those that did not report."""
    return sorted(r for r, f in ctx.facts.items() if f.state.has_log and not f.known_failures
                  and not f.reported_wait and r not in reporting)


def tls_mismatch(ctx: Context) -> Hypothesis | None:
    """Ranks whose TLS switch differs from the others' (HCCL): their links can never be built.

    Each device's HCCP logs its switch (`TLS SWITCH (1)`); HCCL itself may list the ranks by
    switch (EI0016). Links between ranks of different switches time out on both sides, on every
    rank alike, so the minority is the cause (HCCL DFX; ascend-fd's first socket check, peers.md A7 and A8).
    """
    switch: dict[int, str] = {}
    evidence: dict[int, list[Event]] = defaultdict(list)
    for event in ctx.job.events:
        fields = event.fields
        if event.family != "hccl":
            continue
        if "tls_switch" in fields and event.rank is not None:
            switch[event.rank] = "on" if fields["tls_switch"] != "0" else "off"
            evidence[event.rank].append(event)
        for state, listed in (("on", fields.get("tls_enabled")), ("off", fields.get("tls_disabled"))):
            for ip, device in _ADDRESSES.findall(listed or ""):
                for rank in _ranks_at(ctx, ip, device):
                    switch.setdefault(rank, state)
                    evidence[rank].append(event)
    odd, common = _minority(switch, minimum=3)
    if not odd:
        return None
    # A switch that differs on a rank no failing link involves did not make these links fail.
    involved = set(ctx.waiters()) | {p for r in ctx.waiters() for e in ctx.facts[r].timeouts + ctx.facts[r].peer_errors
                                     if e.family == "hccl" and (p := _waited_on(ctx, e)) is not None}
    if not set(odd) & involved:
        return None
    waits = [e for r in ctx.waiters() for e in ctx.facts[r].timeouts[:1]]
    return Hypothesis(
        name="tls-mismatch", score=0.85, category=Category.CONFIG_MISMATCH,
        phase=ctx.phase(odd, waits or [e for r in odd for e in evidence[r]]),
        culprits=[_rank_culprit(ctx, r, f"has TLS {switch[r]} where the others have it {common}", evidence[r])
                  for r in odd],
        reasoning=f"The devices' TLS switches differ: rank{'s' if len(odd) > 1 else ''} {fmt_ranks(odd)} "
                  f"{'have' if len(odd) > 1 else 'has'} TLS {switch[odd[0]]}, the other "
                  f"{len(switch) - len(odd)} ranks {common}. Links between the two can never be built, "
                  "so every rank times out building them; the minority is the one to change.")


_ADDRESSES = regex.compile(r"([\d.]+)/(\d+)")


def _ranks_at(ctx: Context, ip: str, device: str) -> list[int]:
    host = ctx.job.ip_hosts.get(ip, ip)
    return [r for r, s in ctx.job.ranks.items() if s.host == host and str(s.device) == device]


def lagging_rank(ctx: Context) -> Hypothesis | None:
    """Inside one group, the few members whose collective sequence fell behind the others'."""
    for group in _groups_by_progress(ctx):
        for key, label in (("enqueued", "last enqueued"), ("stuck_seq", "timed-out SeqNum")):
            values = {r: getattr(m, key) for r, m in group.members.items()
                      if getattr(m, key) is not None}
            if len(values) < 3:
                continue
            common, count = Counter(values.values()).most_common(1)[0]
            behind = sorted(r for r, v in values.items() if v < common)
            if not behind or count < len(values) / 2 or len(behind) > max(2, len(values) // 10):
                continue
            where = "" if group.default else f" of {group.label}"
            culprits = [_rank_culprit(ctx, r, f"{label} collective {values[r]}{where}, behind the "
                                      f"others' {common}",
                                      group.members[r].timeouts or ctx.facts[r].state.events[-1:])
                        for r in behind if r in ctx.facts]
            if not culprits:
                continue
            return Hypothesis(
                name="lagging-rank",
                score=0.75,
                category=Category.HUNG_PROCESS,
                phase=ctx.phase(behind, [e for r in behind for e in group.members[r].timeouts]),
                culprits=culprits,
                reasoning=f"In {group.label}, {count} ranks reached collective {common} ({label}); "
                          f"rank{'s' if len(behind) > 1 else ''} {fmt_ranks(behind)} fell behind at "
                          f"{', '.join(str(values[r]) for r in behind)}, so the others waited on "
                          f"{'them' if len(behind) > 1 else 'it'}.",
            )
    return None


def late_arrival(ctx: Context) -> Hypothesis | None:
    """Every rank reported a wait, but one began waiting long after the others had given up.

    A straggler (a rank that was slow once, longer than the timeout) is not silent: it arrives at
    the collective after its peers timed out and then fails too (a timeout of its own, or "connection
    closed" from the peers that already left). Its wait began late: a timeout's wait began
    `timeout` before it fired; a lost peer is noticed as soon as the rank gets there.
    """
    waiters = ctx.waiters()
    if len(waiters) < 3 or len(waiters) < len(ctx.expected):
        return None  # a rank said nothing: that is the silent-rank principle's case
    starts: dict[int, tuple[float, Event]] = {}
    for rank in waiters:
        f = ctx.facts[rank]
        for event in sorted(f.timeouts + f.peer_errors, key=lambda e: e.time or 0.0):
            if event.time is None:
                continue
            start = event.time - _waited_s(event) if event.kind is Kind.TIMEOUT else event.time
            starts[rank] = (start, event)
            break
    if len(starts) < 3:
        return None
    ordered = sorted(starts.items(), key=lambda kv: kv[1][0])
    (last_rank, (last_start, last_event)), rest = ordered[-1], ordered[:-1]
    others = [start for _, (start, _) in rest]
    timeouts = [e for _, (_, e) in rest if e.kind is Kind.TIMEOUT]
    if not timeouts:
        return None
    timeout_s = max(_waited_s(e) for e in timeouts)
    spread = max(others) - min(others)
    gap = last_start - max(others)
    if gap < max(2.0, 0.25 * timeout_s) or spread > gap / 2:
        return None
    return Hypothesis(
        name="late-arrival", score=0.7, category=Category.HUNG_PROCESS,
        phase=ctx.phase([last_rank], [last_event]),
        culprits=[_rank_culprit(ctx, last_rank, f"reached the collective {gap:.1f} s after the others "
                                f"had started waiting there (their timeout: {timeout_s:g} s)",
                                [last_event, timeouts[0]])],
        reasoning=f"{len(rest)} ranks began waiting in the same collective within {spread:.1f} s of "
                  f"each other and timed out after {timeout_s:g} s; rank {last_rank} got there "
                  f"{gap:.1f} s after them, so it was the one they waited for (a straggler: slow "
                  "data, a long checkpoint, a stall), and it failed only because they had gone.")


def _waited_s(event: Event) -> float:
    for key, scale in (("elapsed_ms", 1e-3), ("timeout_ms", 1e-3), ("timeout_s", 1.0)):
        value = event.fields.get(key, "")
        if value.isdigit():
            return int(value) * scale
    return 0.0


def _groups_by_progress(ctx: Context) -> list[ProcessGroup]:
    """Groups with sequence evidence, the one whose waiting began first leading."""
    def first_wait(group: ProcessGroup) -> float:
        times = [e.time for m in group.members.values() for e in m.timeouts if e.time is not None]
        return min(times) if times else float("inf")
    return sorted(ctx.job.groups.values(), key=lambda g: (first_wait(g), not g.default, g.key))


# --- 5. the link / host named by network errors ---------------------------------------------

def network_link(ctx: Context) -> Hypothesis | None:
    hosts = ctx.job.hosts()
    if len(hosts) < 2:
        return None  # every peer shares the one host: an address says nothing
    named: dict[str, list[Event]] = defaultdict(list)
    reporters: dict[str, set[str]] = defaultdict(set)
    for f in ctx.facts.values():
        for event in f.peer_errors:
            peer = _peer_host(ctx, event)
            if peer and peer in hosts:
                named[peer].append(event)
                reporters[peer].add(f.state.host or "?")
    if not named:
        return None
    total = sum(len(es) for es in named.values())
    peer, events = max(named.items(), key=lambda kv: len(kv[1]))
    if len(events) < 0.6 * total:
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
                name="network-endpoint", score=0.85,
                category=own[0].category or Category.CRASHED_PROCESS,
                phase=ctx.phase([rank], own + events),
                culprits=[_rank_culprit(ctx, rank, f"its endpoint {ip}<{port}> refused or dropped "
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
                              evidence=_evidence(events + back))
            return Hypothesis(
                name="network-link", score=0.75, category=Category.NETWORK_FAULT,
                phase=ctx.phase(None, events), culprits=[culprit],
                reasoning=f"Network errors on both ends name the link between {other} and {peer}; "
                          "no rank failed by itself.")
    # One line from each reporting host first, so that the evidence shows what the reason says.
    firsts = list({ctx.host_of(e.rank) if e.rank is not None else None: e for e in reversed(events)}.values())[::-1]
    culprit = Culprit(kind="host", host=peer,
                      reason=f"named as the peer in {len(events)} of {total} network errors, "
                             f"reported from {len(others)} other host{'s' if len(others) != 1 else ''}",
                      evidence=_evidence(firsts + [e for e in events if e not in firsts]))
    return Hypothesis(
        name="network-host", score=0.8, category=Category.NETWORK_FAULT,
        phase=ctx.phase(hosts[peer], events), culprits=[culprit],
        reasoning=f"{len(events)} of {total} network errors name {peer} as the far end, reported "
                  f"from {len(others)} host{'s' if len(others) != 1 else ''}: its network "
                  "(NIC, cable, switch port) or its processes went away.")


def _peer_host(ctx: Context, event: Event) -> str | None:
    fields = event.fields
    if ip := fields.get("peer_ip"):
        return ctx.job.ip_hosts.get(ip) or _host_by_ip_suffix(ctx, ip)
    if host := fields.get("peer_host"):
        return host.split(".")[0]
    # A rank named as the far end is network evidence only when the line is about the network
    # (a monitored_barrier "errors while waiting for rank 0" names its coordinator, not a link).
    if (peer := fields.get("peer_rank", "")).isdigit() and event.category is Category.NETWORK_FAULT:
        return ctx.host_of(int(peer))
    return None


def _host_by_ip_suffix(ctx: Context, ip: str) -> str | None:
    """Host folders named after their address (`host_3_10.0.0.4`) or hosts named like the IP."""
    for host in ctx.job.hosts():
        if ip == host or host.endswith(ip):
            return host
    return None


HYPOTHESES: tuple[Callable[[Context], Hypothesis | None], ...] = (
    named_by_tool, first_failure, silent_rank, wait_chain, collective_mismatch, fingerprint_mismatch,
    parameter_mismatch, tls_mismatch, device_link, never_connected, cqe_endpoint, unreachable_root,
    lagging_rank, late_arrival, network_link,
)
