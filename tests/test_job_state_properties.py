"""Properties of the verdict over generated job states, rendered into the real input formats.

A job state is drawn by hypothesis: the world size, a default group and tensor-parallel pairs, each
rank's progress in each group (collectives completed, the next one in flight or not: scheduled or
started), or, without pairs, a size mismatch (every rank in one collective, one rank with another size), which ranks left a flight-recorder dump and how many
entries it kept, NCCL's or gloo's way, and an NCCL RAS snapshot in which some processes did not
answer or are dead. Dumps are written by generators/frgen.py, RAS text by generators/rasgen, logs by
generators/jobgen; `triage.api.analyze` reads the folder. Whatever the state:

- nothing raises and no principle failed (the verdict's `failed` is empty);
- confidence is in [0, 1], and every culprit is a member of the job (rank < world size, a host of
  the job, a link between two of its ranks);
- a rank whose dump shows it waiting in a collective (work in flight) that a peer's dump shows that
  peer never enqueued, and on which no peer waits, is never the sole culprit;
- the verdict is the same when the sources are renamed (another dump prefix, other folders, another
  snapshot name) or given in another order;
- an earlier dump of every rank beside its latest (a periodic dumper's) changes nothing;
- a source that agrees with the logs (dumps of the same hang, a RAS snapshot in which the stalled
  rank did not answer) never lowers the confidence, nor changes the culprit.

derandomize=True and no example database: the same examples on every run, so CI never fails by
chance; no timing is asserted (deadline=None).
"""

from __future__ import annotations

import dataclasses
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from generators import frgen, rasgen
from generators.jobgen import generate, host_ip
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from triage.api import analyze
from triage.model import Report

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@dataclass
class JobState:
    world: int
    backend: str
    groups: dict[str, frgen.GroupState]
    dumped: list[int]  # ranks that left a dump
    keep: int  # entries each dump kept
    unresponsive: set[int]  # ranks RAS got no answer from
    dead: set[int]  # ranks RAS considers dead
    ras: bool


@st.composite
def progress(draw: st.DrawFn, members: list[int]) -> dict[int, frgen.Progress]:
    base = draw(st.integers(1, 30))
    if draw(st.integers(0, 3)) == 0:  # quiet: every member at the same collective, nothing in flight
        return {r: frgen.Progress(base) for r in members}
    return {r: frgen.Progress(base + draw(st.integers(0, 2)), draw(st.sampled_from([None, "scheduled", "started"])))
            for r in members}


