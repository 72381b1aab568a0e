"""The library entry point: `analyze(paths) -> Report`. The CLI is a thin layer over this.

`extract(paths, output)` is the map step alone (discover, open, scan), written to a file where the
logs are (`triage.extract`); `analyze` reads such files among its inputs and does the rest.
"""

from __future__ import annotations

import datetime
import gc
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from triage import __version__
from triage import extract as extract_file
from triage.decision import Policy, decide, default_policy
from triage.diagnose.verdict import diagnose
from triage.ingest.discover import iter_files, open_file
from triage.ingest.open import Stream, Unreadable, display_name, expand, stdin_stream
from triage.job import build_job
from triage.model import Event, Identity, Report, RuleDoc, SourceInfo
from triage.parse.fr.crosscheck import check_dump_ranks
from triage.parse.scan import Matcher
from triage.parse.source import scan_sources
from triage.rules import Rule, load_rules
from triage.unexplained import summarize

# Below this much input, starting worker processes costs more than it saves. On 2 CPUs a second
# reader shortens the wall time from ~8 MB on, but by under 0.1 s (and for ~10% more CPU time)
# below ~32 MB; with more CPUs each reader's share is smaller, so it pays from no more than that
# (docs/design.md §7, bench/scaling.py).
PARALLEL_MIN_BYTES = 32 << 20
_FIRST_FILES = 4  # read before forking the readers (see _scan_all)
# Past this many readers the one process that builds the job waits on them anyway: on 16 CPUs, 8
# read a 1,024-rank job as fast as 16 for 10% less CPU time (bench/scaling.py).
MAX_JOBS = 8
Scanned = list[tuple[SourceInfo, list[Event]]]

_matcher: Matcher | None = None  # the worker processes' matcher, inherited through fork


class NoInput(Exception):
    """Nothing readable was given: every path was missing, empty or unreadable."""

    def __init__(self, sources: list[SourceInfo]) -> None:
        self.sources = sources
        reasons = "; ".join(f"{s.name}: {s.skipped or 'empty'}" for s in sources[:5])
        super().__init__(f"no readable log among the inputs ({reasons or 'none given'})")


def analyze(paths: Sequence[str | Path], *, world_size: int | None = None,
            rules_dirs: Sequence[Path] = (),
            progress: Callable[[str], None] | None = None, jobs: int | None = None,
            policy: Policy | None = None) -> Report:
    """Read every source under `paths` and diagnose the job they came from.

    `policy`: the decision table the report's next step comes from (None: the one triage ships;
    `triage.decision.load_policy` reads a user's).

    `jobs`: processes that read files at once (None: one per CPU this process may use, up to
    MAX_JOBS; inputs under PARALLEL_MIN_BYTES are read by this process alone).

    Raises RuleError for an invalid rule and NoInput when not one source could be read or every
    one was empty; a source
    that cannot be read is otherwise reported in `Report.sources` and the rest is analysed.
    """
    matcher = Matcher(load_rules(rules_dirs))
    names = [str(p) for p in paths]
    sources: list[SourceInfo] = []
    events: list[Event] = []
    for scanned in _scan_all(matcher, names, jobs=jobs):
        for info, found in scanned:
            if progress:
                progress(info.name)
            sources.append(info)
            events.extend(found)
    if not any(s.skipped is None and s.bytes for s in sources):
        raise NoInput(sources)  # nothing read, or only empty inputs: no evidence is not health
    _note_name_clashes(sources)
    job = build_job(events, sources, world_size)
    check_dump_ranks(sources, job.events)  # a dump's file-name rank against what the logs say
    verdict = diagnose(job)
    decision = decide(verdict, job, policy or default_policy())
    used = {e.rule_id for e in job.events} | {ev.rule_id for c in verdict.culprits for ev in c.evidence}
    return Report(verdict=verdict, world_size=job.world_size, world_size_from=job.world_size_from,
                  ranks=job.ranks, sources=sources, events=job.events, version=__version__,
                  groups=job.groups, unexplained=summarize(job.events),
                  rules={r.id: _rule_doc(r) for r in matcher.rules if r.id in used}, decision=decision)


