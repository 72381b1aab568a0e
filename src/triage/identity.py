"""The identity stage: who wrote each source and each line, resolved in one place.

Every other stage only observes: ingest gives a source's display name, the scanner what each
line's launcher prefix and writer envelope say (`[rank3]:`, `[default3]:`, `host:pid:tid`) and what
the first lines of a source say. Here those observations are weighed by an ordered list of
resolvers, each filling only what is still unknown and recording how it learnt it:

  path → launcher consoles → first lines → line prefixes → process-group prefixes → stated ranks
  → communicator lines → HCCL key info → host slots → pids → torchrun log dirs → (stated ranks settled)

What one line of a file establishes about its writer (the world communicator's `rank r nranks n`,
a `host:pid` prefix seen with a rank) holds for the whole file and for that pid everywhere. Path
components that every source shares (the folder the user put the job in) never give a rank;
a host folder there still names the one host they all came from.
Two signals that disagree about a source are reported on that source, never silently resolved.
Adding a launcher or a family is one resolver in `RESOLVERS`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import regex

from triage.ingest import identity as layout
from triage.ingest.identity import group_key, identity_from_path
from triage.model import Event, Identity, Kind, SourceInfo

# `[PG ID 2 PG GUID 3(tp) Rank 1]` (2.5+), `[PG 3 (tp) Rank 1]` / `[PG 3 Rank 1]` (2.2-2.4).
_PG_PREFIX = regex.compile(
    r"\[(?:PG ID (?P<pg_id>\d+) PG GUID (?P<guid>[^\s(\]]+)(?:\((?P<desc>[^)\]]*)\))?"
    r"|PG (?P<name>[^\s(\]]+)(?: \((?P<desc2>[^)\]]*)\))?) Rank (?P<pg_rank>\d+)\]"
)
# The `pg` field some rules capture: `3(tp)`, `0 (default_pg)`, `0`.
_PG_FIELD = regex.compile(r"^(?P<guid>[^\s(]+)\s?(?:\((?P<desc>[^)]*)\))?$")
_TORCHRUN_LAYOUT = regex.compile(r"attempt_\d+[/!]\d+[/!](?:stdout|stderr|error)\.(?:log|json)$")
_DEFAULT_DESCS = {"default_pg", "undefined", ""}
# Families whose `rank` field names the writer (or the worker a launcher line is about).
_RANK_STATING = ("pytorch", "torchrun", "hccl", "repro")
_LAUNCHERS = ("torchrun", "slurm")
_PID_OWN = "pid seen in the rank's own lines"
_PID_RECORD = "pid in the launcher's record of the rank"


@dataclass
class GroupRef:
    """Which process group a line speaks of, and the writer's rank inside it."""

    key: str  # `pg:<guid>` for a PyTorch process group, `comm:<commId>` for an NCCL communicator
    default: bool  # the world group (PyTorch default_pg, or a communicator of world size)
    desc: str | None = None
    group_rank: int | None = None
    size: int | None = None


@dataclass
class Writers:
    """The outcome of the stage: one identity per source group, and how sources group."""

    group_of: dict[str, str]  # source name -> group key (files one process wrote together)
    identities: dict[str, Identity]  # group key -> its writer
    conflicts: dict[str, list[str]] = field(default_factory=dict)  # group key -> what disagreed

    def of_source(self, name: str) -> Identity:
        return self.identities.get(self.group_of.get(name, name), Identity())


@dataclass
class _State:
    sources: list[SourceInfo]
    events: list[Event]
    world_size: int | None
    writers: Writers
    interleaved: set[str] = field(default_factory=set)  # groups whose lines come from many writers

    def group(self, event: Event) -> Identity | None:
        key = self.writers.group_of.get(event.evidence.source, event.evidence.source)
        return self.writers.identities.get(key)

    def conflict(self, key: str, text: str) -> None:
        notes = self.writers.conflicts.setdefault(key, [])
        if text not in notes:
            notes.append(text)