@st.composite
def job_states(draw: st.DrawFn) -> JobState:
    world = draw(st.integers(2, 8))
    ranks = list(range(world))
    groups = {"0": frgen.GroupState("default_pg", ranks, draw(progress(ranks)))}
    if world % 2 == 0 and draw(st.booleans()):
        for k in range(world // 2):
            pair = [2 * k, 2 * k + 1]
            groups[str(k + 1)] = frgen.GroupState("tp", pair, draw(progress(pair)), pg_id=1)
    elif draw(st.booleans()):  # a size mismatch: every rank in the same collective, one with another size
        default = groups["0"]
        seq = draw(st.integers(1, 30))
        waits = draw(st.sampled_from(["scheduled", "started"]))
        default.progress = {r: frgen.Progress(seq - 1, waits) for r in ranks}
        default.odd_numel[(draw(st.sampled_from(ranks)), seq)] = draw(st.sampled_from([1025, 1, 0, 4096]))
    dumped = sorted(draw(st.sets(st.sampled_from(ranks))))
    ras = draw(st.booleans()) or not dumped
    quiet = draw(st.sets(st.sampled_from(ranks), max_size=2)) if ras else set()
    dead = {r for r in quiet if draw(st.booleans())}
    return JobState(world, draw(st.sampled_from(["nccl", "gloo"])), groups, dumped,
                    draw(st.sampled_from([2000, 2000, 4, 1])), quiet - dead, dead, ras)


def _snapshot(world: int, unresponsive: set[int], dead: set[int], hosts: int = 1) -> rasgen.Snapshot:
    per_host = -(-world // hosts)
    procs = rasgen.processes([host_ip(h) for h in range(hosts)], gpus=per_host, seed=world)[:world]
    comm = rasgen.world(procs, 0x6D4A1F0E22C3B5A7, AllReduce=4100)
    return rasgen.Snapshot(time=1_790_000_000.25, version="2.26.2", processes=procs, comms=[comm],
                           unresponsive=frozenset(procs[r].pid for r in unresponsive),
                           dead=frozenset(procs[r].pid for r in dead), timeouts=len(unresponsive))


def render(state: JobState, root: Path, *, renamed: bool = False) -> list[Path]:
    """Write the state's sources under root; the paths to give analyze (one folder, or each file)."""
    dumps = root / ("node-a/collected/traces" if renamed else "fr")
    dumps.mkdir(parents=True)
    prefix = "nccl_trace_rank_" if renamed else "comm_lib_trace_rank_"
    files = []
    for r in state.dumped:
        path = dumps / f"{prefix}{r}"
        frgen.write(path, frgen.dump(r, state.groups, backend=state.backend, keep=state.keep))
        files.append(path)
    if state.ras:
        snap = _snapshot(state.world, state.unresponsive, state.dead)
        folder = root / ("status" if renamed else "ras")
        folder.mkdir(parents=True)
        name = "ncclras-output.txt" if renamed else rasgen.file_name(snap, "text")
        (folder / name).write_text(rasgen.render_text(snap), encoding="utf-8")
        files.append(folder / name)
    return files


def _key(report: Report) -> tuple[Any, ...]:
    v = report.verdict
    culprits = sorted((c.kind, c.rank, c.host, c.peer_rank) for c in v.culprits)
    return v.status, v.phase, v.category, culprits, round(v.confidence, 6)


def _check_sound(report: Report, state: JobState, hosts: set[str]) -> None:
    v = report.verdict
    assert not getattr(v, "failed", []), f"a principle failed: {v.failed}"  # type: ignore[attr-defined]
    assert 0.0 <= v.confidence <= 1.0, v.confidence
    for c in v.culprits:
        if c.kind == "rank":
            assert c.rank is not None and 0 <= c.rank < state.world, (c, v.reasoning)
        elif c.kind == "link":
            assert all(r is None or 0 <= r < state.world for r in (c.rank, c.peer_rank)), (c, v.reasoning)
        else:
            assert c.host in hosts, (c, v.reasoning)


def waiting(state: JobState) -> set[int]:
    """Ranks the dumps show waiting: a collective in flight in its own dump that a peer's dump shows
    that peer never enqueued; less every rank a peer waits on in any group (a rank both waiting and
    waited on is in a cycle: either may be named)."""
    waits, behind = set(), set()
    for group in state.groups.values():
        enqueued = {r: p.completed + (1 if p.in_flight else 0) for r, p in group.progress.items()}
        for r, p in group.progress.items():
            if not p.in_flight:
                continue
            late = {q for q, last in enqueued.items() if last < p.completed + 1}
            behind |= late
            if r in state.dumped and late & set(state.dumped):
                waits.add(r)
    return waits - behind


@settings(SETTINGS, max_examples=120)
@given(state=job_states())
def test_any_job_state_gives_a_sound_verdict(state: JobState, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("job")
    render(state, root)
    report = analyze([root])
    _check_sound(report, state, {host_ip(0)})
    ranks = [c.rank for c in report.verdict.culprits if c.kind == "rank"]
    if len(ranks) == 1 and len(report.verdict.culprits) == 1:
        assert ranks[0] not in waiting(state), (
            f"rank {ranks[0]} is shown waiting with work in flight, yet named alone: {report.verdict.reasoning}")


@SETTINGS
@given(state=job_states(), rnd=st.randoms(use_true_random=False))
def test_renamed_or_reordered_sources_give_the_same_verdict(state: JobState, rnd: random.Random,
                                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    plain = tmp_path_factory.mktemp("plain")
    render(state, plain)
    renamed = tmp_path_factory.mktemp("renamed")
    files = render(state, renamed, renamed=True)
    rnd.shuffle(files)
    want = _key(analyze([plain]))
    assert _key(analyze([renamed])) == want
    assert _key(analyze(files)) == want


@SETTINGS
@given(state=job_states(), back=st.integers(1, 5))
def test_an_earlier_dump_beside_each_rank_s_latest_changes_nothing(state: JobState, back: int,
                                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    """Several dumps of one rank are one timeline (a periodic dumper's, then the one at the hang): each
    rank's latest is where it got. Here every dumped rank also left an earlier dump, `back` collectives
    before, with nothing in flight, in another folder."""
    assume(state.dumped)
    plain = tmp_path_factory.mktemp("latest")
    render(state, plain)
    both = tmp_path_factory.mktemp("both")
    render(state, both)
    earlier = {name: dataclasses.replace(g, progress={r: frgen.Progress(max(0, p.completed - back))
                                                       for r, p in g.progress.items()})
               for name, g in state.groups.items()}
    (both / "fr" / "periodic").mkdir()
    for r in state.dumped:
        frgen.write(both / "fr" / "periodic" / f"comm_lib_trace_rank_{r}",
                    frgen.dump(r, earlier, backend=state.backend, keep=state.keep))
    assert _key(analyze([both])) == _key(analyze([plain]))


@st.composite
def hangs(draw: st.DrawFn) -> dict[str, Any]:
    """A job whose logs show one stalled rank (jobgen's lagging or silent fault)."""
    hosts = draw(st.integers(1, 2))
    gpus = draw(st.sampled_from([2, 4]))
    world = hosts * gpus
    return {"hosts": hosts, "gpus": gpus, "era": draw(st.sampled_from(["2.4", "2.5", "2.6"])),
            "fault": draw(st.sampled_from(["lagging", "silent"])), "culprit": draw(st.integers(0, world - 1)),
            "seed": draw(st.integers(1, 50)), "dumped": draw(st.sets(st.integers(0, world - 1), min_size=1)),
            "started": draw(st.booleans())}


@SETTINGS
@given(job=hangs())
def test_an_agreeing_source_never_lowers_confidence(job: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("hang")
    truth = generate(root / "logs", hosts=job["hosts"], gpus=job["gpus"], era=job["era"], fault=job["fault"],
                     culprit=job["culprit"], noise_lines=10, seed=job["seed"])
    world, culprit, seq = truth.world_size, job["culprit"], truth.seq
    alone = analyze([root / "logs"]).verdict
    assume(alone.status.value == "diagnosed" and [c.rank for c in alone.culprits if c.kind == "rank"] == [culprit])
    # The dumps of the same hang: the stalled rank completed seq-1 and enqueued nothing more; the others
    # wait in seq.
    ranks = list(range(world))
    waits = "started" if job["started"] else "scheduled"
    group = frgen.GroupState("default_pg", ranks, {r: frgen.Progress(seq - 1, None if r == culprit else waits)
                                                   for r in ranks})
    (root / "fr").mkdir()
    for r in sorted(job["dumped"]):
        frgen.write(root / "fr" / f"comm_lib_trace_rank_{r}", frgen.dump(r, {"0": group}))
    with_dumps = analyze([root]).verdict
    _agrees(alone, with_dumps, culprit)
    # And RAS, which got no answer from the stalled rank's process.
    snap = _snapshot(world, {culprit}, set(), hosts=job["hosts"])
    (root / rasgen.file_name(snap, "text")).write_text(rasgen.render_text(snap), encoding="utf-8")
    _agrees(with_dumps, analyze([root]).verdict, culprit)
    shutil.rmtree(root)


def _agrees(before: Any, after: Any, culprit: int) -> None:
    assert [c.rank for c in after.culprits if c.kind == "rank"] == [culprit], after.reasoning
    assert after.confidence >= before.confidence, (
        f"an agreeing source lowered the confidence {before.confidence} -> {after.confidence}: {after.reasoning}")
