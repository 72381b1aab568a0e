"""The peer pass: who each line is about besides its writer, in global ranks, resolved once.

The identity stage settles who wrote a line. Many lines also speak of another process: the peer a
rank waited on or lost (`remoteUserrank[1]`, `connection closed by rank 3`, a timed-out link's far
device), the process a tool names as the cause (a desync report's ranks, a heartbeat's pid or
device), the rank a RAS snapshot describes in its communicator's numbering. Those are numbered in
whatever the line speaks in: a communicator rank, a device on a server, an address, a pid. Once the
job is built (its hosts, address map, groups and devices known), this pass turns each into global
ranks and stores them on the event (`Event.peer`, `Event.peer_host`, `Event.about`), so that the
diagnosis reads global ranks only. The captured fields are never changed.

What each family's numbers mean is said here and nowhere else:

- HCCL names peers by their rank in the communicator of the operation (`remoteUserrank`), which
  the operation's tag names; other families name global ranks, unless the identity stage found
  that a message speaks in a sub-group (`Event.names_group_ranks`).
- A device index is an NPU's own id under HCCL (ASCEND_RT_VISIBLE_DEVICES renumbers nothing the
  rank's logs do not say); an NVIDIA device is the local rank under the launchers' default placement.
- RAS speaks in communicator ranks, per snapshot: they become global ranks through the process RAS
  names (the pid the rank's own log shows), the communicator's members (NCCL's init lines give
  each rank's place in commId …), or, for the world communicator (as many ranks as the job), as
  they are.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from triage.model import Category, Event, Kind
from triage.ranks import parse_ranks

if TYPE_CHECKING:
    from triage.job.job import Job


@dataclass
class _Index:
    """What the questions about one job's peers read, built once."""

    ranks_of_pid: dict[int, list[int]]  # pid -> the ranks whose lines carry it, in rank order
    snapshot_sizes: dict[str, dict[str, int]]  # RAS snapshot -> communicator size by hash and table group


def resolve_peers(job: Job) -> None:
    """Set every event's `peer`, `peer_host` and `about` from what its fields say."""
    index = _build_index(job)
    for event in job.events:
        fields = event.fields
        if fields.keys().isdisjoint(_SPEAKING_OF_OTHERS):
            event.peer = event.peer_host = None  # most lines: about their writer alone
            continue
        if event.family == "ras" and "snapshot" in fields:
            rank = _ras_rank(job, index, event)
            event.about = (rank,) if rank is not None else ()
            continue
        if "src_server" in fields and "src_device" in fields:
            src = ranks_at(job, fields["src_server"], fields["src_device"])
            event.peer = src[0] if len(src) == 1 else None  # the end of the probed link that could not connect
        else:
            event.peer = _peer(job, event)
        event.peer_host = _peer_host(job, event)
        if "culprit_ranks" in fields or "culprit_pid" in fields or "culprit_ip" in fields:
            event.about = tuple(parse_ranks(fields.get("culprit_ranks", "")) + _named_process(job, index, event))
    # An address at the far end of a lost connection is a rank's where one rank only is known there
    # (read once every RAS line has been placed: RAS says which process of which rank runs on a node).
    at_address = _ranks_by_address(job)
    for event in job.of_kinds(Kind.PEER_ERROR, Kind.TIMEOUT):
        if ("peer_ip" in event.fields or "peer_host" in event.fields) and event.peer is None and (
                event.family != "ras"):  # no address: no rank at it
            event.peer = _rank_at_address(job, at_address, event)


# The fields that name another process than the line's writer, or say where it is: a line with none
# of them (most lines) has no peer and is about no one else.
_SPEAKING_OF_OTHERS = frozenset({
    "snapshot", "src_server", "src_device", "peer_device", "peer_ip", "peer_rank", "peer_host",
    "culprit_ranks", "culprit_pid", "culprit_ip"})


def ranks_at(job: Job, ip: str, device: str) -> list[int]:
    """The ranks that drove device `device` on the server at address `ip` (HCCL's `server/device`)."""
    host = job.ip_hosts.get(ip, ip)
    return [r for r, s in job.ranks.items() if s.host == host and str(s.device) == device]


def _build_index(job: Job) -> _Index:
    pids: dict[int, list[int]] = defaultdict(list)
    for rank, state in job.ranks.items():
        for pid in dict.fromkeys(e.identity.pid for e in state.events if e.identity.pid is not None):
            pids[pid].append(rank)
    sizes: dict[str, dict[str, int]] = defaultdict(dict)
    for e in job.of_rules("ras-comm-group"):
        f = e.fields
        if e.family == "ras" and f.get("nranks", "").isdigit():
            for key in (f.get("comm_id"), "group:" + f.get("ras_group", "?")):
                if key:
                    sizes[f.get("snapshot", "")][key] = int(f["nranks"])
    return _Index(dict(pids), dict(sizes))


