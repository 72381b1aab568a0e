"""The library entry point: `analyze(paths) -> Report`. The CLI is a thin layer over this."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from triage import __version__
from triage.diagnose.verdict import diagnose
from triage.ingest.discover import iter_files, open_file
from triage.ingest.open import Stream, Unreadable, expand, stdin_stream
from triage.job import build_job
from triage.model import Event, Identity, Report, SourceInfo
from triage.parse.scan import Matcher
from triage.parse.source import scan_stream
from triage.rules import load_rules
from triage.unexplained import summarize

# Below this much input, starting worker processes costs more than it saves.
PARALLEL_MIN_BYTES = 64 << 20
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
            progress: Callable[[str], None] | None = None) -> Report:
    """Read every source under `paths` and diagnose the job they came from.

    Raises RuleError for an invalid rule and NoInput when not one source could be read or every
    one was empty; a source
    that cannot be read is otherwise reported in `Report.sources` and the rest is analysed.
    """
    matcher = Matcher(load_rules(rules_dirs))
    names = [str(p) for p in paths]
    sources: list[SourceInfo] = []
    events: list[Event] = []
    for scanned in _scan_all(matcher, names):
        for info, found in scanned:
            if progress:
                progress(info.name)
            sources.append(info)
            events.extend(found)
    if not any(s.skipped is None and s.bytes for s in sources):
        raise NoInput(sources)  # nothing read, or only empty inputs: no evidence is not health
    job = build_job(events, sources, world_size)
    verdict = diagnose(job)
    return Report(verdict=verdict, world_size=job.world_size, world_size_from=job.world_size_from,
                  ranks=job.ranks, sources=sources, events=job.events, version=__version__,
                  groups=job.groups, unexplained=summarize(job.events))


def _scan_all(matcher: Matcher, names: list[str]) -> Iterator[Scanned]:
    """Scanned sources, file by file, in the order given; files in parallel when it pays."""
    if "-" in names:
        yield _scan_streams(matcher, expand("<stdin>", stdin_stream().fileobj))
    files = list(iter_files(names))
    paths = [f for f in files if isinstance(f, Path)]
    if _worth_parallel(paths):
        global _matcher
        _matcher = matcher
        context = multiprocessing.get_context("fork")
        workers = min(len(paths), os.cpu_count() or 1, 16)
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            results = pool.map(_scan_path, paths, chunksize=max(1, len(paths) // (workers * 8)))
            by_path = dict(zip(paths, results, strict=True))
        for item in files:
            yield by_path[item] if isinstance(item, Path) else [_unreadable(item)]
        return
    for item in files:
        yield _scan_streams(matcher, open_file(item)) if isinstance(item, Path) else [_unreadable(item)]


def _worth_parallel(paths: list[Path]) -> bool:
    if len(paths) < 2 or (os.cpu_count() or 1) < 2:
        return False
    if "fork" not in multiprocessing.get_all_start_methods():
        return False  # spawned workers would re-import and re-load every rule: not worth it
    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
        except OSError:
            continue
        if total >= PARALLEL_MIN_BYTES:
            return True
    return False


def _scan_path(path: Path) -> Scanned:
    assert _matcher is not None, "set before the workers were forked"  # noqa: S101
    return _scan_streams(_matcher, open_file(path))


def _scan_streams(matcher: Matcher, items: Iterator[Stream | Unreadable]) -> Scanned:
    scanned: Scanned = []
    for item in items:
        scanned.append(_unreadable(item) if isinstance(item, Unreadable) else scan_stream(matcher, item))
    return scanned


def _unreadable(item: Unreadable) -> tuple[SourceInfo, list[Event]]:
    return SourceInfo(name=item.name, identity=Identity(), skipped=item.reason), []