def _rule_doc(rule: Rule) -> RuleDoc:
    """What the report keeps of a rule the analysis used: its title and `explain` text."""
    return RuleDoc(title=rule.title, meaning=str(rule.explain.get("meaning") or "").strip(),
                   next_steps=str(rule.explain.get("next_steps") or "").strip(),
                   references=tuple(rule.references))


def _note_name_clashes(sources: list[SourceInfo]) -> None:
    """Sources of two extracts with one name (the same path on two nodes) are one writer's to the
    identity stage, which reads who wrote a source from its name: say so."""
    if not any(n.startswith(extract_file.NOTE_FROM) for s in sources for n in s.notes):
        return
    counts = Counter(s.name for s in sources if not s.skipped)
    for source in sources:
        if counts[source.name] > 1 and not source.skipped:
            source.notes.append(f"{counts[source.name]} sources have this name (the same path on "
                                "several nodes?): they are taken as one writer's; `triage extract "
                                "--host NAME` on each node tells them apart")


@dataclass
class Extracted:
    """What `extract` wrote: how many sources and events, and the bytes read and written."""

    output: str
    sources: list[SourceInfo]
    events: int
    bytes_in: int
    bytes_out: int

    @property
    def readable(self) -> bool:
        return any(s.skipped is None and s.bytes for s in self.sources)


def extract(paths: Sequence[str | Path], output: str | Path, *, host: str | None = None,
            rules_dirs: Sequence[Path] = ()) -> Extracted:
    """Scan the logs under `paths` and write what was found to `output` (`-`: stdout; gzipped when
    the name ends in .gz), for `analyze` to read elsewhere with the same result.

    `host`: the node's name, put in front of every source name (`NAME/` + the path), as if the
    logs had been collected into a folder named after it: the identity stage reads it from there.
    The file is written whole, under a temporary name renamed at the end; sources that cannot be
    read are written too (as skipped), so the analysis says what was missing on this node. Raises
    RuleError for an invalid rule, ValueError for a bad `host`, OSError when `output` cannot be
    written.
    """
    if host is not None:
        check_host(host)
    matcher = Matcher(load_rules(rules_dirs))
    names = [str(p) for p in paths]
    out = str(output)
    exclude = _file_keys([out]) if out != "-" else frozenset()
    scanned = [one for batch in _scan_all(matcher, names, exclude) for one in batch]
    if host is not None:
        scanned = [extract_file.prefixed(one, f"{host}/") for one in scanned]
    import gzip
    import io
    import socket

    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    head = extract_file.header(rules=extract_file.rules_digest(matcher.rules),
                               host=host or socket.gethostname() or None,
                               created=created.replace("+00:00", "Z"),
                               paths=[display_name(n) for n in names],
                               name_prefix=f"{host}/" if host is not None else None)
    buffer = io.BytesIO()
    _, events = extract_file.write(buffer, head, scanned)
    data = buffer.getvalue()
    if out != "-" and out.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    _write_whole(out, data)
    return Extracted(output=out, sources=[info for info, _ in scanned], events=events,
                     bytes_in=sum(info.bytes for info, _ in scanned), bytes_out=len(data))


def check_host(host: str) -> None:
    """A node name fit to be a folder name in front of the source names; ValueError if not."""
    if (not host or len(host) > 253 or not host.isprintable() or any(c in host for c in "/\\! ")
            or host in (".", "..")):
        raise ValueError(f"--host must be a node name (no spaces, '/', '\\' or '!'), not {host!r}")


def _write_whole(out: str, data: bytes) -> None:
    if out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written under another name and renamed: a reader of the shared folder never sees half a file.
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_bytes(data)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


def _file_keys(names: list[str]) -> frozenset[tuple[int, int]]:
    """(device, inode) of the files named that exist: the extract being rewritten is not read."""
    keys = set()
    for name in names:
        try:
            st = Path(name).stat()
        except (OSError, ValueError):
            continue
        keys.add((st.st_dev, st.st_ino))
    return frozenset(keys)