def resolve(events: list[Event], sources: list[SourceInfo], world_size: int | None) -> Writers:
    """Resolve every source's writer and every event's identity (events are updated in place)."""
    group_of = {s.name: group_key(s.name) for s in sources}
    for event in events:
        if event.evidence.source not in group_of:
            group_of[event.evidence.source] = group_key(event.evidence.source)
    state = _State(sources, events, world_size, Writers(group_of, {}))
    for resolver in RESOLVERS:
        resolver(state)
    for source in sources:
        source.identity = state.writers.of_source(source.name)
        source.conflicts = state.writers.conflicts.get(group_of[source.name], [])
        note = layout.ONE_NODE_NOTE.format(rank=source.identity.rank)
        if source.identity.learnt_from.get("rank") == layout.ONE_NODE and note not in source.notes:
            source.notes.append(note)
    return state.writers


# --- resolvers, in order ---------------------------------------------------------------------

def from_path(state: _State) -> None:
    """The source's path, less the folders that every source shares."""
    names = [s.name for s in state.sources]
    shared = layout.shared_folders(names)
    for source in state.sources:
        parts = source.name.replace("\\", "/").replace("!", "/").split("/")
        keep = shared
        if _TORCHRUN_LAYOUT.search(source.name):
            keep = min(keep, len(parts) - 3)  # `attempt_0/<local_rank>/stderr.log` is one writer's
        own = "/".join(parts[max(0, keep):])
        key = state.writers.group_of[source.name]
        found = identity_from_path(own)
        if found.host is None and keep > 0:
            # A host folder above every source still says which one host they all came from;
            # only rank words there would mislead (`hang-rank2/` is not rank 2's folder).
            full = identity_from_path(source.name)
            if full.host is not None:
                found.host = full.host
                found.learnt_from["host"] = full.learnt_from["host"] + " (shared by every source)"
        if found.host is None and source.identity.host is not None:
            # Stated with the source itself (`triage extract --host NAME`), where the path says nothing.
            found.host = source.identity.host
            found.learnt_from["host"] = source.identity.learnt_from.get("host", "stated")
        current = state.writers.identities.get(key)
        if current is not None:
            _note_disagreement(state, key, current, found, "path")
            found = current.merged_over(found)
        state.writers.identities[key] = found


def from_launcher_consoles(state: _State) -> None:
    """A launcher console whose own lines name several workers (local ranks, pids it signals) mixes
    their output: a `[rankN]:` prefix is that line's writer only, an unprefixed line's is unknown."""
    workers: dict[str, set[str]] = defaultdict(set)
    signalled: list[tuple[str, str]] = []
    for event in state.events:
        key, fields = state.writers.group_of[event.evidence.source], event.fields
        if event.family not in _LAUNCHERS:
            continue
        if fields.get("local_rank", "").isdigit():
            workers[key] |= {str(int(fields["local_rank"])), "pid " + fields.get("pid", "?")}
        elif event.kind is Kind.CONSEQUENCE and fields.get("pid", "").isdigit():
            signalled.append((key, "pid " + fields["pid"]))  # `Sending process 4242 closing signal`
    for key, pid in signalled:
        workers[key].add(pid if pid in workers[key] else pid + " (signalled)")
    state.interleaved |= {key for key, named in workers.items()
                          if sum(not n.startswith("pid ") or n.endswith("(signalled)") for n in named) > 1}


def from_first_lines(state: _State) -> None:
    """What the first lines of a source say (`[rank3]:` prefixes, NCCL `host:pid` prefixes)."""
    for source in state.sources:
        key = state.writers.group_of[source.name]
        ident = state.writers.identities[key]
        if source.head_ranks and source.head_writers <= 1 and key not in state.interleaved:
            rank, count = Counter(source.head_ranks).most_common(1)[0]
            if count >= 0.8 * sum(source.head_ranks.values()):
                _set(state, key, ident, "rank", rank, "[rankN]: prefixes of the first lines")
        if len(source.head_hosts) == 1:  # several hosts: a file that interleaves them
            (host,) = source.head_hosts
            _set(state, key, ident, "host", host, "NCCL line prefixes of the first lines")


