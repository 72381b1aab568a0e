"""What `triage repro` prints before the verdict: the run, its phases, bandwidth, bisection."""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from triage.repro import bisect
from triage.repro.bandwidth import bus_factor, gbps
from triage.repro.coordinator import PhaseRow
from triage.repro.options import ReproOptions, format_size
from triage.repro.protocol import PHASES

_STYLE = {"pass": "green", "FAILED": "bold red", "stuck": "bold red", "crashed": "bold red",
          "lost": "bold red", "not reached": "dim"}


def console(out: TextIO, color: bool | None = None) -> Console:
    # markup off: log text (`[rank0]`, paths) is printed literally; NO_COLOR and pipes are respected.
    return Console(file=out, highlight=False, markup=False, soft_wrap=True,
                   no_color=None if color is None else not color,
                   force_terminal=color if color else None)


def header(con: Console, opts: ReproOptions, launcher: str) -> None:
    deadlines = " · ".join(f"{p} {opts.deadlines[p]:g} s" for p in PHASES)
    sizes = ", ".join(format_size(s) for s in opts.sizes)
    con.print(Text(f"triage repro: {len(opts.group)} ranks {launcher}, backend {opts.backend}", style="bold"))
    con.print(Text(f"deadlines: {deadlines}; all-reduce sizes {sizes} x {opts.iters} iterations"))
    if opts.ranks_per_gpu > 1:
        con.print(Text(f"{opts.ranks_per_gpu} ranks per GPU, each its own NCCL host (NCCL_HOSTID): NCCL joins them "
                       "over its network transport, so this measures the network path, not the GPU's links",
                       style="yellow"))
    if opts.inject is not None:
        i = opts.inject
        con.print(Text(f"injected fault: {i.kind} at rank {i.rank} in phase {i.phase}", style="yellow"))


def phases(con: Console, rows: list[PhaseRow]) -> None:
    table = Table(title=None, show_edge=False, pad_edge=False, box=None, header_style="bold")
    table.add_column("phase")
    table.add_column("result")
    table.add_column("time", justify="right")
    table.add_column("")
    for row in rows:
        secs = f"{row.seconds:.3f} s" if row.seconds is not None else "-"
        table.add_row(Text(row.phase), Text(row.status, style=_STYLE.get(row.status, "")),
                      Text(secs), Text(row.detail))
    con.print()
    con.print(table)


def bandwidth(con: Console, result: dict[str, Any] | None) -> None:
    """The timed all-reduces as nccl-tests prints them (out-of-place columns), then the judgement."""
    if not result or not result.get("rows"):
        return
    world = int(result.get("world_size", 0))
    con.print()
    con.print(Text(f"all-reduce, {world} ranks (busbw = algbw x 2(n-1)/n = algbw x {bus_factor(world):.2f}; "
                   "GB/s = 10^9 B/s; #wrong: elements that failed the checks)", style="bold"))
    con.print(Text(f"#{'size':>12} {'count':>13} {'type':>9} {'redop':>7} {'root':>7} {'time':>8} "
                   f"{'algbw':>7} {'busbw':>7} {'#wrong':>6}"))
    con.print(Text(f"#{'(B)':>12} {'(elements)':>13} {'':>9} {'':>7} {'':>7} {'(us)':>8} "
                   f"{'(GB/s)':>7} {'(GB/s)':>7} {'':>6}"))
    for row in result["rows"]:
        count = int(row.get("count") or int(row["size"]) // 4)
        con.print(Text(f" {int(row['size']):>12} {count:>13} {'float':>9} {'sum':>7} {-1:>7} "
                       f"{row['seconds'] * 1e6:>8.2f} {row['algbw']:>7.2f} {row['busbw']:>7.2f} "
                       f"{int(row.get('wrong', 0)):>6}"))
    if result.get("transport"):
        con.print(Text(f"transport: {result['transport']}"))
    expected = result.get("expected")
    if expected:
        span = (f"{expected['low']:g}" if expected["low"] == expected["high"]
                else f"{expected['low']:g}-{expected['high']:g}")
        line = f"expected for {expected['label']}: busbw {span} GB/s at large sizes ({expected['source']})"
        con.print(Text(line))
        if result.get("shortfall") is not None:
            con.print(Text(f"the largest size reached {result['shortfall']}% of that: slow", style="bold red"))
    if result.get("expected_note"):
        con.print(Text(str(result["expected_note"]), style="dim"))
    for late in result.get("late") or []:
        con.print(Text(f"rank {late['rank']} slow in {late['phase']}: {late['lag_s'] * 1000:.0f} ms late "
                       f"on average at {late['late']} of {late['total']}", style="bold red"))


def bisection(con: Console, results: list[bisect.GroupResult], judgement: bisect.Judgement | None) -> None:
    if judgement is None:
        return
    con.print()
    con.print(Text("bisection (every pair of ranks, run on its own)", style="bold"))
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for name in ("group", "result", "busbw", ""):
        table.add_column(name)
    for r in results:
        state = "FAILED" if r.failed else "slow" if r.slow else "pass"
        busbw = f"{gbps(r.busbw)} GB/s" if r.busbw is not None else "-"
        table.add_row(Text(str(list(r.ranks))), Text(state, style=_STYLE.get(state, "yellow")),
                      Text(busbw), Text(r.note))
    con.print(table)
    if judgement.kind == "rank":
        who = "rank" if len(judgement.ranks) == 1 else "ranks"
        con.print(Text(f"bisect: {who} {', '.join(map(str, judgement.ranks))}: {judgement.reasoning}",
                       style="bold"))
    elif judgement.kind == "link":
        links = ", ".join(f"{a}<->{b}" for a, b in judgement.links)
        con.print(Text(f"bisect: link {links}: {judgement.reasoning}", style="bold"))
    else:
        con.print(Text(f"bisect: {judgement.reasoning}", style="bold"))
