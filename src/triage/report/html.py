"""`--format html`: the report as one self-contained page, to attach to a CI run or a ticket.

Everything is inline (CSS, SVG, one tiny script) and a Content-Security-Policy forbids loading
anything else, so the page opens offline and shows the same thing years later. Every piece of log
text goes through `html.escape`; the one script is allowed by its hash, so even a line that slipped
through could not run. The pictures are drawn here, server-side: the host-by-local-rank grid (runs
of identical hosts folded into a <details>, every rank still one cell) and a per-rank timeline
(ranks whose stories match folded into one row). A culprit's cell and timeline bar link to its
evidence (`#ev-<n>`); every cell has a tooltip.
"""

from __future__ import annotations

import base64
import hashlib
import html
import time
from dataclasses import dataclass
from typing import TextIO

from triage.model import Event, Kind, Report, Status, Unexplained
from triage.ranks import fmt_ranks
from triage.report.views import (
    FAILING_ROLES,
    RankView,
    ReportView,
    grid,
    job_size,
    locate,
    victims_line,
)

_ROLE_LABEL = {"culprit": "culprit", "failed": "failed", "victim": "victim (timed out / lost a peer)",
               "ok": "ok", "missing": "no log", "unknown": "unknown", "silent": "silent"}
_ROLE_ORDER = [*FAILING_ROLES, "ok", "missing", "unknown", "silent"]
_MAX_TEXT = 2000  # characters of one log line shown
_MAX_UNEXPLAINED = 50
_MAX_TIMELINE_ROWS = 200  # folded rows; a job whose ranks all differ shows the failing ones first
_BAR_W = 560  # px of the timeline's time axis

# (kind of mark, css class, label): the marks a timeline row can carry, in legend order.
_MARKS = (("start", "m-start", "first timed line"), ("init", "m-init", "communicator init"),
          ("progress", "m-prog", "last progress"), ("error", "m-err", "first error"),
          ("timeout", "m-tmo", "timeout"), ("exit", "m-exit", "exit / teardown"),
          ("fr", "m-fr", "flight-recorder op in flight (dump)"))