def from_line_prefixes(state: _State) -> None:
    """A file where one rank writes nearly every line is that rank's; else each line keeps its own."""
    line_ranks: dict[str, Counter[int]] = defaultdict(Counter)
    line_hosts: dict[str, Counter[str]] = defaultdict(Counter)
    locals_seen: dict[str, set[int]] = defaultdict(set)
    for event in state.events:
        key = state.writers.group_of[event.evidence.source]
        if event.identity.rank is not None:
            line_ranks[key][event.identity.rank] += 1
        if event.identity.host:
            line_hosts[key][event.identity.host] += 1
        if "local_rank" in event.identity.learnt_from and event.identity.local_rank is not None:
            locals_seen[key].add(event.identity.local_rank)
    # A launcher console or a Slurm output file interleaves many workers (and hosts): each of its
    # lines keeps its own writer, and nothing one line says is the whole file's.
    state.interleaved |= {state.writers.group_of[s.name] for s in state.sources if s.head_writers > 1}
    state.interleaved |= {key for key, seen in locals_seen.items() if len(seen) > 1}
    state.interleaved |= {key for key, counts in line_ranks.items()
                          if counts.most_common(1)[0][1] < 0.8 * sum(counts.values())}
    for key, counts in line_ranks.items():
        if key not in state.interleaved:
            ident = state.writers.identities.setdefault(key, Identity())
            _set(state, key, ident, "rank", counts.most_common(1)[0][0], "line prefixes")
    for key, host_counts in line_hosts.items():
        if key not in state.interleaved or len(host_counts) == 1:
            ident = state.writers.identities.setdefault(key, Identity())
            _set(state, key, ident, "host", host_counts.most_common(1)[0][0], "line prefixes")
    # Each line: its own prefix first, then its file's writer; a launcher's record of a worker
    # (`rank : 3 (local_rank: 3)`) is about that worker, not about whoever wrote the file.
    for event in state.events:
        group = state.group(event)
        if group is not None:
            if event.family in _LAUNCHERS and "rank" in event.fields:
                group = Identity(host=group.host, learnt_from={"host": group.learnt_from.get(
                    "host", "")} if group.host else {})
            event.identity = event.identity.merged_over(group)


def from_group_prefixes(state: _State) -> None:
    """`[PG ID 2 PG GUID 3(tp) Rank 1]`: the group and the writer's rank inside it, on the event."""
    for event in state.events:
        ref = group_ref(event, state.world_size)
        stated = event.fields.get("rank", "")
        if ref is None and stated.isdigit() and event.identity.rank is not None and (
                "rank" in event.identity.learnt_from and int(stated) != event.identity.rank
                and event.family in ("pytorch", "store", "gloo")):
            # `[rank5]: Rank 1 successfully reached monitoredBarrier … from rank 0`: the message
            # speaks in a sub-group (group rank 1), so the ranks it names are not global ones.
            event.fields["pg_key"] = "pg:?"
            event.fields["pg_rank"] = stated
            event.names_group_ranks = True
            continue
        if ref is None:
            continue
        event.fields.setdefault("pg_key", ref.key)
        if ref.desc:
            event.fields.setdefault("pg_desc", ref.desc)
        if ref.group_rank is not None:
            event.fields.setdefault("pg_rank", str(ref.group_rank))


def from_stated_ranks(state: _State) -> None:
    """A rank named inside the message is global when it is said in the world group."""
    tasks_are_ranks = not any(e.family == "torchrun" for e in state.events)
    families = _RANK_STATING + (("slurm",) if tasks_are_ranks else ())
    for event in state.events:
        fields = event.fields
        if event.identity.rank is not None or "rank" not in fields or event.family not in families:
            continue
        if event.kind in (Kind.INIT_START, Kind.INIT_DONE):
            continue  # communicator ranks: see from_communicators
        ref = group_ref(event, state.world_size)
        if ref is not None and not ref.default:
            continue  # a rank inside a sub-group is not a global rank
        if fields["rank"].isdigit():
            event.identity.rank = int(fields["rank"])
            event.identity.learnt_from["rank"] = "rank named in the message"


def from_communicators(state: _State) -> None:
    """In the world communicator (nranks == world size) the NCCL/HCCL rank is the global rank."""
    size = state.world_size
    if not size:
        return
    for event in state.events:
        fields = event.fields
        if event.kind not in (Kind.INIT_START, Kind.INIT_DONE) or fields.get("nranks") != str(size):
            continue
        if not fields.get("rank", "").isdigit():
            continue
        rank = int(fields["rank"])
        key = state.writers.group_of[event.evidence.source]
        if event.identity.rank is None:
            event.identity.rank = rank
            event.identity.learnt_from["rank"] = "rank in the world communicator's init line"
        elif event.identity.rank != rank:
            state.conflict(key, f"the world communicator says rank {rank}, the line's prefix "
                                f"rank {event.identity.rank}")
        if key not in state.interleaved:  # else the line's writer only: its pid carries it on
            ident = state.writers.identities.setdefault(key, Identity())
            _set(state, key, ident, "rank", rank, "rank in the world communicator's init line")


