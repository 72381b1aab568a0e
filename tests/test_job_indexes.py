"""Issue 27: the job stage reads indexes and shortcuts instead of asking every event; each gives what
the plain question over every event gives.

- `EventIndex` (the identity State's and the Job's): the events of some kinds, rules or families,
  in the list's order, as a filter over the whole list gives them;
- the job's time order: one sort by (time, or infinity; source; line);
- yearless c10/glog times placed per day: the time each one gets placed by itself.
"""

from __future__ import annotations

import calendar
import random
import time
from operator import attrgetter
from pathlib import Path

import pytest

from triage.event_index import EventIndex
from triage.ingest.discover import iter_files, open_file
from triage.ingest.open import Stream
from triage.job import build_job
from triage.job.build import _DAY, _in_time_order, _placed
from triage.model import Event, Evidence, Identity, Kind, Phase
from triage.parse.scan import Matcher
from triage.parse.source import scan_sources
from triage.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


def _event(i: int, kind: Kind, family: str, rule: str, when: float | None, source: str = "a.log") -> Event:
    return Event(rule_id=rule, kind=kind, phase=Phase.UNKNOWN, severity="info", message="",
                 identity=Identity(), evidence=Evidence(source=source, line=i, text=""), time=when, family=family)


def _mixed(n: int, seed: int) -> list[Event]:
    rnd = random.Random(seed)  # noqa: S311 - test data
    kinds = list(Kind)
    return [_event(i, rnd.choice(kinds), rnd.choice(["nccl", "pytorch", "torchrun", "ras"]),
                   rnd.choice(["r1", "r2", "r3"]), rnd.choice([None, float(rnd.randrange(50)), float("inf")]),
                   rnd.choice(["a.log", "b.log", "c.log"])) for i in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_an_index_gives_what_a_filter_over_every_event_gives(seed: int) -> None:
    events = _mixed(300, seed)
    by_kind = EventIndex(events, attrgetter("kind"))
    by_family = EventIndex(events, attrgetter("family"))
    rnd = random.Random(seed)  # noqa: S311 - test data
    for _ in range(20):
        kinds = tuple(rnd.sample(list(Kind), rnd.randint(1, 4)))
        assert by_kind.of(*kinds) == [e for e in events if e.kind in kinds]
    assert by_kind.of(Kind.TIMEOUT, Kind.TIMEOUT) == [e for e in events if e.kind is Kind.TIMEOUT]
    assert by_family.of("slurm") == []
    assert by_family.of("ras", "nccl") == [e for e in events if e.family in ("ras", "nccl")]


def test_a_real_jobs_indexes_give_what_its_events_hold() -> None:
    matcher = Matcher(load_rules(()))
    sources, events = [], []
    for path in iter_files([str(FIXTURES / "real-subgroup-hang-rank3" / "logs")]):
        assert isinstance(path, Path)
        for stream in open_file(path):
            assert isinstance(stream, Stream)
            for info, found in scan_sources(matcher, stream):
                sources.append(info)
                events.extend(found)
    job = build_job(events, sources)
    assert len(job.events) > 20
    for kind in Kind:
        assert job.of_kinds(kind) == [e for e in job.events if e.kind is kind]
    waits = (Kind.TIMEOUT, Kind.PEER_ERROR, Kind.CONSEQUENCE)
    assert job.of_kinds(*waits) == [e for e in job.events if e.kind in waits]
    for rule in {e.rule_id for e in job.events}:
        assert job.of_rules(rule) == [e for e in job.events if e.rule_id == rule]
    for family in {e.family for e in job.events}:
        assert job.of_families(family) == [e for e in job.events if e.family == family]


@pytest.mark.parametrize("seed", range(5))
def test_the_time_order_is_one_sort_by_time_source_and_line(seed: int) -> None:
    events = _mixed(400, seed)
    one_sort = sorted(events, key=lambda e: (e.time if e.time is not None else float("inf"),
                                             e.evidence.source, e.evidence.line))
    assert _in_time_order(events) == one_sort


def _placed_alone(when: float, year: int) -> float:
    """A yearless time placed by itself (the job stage's definition before times were placed per day)."""
    tm = time.gmtime(when)
    return calendar.timegm((year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, 0, 0, 0)) + (
        when - int(when))


def test_a_yearless_time_placed_by_its_day_is_the_time_placed_by_itself() -> None:
    rnd = random.Random(27)  # noqa: S311 - test data
    leap_year = calendar.timegm((2000, 1, 1, 0, 0, 0, 0, 0, 0))  # where c10/glog times wait for a year
    for _ in range(20_000):
        when = leap_year + rnd.uniform(0, 366 * _DAY)
        if rnd.random() < 0.3:
            when = float(int(when)) + rnd.choice([0.0, 0.5, 0.999999])
        year = rnd.choice([1999, 2023, 2024, 2025])
        day = int(when // _DAY)
        assert when + (_placed(day * _DAY, year) - day * _DAY) == _placed_alone(when, year)
