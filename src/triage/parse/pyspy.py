"""py-spy dumps (`py-spy dump --pid N`, what `triage watch` takes of each rank), read as documents.

A dump only means something as a whole: each process, its threads, each thread's frames innermost
first. A dump is told by its content (`Process <pid>: <command>` then `Python v<version>`), with or
without the line `triage watch` writes above it (`triage watch: py-spy dump of rank 2 (pid 4242,
local_rank 2, world_size 4) on host node07 at 2025-05-01T10:00:00Z`), which says whose it is.

What a frame means is data: the rules of family `stack` (rules/stack/), whose id says the state a
frame puts its thread in (docs/watch.md §3). A thread's state is the first of STATES any of its
frames has (a collective anywhere in a thread is what the thread waits in, whatever lock it waits on
below it); a process is inside a collective when one of its threads is, and otherwise in its main
thread's state (`python`: running the job's own code, no frame known). Each process becomes one
event (rule id `stack-dump`) that says its state and quotes its deciding thread's top frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

from triage.lazy_regex import lazy_compile
from triage.model import Event, Evidence, Identity, Kind, Phase
from triage.parse.clock import parse_time
from triage.rules import Rule

RULE_ID = "stack-dump"
FAMILY = "stack"
MAX_BYTES = 8 << 20  # a dump of 500 threads of 100 frames is about 5 MB
FRAMES_QUOTED = 8  # frames of the deciding thread a process's event keeps (innermost first)
# Rule-id prefixes and the states they give, strongest first.
STATES = (("stack-collective", "collective"), ("stack-device-wait", "device-wait"),
          ("stack-data-loading", "data-loading"), ("stack-checkpoint-io", "checkpoint-io"),
          ("stack-exception", "exception"), ("stack-lock", "lock"), ("stack-sleep", "sleep"))
INSIDE = ("collective", "device-wait")  # states of a rank waiting on its peers or its device
_WORDS = {"collective": "inside a collective", "device-wait": "waiting on the device",
          "data-loading": "in data loading", "checkpoint-io": "in checkpoint I/O",
          "exception": "handling an exception", "lock": "blocked on a lock", "sleep": "sleeping",
          "python": "running its own code"}

_PROCESS = lazy_compile(r"^Process (?P<pid>\d+): (?P<cmd>.*)$")
_PYTHON = lazy_compile(r"^Python v\d+\.\d+")
_THREAD = lazy_compile(r'^Thread (?P<tid>0x[0-9A-Fa-f]+|\d+) \((?P<status>[\w+ ]+)\)(?:: "(?P<name>[^"]*)")?')
_FRAME = lazy_compile(r"^ {2,}(?P<frame>\S.*\))\s*$")
_HEADER = lazy_compile(
    r"^triage watch: py-spy dump of rank (?P<rank>\d+) \(pid (?P<pid>\d+)"
    r"(?:, local_rank (?P<local>\d+))?(?:, world_size (?P<world>\d+))?\)"
    r"(?: on host (?P<host>\S+))?(?: at (?P<time>\S+))?")
_ADDRESS = lazy_compile(r"^\s*0x[0-9a-fA-F]+ \(")  # a native frame with no symbol
_LOOKS = lazy_compile(r"^Process \d+: .*\n(?:Python v\d|Error)", regex.M)


def looks_like(head: str) -> bool:
    return bool(_LOOKS.search(head))


@dataclass
class _Thread:
    line: int
    text: str
    name: str
    frames: list[tuple[int, str]] = field(default_factory=list)  # (line number, line), innermost first


@dataclass
class _Process:
    line: int
    pid: int
    header: regex.Match[str] | None
    header_line: int | None
    threads: list[_Thread] = field(default_factory=list)


def state_rules(rules: list[Rule]) -> list[tuple[str, Rule]]:
    """The stack rules that give a frame a state, with it, strongest state first."""
    found = [(state, rule) for prefix, state in STATES for rule in rules
             if rule.family == FAMILY and (rule.id == prefix or rule.id.startswith(prefix + "-"))]
    return found


def classify(frame: str, rules: list[tuple[str, Rule]]) -> tuple[str, Rule, str] | None:
    """The state a frame line gives its thread, the rule that says so and the call it names."""
    for state, rule in rules:
        if not any(literal in frame for literal in rule.prefilter):
            continue
        try:
            match = rule.pattern.search(frame, timeout=0.05)
        except TimeoutError:
            continue
        if match:
            return state, rule, (match.groupdict().get("call") or "").strip()
    return None


def events(source: str, text: str, rules: list[Rule]) -> list[Event] | None:
    """One event per process of the dump, or None when the text holds no dump after all."""
    processes = _parse(text.splitlines())
    if not processes:
        return None
    classified = state_rules(rules)
    return [_event(source, p, classified) for p in processes]


def _parse(lines: list[str]) -> list[_Process]:
    processes: list[_Process] = []
    header: tuple[int, regex.Match[str]] | None = None
    thread: _Thread | None = None
    for number, line in enumerate(lines, 1):
        if m := _HEADER.match(line):
            header, thread = (number, m), None
        elif m := _PROCESS.match(line):
            near = header if header and number - header[0] <= 2 else None
            processes.append(_Process(number, int(m["pid"]), near[1] if near else None,
                                      near[0] if near else None))
            header, thread = None, None
        elif processes and (m := _THREAD.match(line)):
            thread = _Thread(number, line.strip(), m["name"] or m["tid"])
            processes[-1].threads.append(thread)
        elif thread is not None and _FRAME.match(line):
            thread.frames.append((number, line.rstrip()))
        elif line.strip() and not _PYTHON.match(line):
            thread = None
    return processes


def _thread_state(thread: _Thread, rules: list[tuple[str, Rule]]) -> tuple[int, str, str, int | None]:
    """(strength, state, call, index of the first frame quoted) of one thread; strength 99 for none.

    The strongest state any frame gives wins; among its frames the innermost starts the quote and
    the outermost names the call (the Python API call above the native frames of one collective).
    """
    best: tuple[int, str, str, int | None] = (99, "python", "", None)
    order = [state for _, state in STATES]
    for index, (_, frame) in enumerate(thread.frames):
        found = classify(frame, rules)
        if found is None:
            continue
        strength = order.index(found[0])
        if strength < best[0]:
            best = (strength, found[0], found[2], index)
        elif strength == best[0]:
            best = (strength, best[1], found[2] or best[2], best[3])
    return best


def _event(source: str, process: _Process, rules: list[tuple[str, Rule]]) -> Event:
    states = [(_thread_state(t, rules), t) for t in process.threads]
    main = next((t for t in process.threads if t.name == "MainThread"), None) or \
        next((t for t in process.threads if t.text.startswith(f"Thread {process.pid} ")), None)
    inside = [(s, t) for s, t in states if s[1] in INSIDE]
    if inside:
        (_, state, call, at), thread = min(inside, key=lambda st: (st[1] is not main, st[0][0]))
    elif main is not None:
        (_, state, call, at), thread = next((s, t) for s, t in states if t is main)
    elif states:
        (_, state, call, at), thread = min(states, key=lambda st: st[0][0])
    else:
        state, call, at, thread = "unknown", "", None, None
    identity = Identity(pid=process.pid)
    identity.learnt_from["pid"] = "py-spy dump"
    head = process.header
    when = None
    if head is not None:
        identity.rank = int(head["rank"])
        identity.learnt_from["rank"] = "triage watch snapshot header"
        if head["local"] is not None:
            identity.local_rank = int(head["local"])
            identity.learnt_from["local_rank"] = "triage watch snapshot header"
        if head["host"]:
            identity.host = head["host"]
            identity.learnt_from["host"] = "triage watch snapshot header"
        when = parse_time(head["time"]) if head["time"] else None
    frames = [f for f in thread.frames[at or 0:] if not _ADDRESS.match(f[1])] if thread else []
    frames = frames[:FRAMES_QUOTED] or (thread.frames[:FRAMES_QUOTED] if thread else [])
    quoted = frames[0][1].strip() if frames else "(no Python frame)"
    fields = {"stack_state": state, "pid": str(process.pid),
              "stack": "\n".join(f"{n}\t{t.strip()}" for n, t in frames)}
    if thread is not None:
        fields["thread"] = thread.name
    if call:
        fields["stack_call"] = call
    if head is not None and head["world"] is not None:
        fields["world_size"] = head["world"]
    where = f"{_WORDS.get(state, state)}" + (f" ({call})" if call and state in INSIDE else "")
    who = f"rank {head['rank']}" if head is not None else f"process {process.pid}"
    message = f"{who} {where}; {thread.name if thread else 'no thread'} at {quoted}"
    cite, cited = frames[0] if frames else ((thread.line, thread.text) if thread else (process.line, f"Process {process.pid}"))
    return Event(rule_id=RULE_ID, kind=Kind.INFO, phase=Phase.UNKNOWN, severity="info", message=message,
                 identity=identity, evidence=Evidence(source, cite, cited.strip(), rule_id=RULE_ID),
                 fields=fields, time=when[0] if when else None, family=FAMILY)