def from_key_info(state: _State) -> None:
    """HCCL's `[LocalRank Key Info]` names its process's device and server, for every file of it.

    One process writes several plogs (debug and run, rotated) and device logs (`device-<id>/
    device-<pid>_…`), all with its pid in their names; what one of them says of the process holds
    for all. Its userRank is the process's rank only when every communicator it joined gave the
    same one (a sub-communicator's userRank is a rank inside that group).
    """
    said: dict[tuple[str | None, int], dict[str, set[int | str]]] = defaultdict(lambda: defaultdict(set))
    for event in state.events:
        fields = event.fields
        if event.family != "hccl" or event.kind is not Kind.INFO or "device" not in fields:
            continue
        group = state.group(event)
        pid = group.pid if group is not None and group.pid is not None else event.identity.pid
        if pid is None or not fields["device"].isdigit():
            continue
        facts = said[(group.host if group is not None else None, pid)]
        facts["device"].add(int(fields["device"]))
        if host := fields.get("ip"):  # hostIp: the server the process runs on
            facts["host"].add(host)
        if fields.get("rank", "").isdigit():
            facts["rank"].add(int(fields["rank"]))
    how = "HCCL [LocalRank Key Info] of its pid"
    for key, ident in state.writers.identities.items():
        if ident.pid is None:
            continue
        known = said.get((ident.host, ident.pid)) or said.get((None, ident.pid))
        if not known:
            continue
        for name in ("device", "host", "rank"):
            if len(known[name]) == 1 and (name != "host" or ident.host is None):
                _set(state, key, ident, name, next(iter(known[name])), how)
    # Other processes' logs about a device (hccp_service's `device-<id>/` logs: its own pid) are
    # the rank's that drove that device on that server.
    slots: dict[tuple[str, int], set[int]] = defaultdict(set)
    for ident in state.writers.identities.values():
        if ident.host and ident.device is not None and ident.rank is not None:
            slots[(ident.host, ident.device)].add(ident.rank)
    for event in state.events:  # the rank table (RANK_TABLE_FILE): server id, device id, rank
        fields = event.fields
        if fields.get("table_rank", "").isdigit() and fields.get("device", "").isdigit() and fields.get("ip"):
            slots[(fields["ip"], int(fields["device"]))].add(int(fields["table_rank"]))
    for key, ident in state.writers.identities.items():
        if ident.rank is None and ident.host and ident.device is not None:
            ranks = slots.get((ident.host, ident.device), set())
            if len(ranks) == 1:
                _set(state, key, ident, "rank", next(iter(ranks)),
                     "the rank that drove its device on its server (key info or rank table)")


