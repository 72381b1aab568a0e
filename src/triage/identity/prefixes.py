"""What the lines say of their writer: launcher prefixes and envelopes (`[rank3]:`, `host:pid`), and
ranks named inside the messages."""

from __future__ import annotations

from collections import Counter, defaultdict
from operator import itemgetter
from typing import TypeVar

from triage.identity.process_groups import group_ref
from triage.identity.state import LAUNCHERS, State, set_once, still_unknown
from triage.lazy_regex import lazy_compile
from triage.model import Identity, Kind

# Families whose `rank` field names the writer (or the worker a launcher line is about).
_RANK_STATING = ("pytorch", "torchrun", "hccl", "repro")
# triage.health's line (`TAG rank N:` in src/triage/health/result.py) names its writer's global rank.
_HEALTH_ENVELOPE = lazy_compile(r"\btriage-health rank (?P<rank>\d{1,9}): ")
_HEALTH_HOW = "triage.health's line names its writer"
_COMMUNICATOR_INITS = frozenset({Kind.INIT_START, Kind.INIT_DONE})
T = TypeVar("T")


def from_first_lines(state: State) -> None:
    """What the first lines of a source say (`[rank3]:` prefixes, NCCL `host:pid` prefixes)."""
    for source in state.sources:
        key = state.writers.group_of[source.name]
        ident = state.writers.identities[key]
        if source.head_ranks and source.head_writers <= 1 and key not in state.interleaved:
            rank, count = Counter(source.head_ranks).most_common(1)[0]
            if count >= 0.8 * sum(source.head_ranks.values()):
                set_once(state, key, ident, "rank", rank, "[rankN]: prefixes of the first lines")
        if len(source.head_hosts) == 1:  # several hosts: a file that interleaves them
            (host,) = source.head_hosts
            set_once(state, key, ident, "host", host, "NCCL line prefixes of the first lines")


def from_line_prefixes(state: State) -> None:
    """A file where one rank writes nearly every line is that rank's; else each line keeps its own."""
    ranks_said: dict[str, list[int]] = defaultdict(list)  # counted per group below, at once
    hosts_said: dict[str, list[str]] = defaultdict(list)
    locals_seen: dict[str, set[int]] = defaultdict(set)
    group_of = state.writers.group_of
    for event in state.events:
        ident = event.identity
        key = group_of[event.evidence.source]
        if ident.rank is not None:
            ranks_said[key].append(ident.rank)
        if ident.host:
            hosts_said[key].append(ident.host)
        if ident.local_rank is not None and "local_rank" in ident.learnt_from:
            locals_seen[key].add(ident.local_rank)
    # Each group's most said rank and host (`Counter.most_common(1)`), with how many lines said one.
    line_ranks = {key: (_most_said(ranks), len(ranks)) for key, ranks in ranks_said.items()}
    line_hosts = {key: (_most_said(hosts), len(set(hosts))) for key, hosts in hosts_said.items()}
    # A launcher console or a Slurm output file interleaves many workers (and hosts): each of its
    # lines keeps its own writer, and nothing one line says is the whole file's.
    state.interleaved |= {state.writers.group_of[s.name] for s in state.sources if s.head_writers > 1}
    state.interleaved |= {key for key, seen in locals_seen.items() if len(seen) > 1}
    state.interleaved |= {key for key, ((_, top), said) in line_ranks.items() if top < 0.8 * said}
    for key, ((rank, _), _) in line_ranks.items():
        if key not in state.interleaved:
            set_once(state, key, _writer(state, key), "rank", rank, "line prefixes")
    for key, ((host, _), hosts) in line_hosts.items():
        if key not in state.interleaved or hosts == 1:
            set_once(state, key, _writer(state, key), "host", host, "line prefixes")
    # Each line: its own prefix first, then its file's writer; a launcher's record of a worker
    # (`rank : 3 (local_rank: 3)`) is about that worker, not about whoever wrote the file.
    writer_of = {name: state.writers.identities.get(key) for name, key in group_of.items()}
    host_of: dict[str, Identity] = {}  # source -> its writer's host alone, for launcher records
    for event in state.events:
        group = writer_of[event.evidence.source]
        if group is not None:
            if event.family in LAUNCHERS and "rank" in event.fields:
                if (host_only := host_of.get(event.evidence.source)) is None:
                    host_only = host_of[event.evidence.source] = Identity(host=group.host, learnt_from={
                        "host": group.learnt_from.get("host", "")} if group.host else {})
                group = host_only
            event.identity = event.identity.merged_over(group)