_SCRIPT = ("(function(){var d=document.documentElement;d.setAttribute('data-js-errors','0');"
           "window.addEventListener('error',function(){d.setAttribute('data-js-errors',"
           "String(+d.getAttribute('data-js-errors')+1));});"
           "document.addEventListener('DOMContentLoaded',function(){d.setAttribute('data-rendered','yes');});"
           "})();")
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
_CSP = (f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{_SCRIPT_HASH}'; base-uri 'none'; form-action 'none'")

_CSS = """
:root{--culprit:#d7263d;--failed:#f49d37;--victim:#8d99ae;--ok:#3fa34d;--missing:#b86bd1;
--unknown:#d9d9d9;--fg:#1d2330;--dim:#5c6575;--bg:#fff;--line:#e3e6eb}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:1200px;padding:16px 24px}
h1{font-size:20px;margin:4px 0 8px}h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid var(--line)}
.meta,.dim{color:var(--dim)}.badge{display:inline-block;padding:2px 8px;border-radius:4px;
font-weight:700;color:#fff;margin-right:8px}
.s-diagnosed{background:var(--culprit)}.s-inconclusive{background:#e0a800;color:#000}
.s-no_failure{background:var(--ok)}
dl.verdict{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:8px 0}
dl.verdict dt{font-weight:600;color:var(--dim)}dl.verdict dd{margin:0}
.culprit-name{color:var(--culprit);font-weight:700}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
pre{background:#f5f6f8;border:1px solid var(--line);padding:6px 8px;margin:4px 0;
white-space:pre-wrap;word-break:break-all}
.legend span{display:inline-flex;align-items:center;margin-right:14px}
.legend i,.cell{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:1px;
vertical-align:middle}
.legend i{margin-right:5px}
.r-culprit{background:var(--culprit);outline:2px solid #7a0010}.r-failed{background:var(--failed)}
.r-victim{background:var(--victim)}.r-ok{background:var(--ok)}.r-missing{background:var(--missing)}
.r-unknown,.r-silent{background:var(--unknown)}
a.cell:hover,a.cell:focus{outline:2px solid #000}
.grid{margin:8px 0}.grow{display:flex;align-items:center;gap:10px;min-height:16px}
.grow .lbl{font-family:ui-monospace,monospace;font-size:12px;width:20em;flex:none;white-space:nowrap;
overflow:hidden;text-overflow:ellipsis;padding-left:1.2em}
.grow .cells{display:flex;flex-wrap:wrap;max-width:620px;line-height:0}
.grow .note{color:var(--dim);font-size:12px}
details.fold>summary{list-style:none;cursor:pointer}details.fold>summary::-webkit-details-marker{display:none}
details.fold>summary .lbl::before{content:"\\25B8";color:var(--dim);margin-left:-1.2em;width:1.2em;
display:inline-block}
details.fold[open]>summary .lbl::before{content:"\\25BE"}
details.fold .inner{margin-left:16px;border-left:2px solid var(--line);padding-left:6px}
table{border-collapse:collapse;width:100%}td,th{padding:3px 6px;border-bottom:1px solid var(--line);
text-align:left;vertical-align:top}th{font-size:12px;color:var(--dim);font-weight:600}
.tl td.bar{width:__BAR_W__px;padding:2px 6px}.tl svg{display:block}
.tl .who{white-space:nowrap;font-family:ui-monospace,monospace;font-size:12px}
.m-start{fill:#6c757d}.m-init{fill:#2b6cb0}.m-prog{fill:var(--ok)}.m-err{fill:var(--culprit)}
.m-tmo{fill:var(--failed)}.m-exit{fill:#333}.m-fr{fill:#1f6fb4}
.b-culprit{fill:var(--culprit);opacity:.35}.b-failed{fill:var(--failed);opacity:.35}
.b-victim{fill:var(--victim);opacity:.35}.b-ok{fill:var(--ok);opacity:.35}
.b-missing,.b-unknown,.b-silent{fill:var(--unknown)}
.evidence li{margin-bottom:10px}.evidence li:target{background:#fff3bf;outline:2px solid #e0a800}
.tag{display:inline-block;background:#eef1f5;border-radius:3px;padding:0 5px;font-size:12px;margin-left:6px}
footer{margin-top:32px;color:var(--dim);font-size:12px}
""".replace("__BAR_W__", str(_BAR_W))


def _e(text: object) -> str:
    """Any text, log lines above all, as inert HTML (quotes too: it may sit in an attribute)."""
    return html.escape(str(text), quote=True)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + " …"


class Html:
    name = "html"
    summary = "one self-contained HTML page: verdict, rank grid, timeline, evidence (no network)"

    def write(self, view: ReportView, out: TextIO, *, color: bool | None = None) -> None:
        out.write(page(view))

    def write_error(self, message: str, version: str, out: TextIO) -> None:
        body = (f'<h1><span class="badge s-diagnosed">ERROR</span>triage could not analyse the logs</h1>'
                f"<pre>{_e(message)}</pre>")
        out.write(_document("triage: error", body, version))


FORMATTER = Html()


def page(view: ReportView) -> str:
    evidence_of = _evidence_anchors(view)
    parts = [_verdict(view, evidence_of)]
    if view.report.ranks and view.status is not Status.NO_FAILURE:
        parts.append(_grid(view, evidence_of))
        parts.append(_timeline(view, evidence_of))
    parts.append(_evidence(view))
    parts.append(_lines("groups", "Process groups (flight recorder)", view.progress))
    parts.append(_lines("config", "Configuration that differs across ranks", view.config))
    parts.append(_unexplained(view.report.unexplained))
    parts.append(_sources(view.report))
    return _document(f"triage: {view.headline}", "\n".join(p for p in parts if p), view.version)


def _lines(anchor: str, title: str, lines: list[str]) -> str:
    if not lines:
        return ""
    return (f'<section id="{anchor}"><h2>{_e(title)}</h2><ul>'
            + "".join(f"<li>{_e(line)}</li>" for line in lines) + "</ul></section>")


def _document(title: str, body: str, version: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n"
        f"<script>{_SCRIPT}</script>\n</head>\n<body>\n{body}\n"
        f'<footer>triage {_e(version)} · a self-contained report: nothing here loads from the network</footer>\n'
        "</body>\n</html>\n"
    )


def _evidence_anchors(view: ReportView) -> dict[int, int]:
    """rank -> the index of its first evidence line (the `#ev-<n>` its pictures link to)."""
    first: dict[int, int] = {}
    for n, f in enumerate(view.findings):
        if f.rank is not None:
            first.setdefault(f.rank, n)
    return first


# --- the verdict ---------------------------------------------------------------------------------

def _verdict(view: ReportView, evidence_of: dict[int, int]) -> str:
    report, v = view.report, view.report.verdict
    hosts = len(view.hosts)
    read = sum(1 for s in report.sources if s.skipped is None)
    size = job_size(report)
    meta = (f"{size}" + (f" on {hosts} host{'s' if hosts != 1 else ''}" if hosts else "")
            + f", {read} source{'s' if read != 1 else ''} read")
    out = [f'<header><h1 id="verdict"><span class="badge s-{v.status.value}">{_e(view.status_label)}</span>'
           f"{_e(view.headline.split(': ', 1)[-1])}</h1>",
           f'<div class="meta">triage {_e(view.version)} — {_e(meta)}</div></header>',
           '<dl class="verdict">']
    if v.status is not Status.NO_FAILURE:
        out += [f"<dt>Phase</dt><dd>{_e(v.phase.value)}</dd>",
                f"<dt>Category</dt><dd>{_e(v.category.value)}</dd>",
                f"<dt>Confidence</dt><dd>{v.confidence:.2f}</dd>"]
    for c, named in zip(v.culprits, view.culprits, strict=True):
        who, _, reason = named.partition(" — ")
        link = f"#ev-{evidence_of[c.rank]}" if c.rank is not None and c.rank in evidence_of else None
        name = f'<span class="culprit-name">{_e(who)}</span>'
        if link is None and c.evidence:
            link = f"#ev-{next(n for n, f in enumerate(view.findings) if f.culprit == who)}"
        if link:
            name = f'<a href="{link}" class="culprit-name">{_e(who)}</a>'
        out.append(f'<dt>Culprit</dt><dd class="culprit">{name} — {_e(reason)}</dd>')
    if victims := victims_line(view):
        out.append(f"<dt>Victims</dt><dd>{_e(victims)}</dd>")
    out.append(f"<dt>Why</dt><dd>{_e(v.reasoning)}</dd>")
    if view.decision is not None and (d := report.decision) is not None:
        out.append(f'<dt>Decision</dt><dd id="decision" data-action="{_e(d.action)}"><strong>{_e(view.decision)}</strong> — '
                   f"{_e(d.reason)}</dd>")
    for title, items in (("Next steps", v.advice), ("Missing evidence", v.missing)):
        if items:
            out.append(f"<dt>{title}</dt><dd><ul>" + "".join(f"<li>{_e(i)}</li>" for i in items)
                       + "</ul></dd>")
    if v.lost:
        lost = "".join(f"<li>{_e(h.name)} ({h.score:.2f}): "
                       f"{_e(', '.join(_who_short(c.rank, c.host) for c in h.culprits) or 'no culprit')}</li>"
                       for h in v.lost[:4])
        out.append(f'<dt>Other hypotheses</dt><dd class="dim"><ul>{lost}</ul></dd>')
    out.append("</dl>")
    return "\n".join(out)


def _who_short(rank: int | None, host: str | None) -> str:
    if rank is None:
        return f"host {host}" if host else "?"
    return f"rank {rank}" + (f" ({host})" if host else "")


# --- the host-by-local-rank grid --------------------------------------------------------------------

def _legend(roles: set[str]) -> str:
    shown = [r for r in _ROLE_ORDER if r in roles or r in ("culprit", "failed", "victim", "ok", "missing")]
    return ('<div class="legend">' + "".join(f'<span><i class="r-{r}"></i>{_e(_ROLE_LABEL[r])}</span>'
                                              for r in shown) + "</div>")


def _cell(view: ReportView, rank: int, role: str, column: int, evidence_of: dict[int, int]) -> str:
    state = view.report.ranks[rank]
    local = state.local_rank if state.local_rank is not None else column
    tip = f"rank {rank}" + (f" · {state.host} local rank {local}" if state.host else "") + f" · {role}"
    if state.milestone is not None:
        tip += f" · got to {state.milestone.label}" + (f" (step {state.step})" if state.step is not None else "")
    if rank in evidence_of:
        return (f'<a class="cell r-{_e(role)}" data-rank="{rank}" href="#ev-{evidence_of[rank]}" '
                f'title="{_e(tip + " · click: evidence")}"></a>')
    return f'<span class="cell r-{_e(role)}" data-rank="{rank}" title="{_e(tip)}"></span>'


def _grid_row(view: ReportView, label: str, roles: list[str], ranks: list[int], note: str,
              evidence_of: dict[int, int]) -> str:
    cells = "".join(_cell(view, r, role, col, evidence_of) for col, (r, role) in enumerate(zip(ranks, roles,
                                                                                              strict=True)))
    return (f'<div class="grow"><span class="lbl">{_e(label)}</span><span class="cells">{cells}</span>'
            f'<span class="note">{_e(note)}</span></div>')


def _grid(view: ReportView, evidence_of: dict[int, int]) -> str:
    folds = grid(view.report)
    out = ['<section id="ranks"><h2>Ranks</h2>',
           _legend({r.role for r in view.ranks}),
           '<p class="dim">Hosts are rows, local ranks columns; runs of identical hosts are folded '
           "(click to unfold). Hover a cell for its rank; a culprit's cell links to its evidence.</p>",
           f'<div class="grid" data-ranks="{len(view.ranks)}">']
    for fold in folds:
        note = f"{fold.count}ranks {fmt_ranks(fold.ranks)}"
        if len(fold.rows) == 1:
            row = fold.rows[0]
            out.append(_grid_row(view, row.label, row.roles, row.ranks, note, evidence_of))
            continue
        pattern = "".join(f'<span class="cell r-{_e(role)}"></span>' for role in fold.rows[0].roles)
        inner = "".join(_grid_row(view, row.label, row.roles, row.ranks, f"ranks {fmt_ranks(row.ranks)}",
                                  evidence_of) for row in fold.rows)
        out.append(f'<details class="fold"><summary class="grow"><span class="lbl">{_e(fold.label)}</span>'
                   f'<span class="cells">{pattern}</span><span class="note">{_e(note)}</span></summary>'
                   f'<div class="inner">{inner}</div></details>')
    out.append("</div>")
    out.append(_progress(view.ranks))
    out.append("</section>")
    return "\n".join(out)


def _progress(ranks: list[RankView]) -> str:
    by_stop: dict[str, list[int]] = {}
    for r in ranks:
        if r.milestone is not None:
            by_stop.setdefault(r.milestone.replace("_", " ") + (f" (step {r.step})" if r.step is not None
                                                              else ""), []).append(r.rank)
    if not by_stop:
        return ""
    return ('<p class="dim">Got to: ' + "; ".join(f"{_e(label)} — rank{'s' if len(rs) > 1 else ''} "
                                                 f"{_e(fmt_ranks(rs))}" for label, rs in by_stop.items())
            + "</p>")


# --- the timeline --------------------------------------------------------------------------------

@dataclass
class _Story:
    """One timeline row: a rank, or ranks whose stories match (same role, milestone, marks)."""

    ranks: list[int]
    role: str
    got_to: str
    marks: dict[str, list[float]]  # kind -> the times of that mark, one per rank that has it
    untimed: list[str]
    start: list[float]
    end: list[float]


def _marks(events: list[Event]) -> tuple[dict[str, float], list[str], float | None, float | None]:
    timed = [e for e in events if e.time is not None]
    marks: dict[str, float] = {}
    untimed: list[str] = []

    def first(kind: str, kinds: tuple[Kind, ...], last: bool = False) -> None:
        hits = [e for e in events if e.kind in kinds]
        if not hits:
            return
        times = [_last(e) if last else e.time for e in hits if e.time is not None]
        if times:
            marks[kind] = max(times) if last else min(times)
        elif kind != "start":
            untimed.append({k: label for k, _, label in _MARKS}[kind])

    first("init", (Kind.INIT_START, Kind.INIT_DONE))
    first("progress", (Kind.PROGRESS,), last=True)
    first("error", (Kind.ERROR, Kind.PEER_ERROR, Kind.CULPRIT_NAMED))
    first("timeout", (Kind.TIMEOUT,))
    first("exit", (Kind.EXIT, Kind.CONSEQUENCE))
    in_flight = [e.time for e in events if e.rule_id == "fr-entry" and e.time is not None
                 and e.fields.get("fr_kept", "").startswith("in-flight")]
    if in_flight:  # the oldest op a dump shows still in flight: where the rank was waiting
        marks["fr"] = min(in_flight)
    start = min((e.time for e in timed if e.time is not None), default=None)
    end = max((_last(e) for e in timed), default=None)
    return marks, untimed, start, end


def _last(event: Event) -> float:
    """When the event was last seen: its last folded copy's time, else its own."""
    return event.last_time if event.last_time is not None else event.time or 0.0


def _stories(view: ReportView) -> list[_Story]:
    stories: dict[tuple[object, ...], _Story] = {}
    for r in view.ranks:
        marks, untimed, start, end = _marks(view.report.ranks[r.rank].events)
        got_to = (r.milestone or "no log").replace("_", " ") + (f" (step {r.step})" if r.step is not None else "")
        # a culprit always has a row of its own
        key = (r.role, got_to, tuple(sorted(marks)), tuple(untimed), start is None,
               r.rank if r.role == "culprit" else None)
        story = stories.setdefault(key, _Story([], r.role, got_to, {}, untimed, [], []))
        story.ranks.append(r.rank)
        for kind, t in marks.items():
            story.marks.setdefault(kind, []).append(t)
        if start is not None and end is not None:
            story.start.append(start)
            story.end.append(end)
    order = {role: i for i, role in enumerate(_ROLE_ORDER)}
    return sorted(stories.values(), key=lambda s: (order.get(s.role, len(order)), s.ranks[0]))


def _timeline(view: ReportView, evidence_of: dict[int, int]) -> str:
    stories = _stories(view)
    times = [t for s in stories for t in (*s.start, *s.end)]
    t0, t1 = (min(times), max(times)) if times else (0.0, 0.0)
    span = max(t1 - t0, 1e-9)

    def x(t: float) -> float:
        return 4 + (t - t0) / span * (_BAR_W - 8)

    legend = "".join(f'<span><svg width="10" height="10"><rect class="{cls}" width="10" height="10"/></svg>'
                     f"&nbsp;{_e(label)}</span>" for _, cls, label in _MARKS)
    out = ['<section id="timeline"><h2>Timeline</h2>',
           f'<div class="legend">{legend}</div>',
           f'<p class="dim">From {_e(_clock(t0))} to {_e(_clock(t1))} ({_e(_duration(t1 - t0))}), '
           "clock as the logs wrote it. Ranks whose stories match share a row; marks are at the "
           "earliest such time among them (a thin line shows the spread).</p>" if times else
           '<p class="dim">No line carried a time; the marks each rank logged are listed.</p>',
           '<table class="tl"><tr><th>ranks</th><th>role</th><th>got to</th><th>time</th><th>untimed</th></tr>']
    for story in stories[:_MAX_TIMELINE_ROWS]:
        who = (f"rank {story.ranks[0]}" if len(story.ranks) == 1
               else f"ranks {fmt_ranks(story.ranks)} ({len(story.ranks)})")
        svg = ""
        if story.start:
            a, b = x(min(story.start)), x(max(story.end))
            shapes = [f'<rect class="b-{_e(story.role)}" x="{a:.1f}" y="4" width="{max(b - a, 2):.1f}" '
                      f'height="10" rx="2"><title>{_e(who)}: {_e(_clock(min(story.start)))} to '
                      f"{_e(_clock(max(story.end)))}</title></rect>"]
            for kind, cls, label in _MARKS:
                ts = story.marks.get(kind)
                if not ts:
                    continue
                lo, hi = x(min(ts)), x(max(ts))
                if hi - lo > 1:
                    shapes.append(f'<line x1="{lo:.1f}" x2="{hi:.1f}" y1="9" y2="9" stroke="#333" '
                                  'stroke-width="1"/>')
                tip = f"{label}: {_clock(min(ts))}" + (f" … {_clock(max(ts))}" if len(ts) > 1 else "")
                shapes.append(f'<rect class="{cls}" x="{lo - 3:.1f}" y="3" width="6" height="12">'
                              f"<title>{_e(tip)}</title></rect>")
            svg = (f'<svg width="{_BAR_W}" height="18" role="img" aria-label="{_e(who)}">'
                   + "".join(shapes) + "</svg>")
            link = next((evidence_of[r] for r in story.ranks if r in evidence_of), None)
            if link is not None:
                svg = f'<a href="#ev-{link}" title="{_e(who)}: click for evidence">{svg}</a>'
        out.append(f'<tr data-ranks="{len(story.ranks)}"><td class="who">{_e(who)}</td>'
                   f'<td><span class="cell r-{_e(story.role)}"></span> {_e(story.role)}</td>'
                   f"<td>{_e(story.got_to)}</td><td class=\"bar\">{svg}</td>"
                   f'<td class="dim">{_e(", ".join(story.untimed))}</td></tr>')
    out.append("</table>")
    if len(stories) > _MAX_TIMELINE_ROWS:
        out.append(f'<p class="dim">… and {len(stories) - _MAX_TIMELINE_ROWS} more rows '
                   "(--format json lists every rank).</p>")
    out.append("</section>")
    return "\n".join(out)


def _clock(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def _duration(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}h {s // 60 % 60:02d}m {s % 60:02d}s" if s >= 3600 else f"{s // 60}m {s % 60:02d}s"


# --- evidence, unexplained errors, sources -----------------------------------------------------------

def _evidence(view: ReportView) -> str:
    if not view.findings:
        return ""
    out = ['<section id="evidence"><h2>Evidence</h2><ol class="evidence" start="0">']
    for n, f in enumerate(view.findings):
        rule = f'<span class="tag">rule <code>{_e(f.rule_id)}</code></span>' if f.rule_id else ""
        against = f'<span class="tag">against {_e(f.culprit)}</span>'
        if f.repeats:
            against += (f'<span class="tag" title="{_e(f.repeats)}">\u00d7{f.count:,} '
                        f'(lines {f.evidence.line}\u2013{f.last_line}){_e(f.during)}</span>')
        out.append(f'<li id="ev-{n}"><code>{_e(f.location.label)}</code>{rule}{against}'
                   f"<pre>{_e(_clip(f.evidence.text))}</pre></li>")
    out.append("</ol>")
    for r in view.ranks:
        if r.role == "culprit" and r.last_lines:
            out.append(f"<h3>Last lines of rank {r.rank}</h3><ul>")
            out += [f"<li><code>{_e(locate(ev).label)}</code><pre>{_e(_clip(ev.text))}</pre></li>"
                    for ev in r.last_lines]
            out.append("</ul>")
    out.append("</section>")
    return "\n".join(out)


def _unexplained(entries: list[Unexplained]) -> str:
    if not entries:
        return ""
    out = ['<section id="unexplained"><h2>Unexplained errors (no rule knows these)</h2>',
           "<table><tr><th>marker</th><th>message</th><th>lines</th><th>logged by</th><th>first</th></tr>"]
    for u in entries[:_MAX_UNEXPLAINED]:
        who = (f"rank {u.ranks[0]}" if len(u.ranks) == 1 else f"ranks {fmt_ranks(u.ranks)}" if u.ranks
               else "rank unknown") + (f" on {', '.join(u.hosts[:3])}" if u.hosts else "")
        out.append(f"<tr><td><code>{_e(u.marker)}</code></td><td><code>{_e(_clip(u.signature))}</code>"
                   f"<pre>{_e(_clip(u.first.text))}</pre></td><td>{u.count}</td><td>{_e(who)}</td>"
                   f"<td><code>{_e(u.first.source)}:{u.first.line}</code></td></tr>")
    out.append("</table>")
    if len(entries) > _MAX_UNEXPLAINED:
        out.append(f'<p class="dim">… and {len(entries) - _MAX_UNEXPLAINED} more (--format json lists them)</p>')
    out.append("</section>")
    return "\n".join(out)


def _sources(report: Report) -> str:
    skipped = [s for s in report.sources if s.skipped]
    read = len(report.sources) - len(skipped)
    out = [f'<section id="sources"><h2>Sources</h2><p>{read} read, {len(skipped)} skipped</p>']
    if skipped:
        out.append("<ul>" + "".join(f"<li><code>{_e(s.name)}</code>: {_e(s.skipped)}</li>"
                                    for s in skipped[:50]) + "</ul>")
    out.append("</section>")
    return "\n".join(out)