def from_host_slots(state: _State) -> None:
    """(host, local rank) → global rank, from the pairs known elsewhere (launcher records too).

    Cloned images report one hostname (`localhost`, `vm`) on every node: when one host name holds
    one local rank as two global ranks, seen in two nodes' files, the name is shared, and the
    launcher's layout (a folder per node, a console per node) tells the nodes apart. Slots of such
    a host are kept per node, so that lines of different nodes never merge.
    """
    scope_of = _node_scopes(state)
    seen: list[tuple[str, int, int, str]] = []  # (host, local rank, rank, node scope)
    for event in state.events:
        ident = event.identity
        scope = scope_of.get(event.evidence.source, event.evidence.source)
        if ident.rank is not None and ident.host and ident.local_rank is not None:
            seen.append((ident.host, ident.local_rank, ident.rank, scope))
        if _launcher_record(event):
            local, rank = int(event.fields["local_rank"]), int(event.fields["rank"])
            seen.append((event.fields["host"].split(".")[0], local, rank, scope))
            # The agent's record speaks of its own machine, whatever the folder that holds its
            # console is called (`node01/` for a machine whose hostname is `vm`).
            group = state.group(event)
            if group is not None and group.host:
                seen.append((group.host, local, rank, scope))
    for key, ident in state.writers.identities.items():
        if ident.rank is not None and ident.host and ident.local_rank is not None:
            seen.append((ident.host, ident.local_rank, ident.rank, scope_of.get(key, key)))
    shared = _shared_hostnames(seen)
    slots: dict[tuple[str, str | None, int], int] = {}
    for host, local, rank, scope in seen:
        slots.setdefault((host, scope if host in shared else None, local), rank)
    # Hosts with some known slots: rank = base + local rank (static, homogeneous launches).
    bases: dict[tuple[str, str | None], Counter[int]] = defaultdict(Counter)
    for (name, node_scope, slot_local), slot_rank in slots.items():
        bases[(name, node_scope)][slot_rank - slot_local] += 1

    # With one host known in the whole job (one host's console, pasted), a line that names no
    # host is from that host.
    known_hosts = {host for host, _, _ in slots} | {
        i.host for i in state.writers.identities.values() if i.host}
    only_host = next(iter(known_hosts)) if len(known_hosts) == 1 else None

    def lookup(host: str | None, local: int | None, source: str,
               key: str | None = None) -> tuple[int, str] | None:
        host = host or only_host
        if host is None or local is None:
            return None
        # A host name that several nodes report: the node is the one whose files hold the line.
        node = (host, scope_of.get(source, source) if host in shared else None)
        if (slot := (host, node[1], local)) in slots:
            return slots[slot], "host and local rank, matched elsewhere"
        if bases.get(node):
            base = bases[node].most_common(1)[0][0]
            rank = base + local
            if rank >= 0 and (not state.world_size or rank < state.world_size):
                return rank, "host's rank base plus local rank"
            # Slots that no static launch gives (local rank 1000 holding rank 3): the arithmetic
            # would give a negative or out-of-world rank, so none is given and the clash is said.
            if key is not None:
                known = ", ".join(f"local rank {lr} is rank {r}" for (h, sc, lr), r in sorted(
                    slots.items(), key=str) if (h, sc) == node and r - lr == base)
                state.conflict(key, f"rank: on {host} {known[:200]}, so local rank {local} would be rank "
                               f"{rank}, which no job has; its rank is left unknown")
        return None

    for key, ident in state.writers.identities.items():
        if ident.rank is None and (found := lookup(ident.host, ident.local_rank, key, key)):
            ident.rank, ident.learnt_from["rank"] = found
    for event in _still_unknown(state):
        ident = event.identity
        # Launcher lines about a worker: `failed (exitcode: -9) local_rank: 3 (pid: 4242)`.
        worker = ident.local_rank
        if worker is None and event.fields.get("local_rank", "").isdigit():
            worker = int(event.fields["local_rank"])
        if found := lookup(ident.host, worker, event.evidence.source):
            ident.rank, ident.learnt_from["rank"] = found


def from_pids(state: _State) -> None:
    """A pid seen with a rank is that rank everywhere: NCCL_DEBUG_FILE files, plogs, agent lines."""
    pid_ranks: dict[int, Counter[int]] = defaultdict(Counter)
    recorded: set[int] = set()  # pids a launcher's record names with their rank
    own: set[int] = set()  # pids seen on the rank's own lines
    for event in state.events:
        if event.identity.pid is not None and event.identity.rank is not None:
            pid_ranks[event.identity.pid][event.identity.rank] += 1
            own.add(event.identity.pid)
        pid, rank = event.fields.get("pid", ""), event.fields.get("rank", "")
        if event.family == "hccl" and pid.isdigit() and rank.isdigit() and "pg_rank" not in event.fields:
            # torch_npu's footer names a process and its rank: `(PID:3215080, Device:3, RankID:3)`
            pid_ranks[int(pid)][int(rank)] += 1
        elif _launcher_record(event) and pid.isdigit():
            # torchrun's failure record: `rank : 3 (local_rank: 3)` / `exitcode : -15 (pid: 4242)`
            pid_ranks[int(pid)][int(rank)] += 1
            recorded.add(int(pid))
    for ident in state.writers.identities.values():
        if ident.pid is not None and ident.rank is not None:
            pid_ranks[ident.pid][ident.rank] += 1
    known = {pid: counts.most_common(1)[0][0] for pid, counts in pid_ranks.items()
             if len(counts) == 1}  # a pid reused by two ranks (two hosts) says nothing
    def how(pid: int) -> str:
        return _PID_OWN if pid in own or pid not in recorded else _PID_RECORD

    for key, ident in state.writers.identities.items():
        if ident.rank is None and ident.pid in known:
            _set(state, key, ident, "rank", known[ident.pid], how(ident.pid))
    for event in _still_unknown(state):
        ident = event.identity
        pid = event.fields.get("pid", "")
        for candidate in (ident.pid, int(pid) if pid.isdigit() else None):
            if candidate is not None and candidate in known:
                ident.rank = known[candidate]
                ident.learnt_from["rank"] = how(candidate)
                break