def _most_said(values: list[T]) -> tuple[T, int]:
    """The value said most often, first said first among equals, and how often (most_common(1))."""
    return max(Counter(values).items(), key=itemgetter(1))


def _writer(state: State, key: str) -> Identity:
    """The writer of a source group, made empty when first needed."""
    if (ident := state.writers.identities.get(key)) is None:
        ident = state.writers.identities[key] = Identity()
    return ident


def from_health_lines(state: State) -> None:
    """`triage-health rank 0: check FAILED: …` is rank 0's own line, and its file's where the file
    has one writer.

    The line goes through Python logging, so it carries no `[rankN]:` prefix (only torch's C++
    warnings do): in a rank's own file with no other rank-prefixed line (torchrun's `--log-dir`
    files), it is the one line that says whose file it is.
    """
    said: dict[str, set[int]] = defaultdict(set)
    for event in state.of_families("repro"):
        text = event.evidence.text
        if "triage-health rank" not in text:
            continue
        if (m := _HEALTH_ENVELOPE.search(text)) is None:
            continue
        rank = int(m["rank"])
        said[state.writers.group_of[event.evidence.source]].add(rank)
        if event.identity.rank is None:
            event.identity.rank = rank
            event.identity.learnt_from["rank"] = _HEALTH_HOW
    for key, ranks in said.items():
        if key not in state.interleaved and len(ranks) == 1:
            ident = state.writers.identities.setdefault(key, Identity())
            set_once(state, key, ident, "rank", next(iter(ranks)), _HEALTH_HOW)
    list(still_unknown(state))  # the file's other lines take their writer's rank


def from_stated_ranks(state: State) -> None:
    """A rank named inside the message is global when it is said in the world group."""
    tasks_are_ranks = not state.of_families("torchrun")
    families = _RANK_STATING + (("slurm",) if tasks_are_ranks else ())
    for event in state.of_families(*families):
        fields = event.fields
        if event.identity.rank is not None or "rank" not in fields:
            continue
        if event.kind in _COMMUNICATOR_INITS:
            continue  # communicator ranks: see from_communicators
        ref = group_ref(event, state.world_size)
        if ref is not None and not ref.default:
            continue  # a rank inside a sub-group is not a global rank
        if fields["rank"].isdigit():
            event.identity.rank = int(fields["rank"])
            event.identity.learnt_from["rank"] = "rank named in the message"


def settle_stated_ranks(state: State) -> None:
    """A rank a line states, where its file's writer turned out to be another rank, is a group rank.

    `[Rank 0] Watchdog caught …` in the file of global rank 10 (torch 2.1 prints no `[rankN]:`)
    is rank 0 of a sub-group that rank 10 belongs to: the line is rank 10's.
    """
    for event in state.events:
        if event.identity.learnt_from.get("rank") != "rank named in the message":
            continue
        if event.family in LAUNCHERS:
            continue  # a launcher's line about a worker is filed under that worker
        group = state.group(event)
        if group is None or group.rank is None or group.rank == event.identity.rank:
            continue
        event.fields["pg_rank"] = str(event.identity.rank)
        event.fields.setdefault("pg_key", "pg:?")
        event.names_group_ranks = True
        event.identity.rank = group.rank
        event.identity.learnt_from["rank"] = group.learnt_from.get("rank", "its file's writer")