def _excluded(item: Path | Unreadable, exclude: frozenset[tuple[int, int]]) -> bool:
    try:
        st = item.stat() if isinstance(item, Path) else None
    except OSError:
        return False
    return st is not None and (st.st_dev, st.st_ino) in exclude


def _scan_all(matcher: Matcher, names: list[str],
              exclude: frozenset[tuple[int, int]] = frozenset(), jobs: int | None = None) -> Iterator[Scanned]:
    """Scanned sources, file by file, in the order given; files in parallel when it pays.

    `exclude`: (device, inode) of files not to read (an extract's own output).
    """
    if "-" in names:
        yield _scan_streams(matcher, expand("<stdin>", stdin_stream().fileobj))
    files = list(iter_files(names))
    if exclude:
        files = [f for f in files if not _excluded(f, exclude)]
    paths = [f for f in files if isinstance(f, Path)]
    workers = _workers(paths, jobs)
    if workers > 1:
        global _matcher
        _matcher = matcher
        # The first files are read before the workers are forked: the rules they meet (most jobs
        # log the same kinds of lines in every rank's files) are compiled once, here, not once in
        # each worker.
        first = paths[:_FIRST_FILES]
        by_path = {path: _scan_streams(matcher, open_file(path)) for path in first}
        rest = paths[len(first):]
        # The objects made so far, out of the collector's sight while the workers live: its passes
        # in a worker would touch, and so copy, every page it shares with this process.
        gc.freeze()
        # Imported here: a run read by one process (most inputs) needs neither (~40 ms).
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("fork")
        # This process reads a share too, rather than wait: what it finds needs no pickling.
        own = _own_share(rest, workers)
        others = [p for p in rest if p not in own]
        try:
            with ProcessPoolExecutor(max_workers=workers - 1, mp_context=context) as pool:
                results = pool.map(_scan_path, others, chunksize=max(1, len(others) // (workers * 8)))
                by_path.update((path, _scan_streams(matcher, open_file(path))) for path in own)
                by_path.update(zip(others, results, strict=True))
        finally:
            gc.unfreeze()
        for item in files:
            yield by_path[item] if isinstance(item, Path) else [_unreadable(item)]
        return
    for item in files:
        yield _scan_streams(matcher, open_file(item)) if isinstance(item, Path) else [_unreadable(item)]


def _workers(paths: list[Path], jobs: int | None) -> int:
    """How many processes read `paths`: 1 (this one) unless several files, CPUs and bytes make it pay."""
    limit = min(usable_cpus(), MAX_JOBS) if jobs is None else jobs
    if limit < 2 or len(paths) < 2:
        return 1
    total = 0
    for path in paths:
        total += _size(path)
        if total >= PARALLEL_MIN_BYTES:
            import multiprocessing

            if "fork" not in multiprocessing.get_all_start_methods():
                return 1  # spawned workers would re-import and re-load every rule: not worth it
            return min(limit, len(paths))
    return 1


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # reported when it is opened


def _own_share(paths: list[Path], workers: int) -> set[Path]:
    """The files this process reads itself: the last ones, about 1/workers of the bytes."""
    sizes = [_size(path) for path in paths]
    share, own = sum(sizes) / workers, set[Path]()
    for path, size in zip(reversed(paths), reversed(sizes), strict=True):
        if share <= 0 or len(own) >= len(paths) - 1:
            break
        own.add(path)
        share -= size
    return own


def usable_cpus() -> int:
    """The CPUs this process may run on (a Slurm step or a container may allow fewer than exist)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def _scan_path(path: Path) -> Scanned:
    assert _matcher is not None, "set before the workers were forked"  # noqa: S101
    return _scan_streams(_matcher, open_file(path))


def _scan_streams(matcher: Matcher, items: Iterator[Stream | Unreadable]) -> Scanned:
    scanned: Scanned = []
    for item in items:
        scanned.extend([_unreadable(item)] if isinstance(item, Unreadable) else scan_sources(matcher, item))
    return scanned


def _unreadable(item: Unreadable) -> tuple[SourceInfo, list[Event]]:
    return SourceInfo(name=item.name, identity=Identity(), skipped=item.reason), []