def from_log_dirs(state: _State) -> None:
    """torchrun's `--log-dir` layout names a file's local rank; its node's base gives the rank.

    The files under one `<run_id>_<rand>/` are one node's workers: where some are known by rank,
    the others are that base (rank - local rank) plus their local rank. Where none is and the job
    shows one node (one log dir, one host at most, no rank that differs from its local rank), the
    local rank is the rank, and the identity says it was taken so.
    """
    by_dir: dict[str, list[tuple[str, Identity]]] = defaultdict(list)
    for key, ident in state.writers.identities.items():
        if ident.learnt_from.get("local_rank") == layout.TORCHRUN_LOCAL and (d := layout.log_dir(key)) is not None:
            by_dir[d].append((key, ident))
    hosts = {i.host for i in state.writers.identities.values() if i.host} | {
        e.identity.host for e in state.events if e.identity.host}
    offset = any(e.identity.rank is not None and e.identity.local_rank is not None  # a node not the first
                 and e.identity.rank != e.identity.local_rank for e in state.events)
    offset |= any(_launcher_record(e) and e.fields["rank"] != e.fields["local_rank"] for e in state.events)
    single = len(by_dir) == 1 and len(hosts) <= 1 and not offset
    for members in by_dir.values():
        bases = {i.rank - i.local_rank for _, i in members if i.rank is not None and i.local_rank is not None}
        for key, ident in members:
            if ident.rank is not None or ident.local_rank is None or not (len(bases) == 1 or (single and not bases)):
                continue
            base, how = (next(iter(bases)), layout.NODE_BASE) if bases else (0, layout.ONE_NODE)
            rank = base + ident.local_rank
            if rank >= 0 and not (state.world_size and rank >= state.world_size):
                _set(state, key, ident, "rank", rank, how)
    list(_still_unknown(state))  # the files' lines take their writer's rank


def settle_stated_ranks(state: _State) -> None:
    """A rank a line states, where its file's writer turned out to be another rank, is a group rank.

    `[Rank 0] Watchdog caught …` in the file of global rank 10 (torch 2.1 prints no `[rankN]:`)
    is rank 0 of a sub-group that rank 10 belongs to: the line is rank 10's.
    """
    for event in state.events:
        if event.identity.learnt_from.get("rank") != "rank named in the message":
            continue
        if event.family in _LAUNCHERS:
            continue  # a launcher's line about a worker is filed under that worker
        group = state.group(event)
        if group is None or group.rank is None or group.rank == event.identity.rank:
            continue
        event.fields["pg_rank"] = str(event.identity.rank)
        event.fields.setdefault("pg_key", "pg:?")
        event.names_group_ranks = True
        event.identity.rank = group.rank
        event.identity.learnt_from["rank"] = group.learnt_from.get("rank", "its file's writer")


RESOLVERS: tuple[Callable[[_State], None], ...] = (
    from_path, from_launcher_consoles, from_first_lines, from_line_prefixes, from_group_prefixes, from_stated_ranks,
    from_communicators, from_key_info, from_host_slots, from_pids, from_log_dirs, settle_stated_ranks,
)


# --- helpers -----------------------------------------------------------------------------------

