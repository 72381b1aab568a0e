"""The library entry point: `analyze(paths) -> Report`. The CLI is a thin layer over this."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from triage import __version__
from triage.diagnose.verdict import diagnose
from triage.ingest.discover import iter_streams
from triage.ingest.identity import identity_from_path
from triage.ingest.open import Unreadable
from triage.job import build_job
from triage.model import Event, Report, SourceInfo
from triage.parse.scan import Matcher
from triage.parse.source import scan_stream
from triage.rules import load_rules


class NoInput(Exception):
    """Nothing readable was given: every path was missing, empty or unreadable."""

    def __init__(self, sources: list[SourceInfo]) -> None:
        self.sources = sources
        reasons = "; ".join(f"{s.name}: {s.skipped}" for s in sources[:5])
        super().__init__(f"no readable log among the inputs ({reasons or 'none given'})")


def analyze(paths: Sequence[str | Path], *, world_size: int | None = None,
            rules_dirs: Sequence[Path] = (),
            progress: Callable[[str], None] | None = None) -> Report:
    """Read every source under `paths` and diagnose the job they came from.

    Raises RuleError for an invalid rule and NoInput when not one source could be read; a source
    that cannot be read is otherwise reported in `Report.sources` and the rest is analysed.
    """
    matcher = Matcher(load_rules(rules_dirs))
    sources: list[SourceInfo] = []
    events: list[Event] = []
    for item in iter_streams([str(p) for p in paths]):
        if isinstance(item, Unreadable):
            sources.append(SourceInfo(name=item.name, identity=identity_from_path(item.name),
                                      skipped=item.reason))
            continue
        if progress:
            progress(item.name)
        info, found = scan_stream(matcher, item)
        sources.append(info)
        events.extend(found)
    if not any(s.skipped is None for s in sources):
        raise NoInput(sources)
    job = build_job(events, sources, world_size)
    verdict = diagnose(job)
    return Report(verdict=verdict, world_size=job.world_size, world_size_from=job.world_size_from,
                  ranks=job.ranks, sources=sources, events=job.events, version=__version__)