def _peer(job: Job, event: Event) -> int | None:
    """The global rank a line says its writer waited on or lost.

    The address of a link that timed out is unambiguous: `remoteIpAddr[server/device]`, or a
    device of the writer's own server (a P2P link's `remote physic id`). Otherwise HCCL names the
    peer in the communicator's own ranks (`remoteUserrank[1]` of `group_name_1`); the operation's
    tag ends with the communicator's identifier (`AllReduce_group_name_1`), and each member's init
    line gave its rank there (`…ConfigInner:ranks[4], rank[1] … identifier[…]`).
    """
    fields = event.fields
    if (device := fields.get("peer_device", "")).isdigit() and event.kind is Kind.TIMEOUT:
        if ip := fields.get("peer_ip"):
            at = ranks_at(job, ip, device)
        else:
            host = job.ranks[event.rank].host if event.rank in job.ranks else None
            at = [r for r, s in job.ranks.items() if host and s.host == host and s.device == int(device)]
        if len(at) == 1:
            return at[0]
    peer = fields.get("peer_rank", "")
    if not peer.isdigit():
        return None
    if event.family != "hccl":
        return None if event.names_group_ranks else int(peer)
    comms = {key: group for key, group in job.groups.items() if key.startswith("comm:")}
    tag = fields.get("tag", "")
    for key, group in comms.items():
        if tag and tag.endswith("_" + key[len("comm:"):]):
            found = [r for r, m in group.members.items() if m.group_rank == int(peer)]
            return found[0] if len(found) == 1 else None
    # Without a tag that says which communicator (a graph-mode `HcomAllReduce_<hash>_0`, a line
    # with no tag), the rank is the world's only where the world is the job's one communicator,
    # and only if the world has it.
    world = job.world_size
    if len(comms) > 1 or (world is not None and int(peer) >= world):
        return None
    return int(peer)


def _peer_host(job: Job, event: Event) -> str | None:
    """The host at the far end of a failed connection: its address, its name, or its rank's host."""
    fields = event.fields
    if ip := fields.get("peer_ip"):
        return job.ip_hosts.get(ip) or _host_by_ip_suffix(job, ip)
    if host := fields.get("peer_host"):
        return host.split(".")[0]
    # A rank named as the far end is network evidence only when the line is about the network
    # (a monitored_barrier "errors while waiting for rank 0" names its coordinator, not a link).
    if event.peer is not None and event.category is Category.NETWORK_FAULT:
        state = job.ranks.get(event.peer)
        return state.host if state else None
    return None


def _ranks_by_address(job: Job) -> dict[str, set[int]]:
    """Each address (and host name) the job knows, and the ranks known to run there: the hosts of the
    ranks (named by their address, or mapped to one by NCCL's `Bootstrap : Using` lines), and the
    processes RAS places on a node."""
    found: dict[str, set[int]] = defaultdict(set)
    names = {host: ip for ip, host in job.ip_hosts.items()}
    for rank, state in job.ranks.items():
        if state.host:
            found[state.host].add(rank)
            if state.host in names:
                found[names[state.host]].add(rank)
    for event in job.of_families("ras"):
        ip = event.fields.get("culprit_ip") or event.fields.get("ip")
        if ip and len(event.about) == 1:
            found[ip].add(event.about[0])
    return found


def _rank_at_address(job: Job, at_address: dict[str, set[int]], event: Event) -> int | None:
    """The one rank at the address a lost connection names (`Connection closed by remote peer
    10.1.2.7<46754>`, gloo's `Connection closed by peer [10.1.2.7]:748`), never the writer's own host
    (the port is a socket's, not a rank's) nor a loopback address every local rank shares."""
    fields = event.fields
    address = fields.get("peer_ip") or _short(fields.get("peer_host") or "")
    if not address or address.startswith("127.") or address in ("::1", "localhost"):
        return None
    ranks = at_address.get(address) or at_address.get(job.ip_hosts.get(address, ""), set())
    writer = job.ranks.get(event.rank) if event.rank is not None else None
    if len(ranks) != 1 or (writer is not None and writer.host and writer.host in (
            address, job.ip_hosts.get(address))):
        return None
    (rank,) = ranks
    return rank if rank != event.rank else None


def _short(host: str) -> str:
    """A host name without its domain; an address as it is."""
    return host if host.replace(".", "").isdigit() or ":" in host else host.split(".")[0]


def _host_by_ip_suffix(job: Job, ip: str) -> str | None:
    """Host folders named after their address (`host_3_10.0.0.4`) or hosts named like the IP."""
    for host in job.hosts():
        if ip == host or host.endswith(ip):
            return host
    return None


def _named_process(job: Job, index: _Index, event: Event) -> list[int]:
    """The ranks of the process a tool names by pid, else by address and device."""
    pid, ip = event.fields.get("culprit_pid"), event.fields.get("culprit_ip")
    found: list[int] = []
    if pid and pid.isdigit():
        found = list(index.ranks_of_pid.get(int(pid), []))
    if not found and ip:
        host = job.ip_hosts.get(ip, ip)
        device = event.fields.get("culprit_device")
        on_host = [(rank, state) for rank, state in job.ranks.items() if state.host == host]
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


def _ras_rank(job: Job, index: _Index, event: Event) -> int | None:
    """The job's rank of the communicator rank a RAS line speaks of; None if nothing says."""
    fields = event.fields
    pid = fields.get("culprit_pid") or fields.get("pid", "")
    if pid.isdigit():
        owners = set(index.ranks_of_pid.get(int(pid), ()))
        ip = fields.get("culprit_ip") or fields.get("ip", "")
        if ip and len(owners) > 1:
            owners = {r for r in owners if job.ranks[r].host == job.ip_hosts.get(ip, ip)}
        if len(owners) == 1:
            return owners.pop()
    comm, pg_rank = fields.get("comm_id", ""), fields.get("pg_rank", "")
    if not pg_rank.isdigit():
        return None
    group = job.groups.get(f"comm:{comm}")
    if group is not None:
        found = [r for r, m in group.members.items() if m.group_rank == int(pg_rank)]
        if len(found) == 1:
            return found[0]
    sizes = index.snapshot_sizes.get(fields["snapshot"], {})
    size = sizes.get(comm) or sizes.get("group:" + fields.get("ras_group", "?"))
    if size is not None and size == job.world_size:
        return int(pg_rank)  # the world communicator: its ranks are the job's
    return None