def group_ref(event: Event, world_size: int | None = None) -> GroupRef | None:
    """The process group an event speaks of, from its `[PG … Rank r]` prefix or its fields."""
    fields = event.fields
    if "pg_key" in fields:
        return GroupRef(key=fields["pg_key"], default=fields["pg_key"] in ("pg:0", "pg:default_pg"),
                        desc=fields.get("pg_desc"),
                        group_rank=int(fields["pg_rank"]) if fields.get("pg_rank") else None)
    if fields.get("comm_id") and fields.get("nranks", "").isdigit():
        size = int(fields["nranks"])
        rank = fields.get("rank", "")
        return GroupRef(key=f"comm:{fields['comm_id']}", default=size == world_size,
                        group_rank=int(rank) if rank.isdigit() else None, size=size)
    m = _PG_PREFIX.search(event.evidence.text) if "PG " in event.evidence.text else None
    if m is not None:
        guid = m["guid"] or m["name"]
        desc = m["desc"] if m["desc"] is not None else m["desc2"]
        return _pg_ref(guid, desc, int(m["pg_rank"]))
    if (pg := fields.get("pg")) and (f := _PG_FIELD.match(pg.strip())):
        rank = fields.get("rank", "")
        return _pg_ref(f["guid"], f["desc"], int(rank) if rank.isdigit() else None)
    return None


def _pg_ref(guid: str, desc: str | None, group_rank: int | None) -> GroupRef:
    desc = (desc or "").strip()
    default = desc == "default_pg" or (guid == "0" and desc in _DEFAULT_DESCS)
    return GroupRef(key="pg:0" if default else f"pg:{guid}", default=default,
                    desc=desc if desc not in _DEFAULT_DESCS else ("default_pg" if default else None),
                    group_rank=group_rank)


def _still_unknown(state: _State) -> Iterator[Event]:
    """Events whose rank is still unknown, after taking their file's if a resolver just found it."""
    for event in state.events:
        if event.identity.rank is not None:
            continue
        group = state.group(event)
        if group is not None and group.rank is not None:
            event.identity = event.identity.merged_over(group)
            continue
        yield event


def about_another(event: Event) -> bool:
    """A launcher's or a tool's line about a worker (`exitcode: -9 … rank: 3`), filed under the rank
    it names: not a line that rank wrote."""
    return event.family in (*_LAUNCHERS, "ras") and event.identity.learnt_from.get("rank") in (
        "rank named in the message", "host and local rank, matched elsewhere",
        "host's rank base plus local rank", _PID_OWN, _PID_RECORD)


def _launcher_record(event: Event) -> bool:
    """A launcher's record of one worker: its host, global rank and local rank."""
    fields = event.fields
    return (event.kind is Kind.EXIT and {"host", "rank", "local_rank"} <= fields.keys()
            and fields["rank"].isdigit() and fields["local_rank"].isdigit())


def _node_scopes(state: _State) -> dict[str, str]:
    """Which node's files each source (and source group) is among, as the layout shows it: the
    first folder below the ones every source shares (`x/console.log`, `x/logs/…/attempt_0/1/…`),
    or the file itself when the nodes' consoles lie side by side (`vm-a.log`, `vm-b.log`)."""
    names = sorted(set(state.writers.group_of) | {e.evidence.source for e in state.events})
    shared = layout.shared_folders(names)
    scopes: dict[str, str] = {}
    for name in names:
        parts = name.replace("\\", "/").replace("!", "/").split("/")
        scopes[name] = "/".join(parts[:shared + 1])
    for name, key in state.writers.group_of.items():
        scopes.setdefault(key, scopes.get(name, name))
    return scopes


def _shared_hostnames(seen: list[tuple[str, int, int, str]]) -> set[str]:
    """Host names that stand for several nodes: one local rank of the name is two global ranks, each
    seen in another node's files."""
    ranks_at: dict[tuple[str, int], dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for host, local, rank, scope in seen:
        ranks_at[(host, local)][rank].add(scope)
    shared: set[str] = set()
    for (host, _), by_rank in ranks_at.items():
        if len(by_rank) > 1 and len(set().union(*by_rank.values())) > 1:
            shared.add(host)
    return shared


def _set(state: _State, key: str, ident: Identity, name: str, value: int | str, how: str) -> None:
    current = getattr(ident, name)
    if current is None:
        setattr(ident, name, value)
        ident.learnt_from[name] = how
    elif current != value:
        state.conflict(key, f"{name}: {ident.learnt_from.get(name, '?')} says {current}, "
                            f"{how} say {value}; kept {current}")


def _note_disagreement(state: _State, key: str, current: Identity, found: Identity, how: str) -> None:
    for name in ("rank", "local_rank", "host", "pid", "device"):
        a, b = getattr(current, name), getattr(found, name)
        if a is not None and b is not None and a != b:
            state.conflict(key, f"{name}: {current.learnt_from.get(name, '?')} says {a}, {how} says {b}")
