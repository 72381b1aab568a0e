"""The open world: lines that their own format marks as errors, whether or not a rule knows them.

A rule recognises the lines someone has written it for. Everything else used to vanish: a job whose
only error is an `NCCL WARN` no rule knows, a CANN `[ERROR]` record with an unfamiliar code or an
exception no rule names was reported healthy. Here each log family's own severity mark is read, so
the scanner can turn such a line into a `Kind.UNEXPLAINED` event when no rule explains it, and the
report can list it (folded by signature) with the command that drafts a rule for it.

The format decides, never the words: a line whose envelope gives a severity is an error exactly
when that severity is one (`NCCL WARN`, c10/glog `E`/`F`, CANN `[ERROR]`/`[CRITICAL]`, Python
logging `ERROR`/`CRITICAL`), and a line whose envelope says INFO/WARNING is never one, whatever it
says ("error" in an `NCCL INFO` line, a `[W…]` c10 warning, a `UserWarning:`). Lines without a
severity envelope are marked only by shapes that mean failure wherever they appear: an exception's
last line, `terminate called …`, `Fatal Python error:`, a shell's signal report (`Segmentation fault
(core dumped)`, `Killed`), a Slurm `error:`, a CANN error code (`EI0002:`), a non-zero exit status.

A user's `logging.error(...)` line counts: its format says ERROR. A job that logs handled errors at
that level gets them listed; a rule of kind `info` for the message (`triage rules new`, then edit
its kind) explains them away.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

from triage.lazy_regex import lazy_compile

UNEXPLAINED_RULE_ID = "unclassified-error"

# Literals that every line a marker can mark contains at least one of: the scanner adds them to its
# prefilter needles, so such lines are looked at even when no rule's literal is on them.
MARKER_LITERALS: tuple[str, ...] = (
    "NCCL WARN",
    # A logging level stands as a word (`ERROR:root:`, ` ERROR `, `[ERROR]`, `| ERROR |`), never
    # inside one (`TORCH_NCCL_ASYNC_ERROR_HANDLING=1` in every launch banner).
    "[ERROR]", "[CRITICAL]", "ERROR ", "ERROR:", " ERROR", "CRITICAL",
    "srun: error", "slurmstepd: error",
    "Traceback (most recent call last)", "Error: ", "Exception: ",
    "terminate called",
    "Fatal Python error", "core dumped", "Segmentation fault", "Aborted", "Bus error",
    "Floating point exception", "Illegal instruction",
    "Killed",
    "exit code", "Exit code", "Exit Code", "exit status", "Exit status", "exitcode", "exit_code",
    "return code", "exited with code", "Exited with code",
)
# Marks that have no literal: c10 `[E709 17:05:38…` / `[E ProcessGroupNCCL.cpp:414]`, glog
# `E0709 17:05:38.16 …` (and the same with F), CANN error codes `EI0002`. These are prefilters, looser
# than what `classify` accepts (it decides), and kept cheap for the first pass: ASCII classes, no
# bounded repeats (each costs hyperscan a slower engine). Each begins with a literal character
# (escaped if need be), as the Python engine's trie needs. They are POSIX EREs too: bench/bench.py
# hands them to `grep -E` as they are.
MARKER_SHAPES: tuple[str, ...] = (
    r"E[0-9]{3}[0-9 ]",
    r"\[E ",  # begins at `[`: `E ` alone is everywhere (`COMPLETE `)
    r"F[0-9]{3}[0-9 ]",
    r"\[F ",
    r"E[A-Z][0-9]{4}",
)


@dataclass(frozen=True)
class Mark:
    """What a line's own format says: it is an error, of this kind, with this message."""

    marker: str  # nccl-warn, c10-error, cann-error, log-error, slurm-error, python-exception, …
    family: str  # the family of the writer (nccl, pytorch, torchrun, hccl, python, slurm)
    message: str  # the message without its envelope (time, writer, severity, source location)
    anchor: str  # a regex for where the message sits in the peeled line (for drafting a rule)
    near_miss: str  # the same line marked as no error (a rule's `nomatch`), or "" when none is


# --- envelopes that carry a severity ---------------------------------------------------------------

_NCCL_WARN = lazy_compile(r"(?:^|\s)NCCL WARN ?(?P<msg>.*)")
_NCCL_QUIET = lazy_compile(
    r"^(?:\[\d{4}-\d\d-\d\d[^\]]*\] )?[A-Za-z0-9][\w.-]*:\d+:\d+ (?:\[\d+\] )?.{0,80}?NCCL (?:INFO|TRACE|CALL|VERSION)\b")
_C10 = lazy_compile(
    r"^\s?\[(?P<sev>[FEWIV])(?:\d{3,4} \d\d:\d\d:\d\d(?:\.\d+)?)? (?P<file>[\w./-]+):\d+\] ?(?P<msg>.*)"
    r"|^(?P<sev>[FEWIV])\d{4} \d\d:\d\d:\d\d(?:\.\d+)? +\d+ (?P<file>[\w./-]+):\d+\] ?(?P<msg>.*)")
_PG_PREFIX_RE = r"(?:\[(?:PG [^\]]*?\s?)?Rank \d+\]\s*)?"
_PG_PREFIX = lazy_compile(r"^\[(?:PG [^\]]*?\s?)?Rank \d+\]\s*")
# CANN `[ERROR] HCCL(pid,name):ts [file:line][tid]msg`; MindSpore's glog envelope `[ERROR] DEVICE(pid,tid,python):ts
# [mindspore/…/file.cc:line] Function] msg` and its Python logger's `[ERROR] ME(pid:thread,MainProcess):ts
# [mindspore/…/file.py:line] msg` (docs/formats.md §5.2, §5.10): the MindSpore function name is envelope too.
_CANN = lazy_compile(
    r"^\[(?P<level>[A-Z]+)\]\s?(?P<module>[A-Z][A-Z0-9_]*)\(\d+[,:][^)]*\):\s?"
    r"\d{4}-\d\d-\d\d[-\s]\d\d:\d\d:\d\d(?:\.\d+)*\s?"
    r"(?:\[mindspore/[^\]\s]*:\d+\]\s?(?:[A-Za-z_~][\w~]*(?:\(\))?\]\s)?"
    r"|(?:\[[^\]\s]*:\d+\])?\s?(?:\[(?:tid:)?\d+\]|tid:\d+,|\d+ (?=\S))?)\s?(?P<msg>.*)")
# torch_npu's error footer: `[ERROR] 2024-05-21-11:57:54 (PID:927000, Device:3, RankID:3) ERR02200 …`.
_NPU_FOOTER = lazy_compile(
    r"^\[ERROR\] \d{4}-\d\d-\d\d-\d\d:\d\d:\d\d \(PID:\d+, Device:-?\d+, RankID:-?\d+\) (?P<msg>.*)")
_BRACKET_LEVEL = lazy_compile(r"^\s?\[(?P<level>ERROR|CRITICAL|FATAL|WARNING|WARN|INFO|DEBUG|EVENT|TRACE|NOTICE)\]\s?(?P<msg>.*)")
_ASCEND_WORDS = lazy_compile(r"HCCL|HCCP|NPU|ACL|CANN|ERR\d{5}|\bE[A-Z]\d{4}\b")
_LEVELS = r"DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|FATAL"
# Python logging: `ERROR:name:msg` (basicConfig), or a timestamp followed within a few fields by
# the level (`- train - ERROR - `, ` ERROR train: `, `: [ERROR] `, `| ERROR    | `). The first
# level word after the timestamp is the record's level.
_LOGGING = lazy_compile(
    r"^(?:(?P<level>" + _LEVELS + r"):[\w.]*:(?P<msg>.*)"
    r"|\[?\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,:]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?.{0,80}?"
    r"(?<![\w-])\[?(?P<level>" + _LEVELS + r")\]?(?![\w-])\s*(?:[-|:]\s*)?(?P<msg>.*))\s*$")

# --- shapes that mean failure wherever they appear ----------------------------------------------

_PY_WARNING = lazy_compile(r"^\S+:\d+: \w*Warning: ")
_SLURM = lazy_compile(r"^(?P<tool>srun|slurmstepd|sbatch|salloc)(?:-[\w.-]+)?(?:\[\d+\])?: error: (?P<msg>.*)")
_TERMINATE = lazy_compile(
    r"terminate called (?:after throwing an instance of '[^']*'|without an active exception|recursively)")
_FATAL_PY = lazy_compile(r"Fatal Python error: (?P<msg>.*\S)")
# bash's report of a job ended by a signal: the status alone, or `{script}: line {n}: {pid} {status}`
# padded to a column before the command (`Killed` is separate: python-shell-killed knows it).
_SHELL_SIGNAL = lazy_compile(
    r"^(?:[^\s:]+: (?:line \d+: )?)?\s*(?:\d+ )?(?P<msg>Segmentation fault|Aborted|Bus error|Floating point exception"
    r"|Illegal instruction|Trace/breakpoint trap)(?:(?P<core>\s+\(core dumped\))(?:\s+\S.*)?|\s{2,}\S.*)?\s*$")
_CORE_DUMPED = lazy_compile(r"\(core dumped\)")
_KILLED = lazy_compile(r"^(?:[^\s:]+: (?:line \d+: )?)?\s*(?:\d+ )?(?P<msg>Killed)(?:\s{2,}\S.*)?\s*$")
_EXCEPTION = lazy_compile(
    r"^\s?(?P<msg>(?:[A-Za-z_]\w{0,100}\.){0,16}[A-Z]\w{0,100}(?:Error|Exception)(?:: .*)?)\s*$")
_ERROR_CODE = lazy_compile(r"(?<![\w])(?P<code>E[A-Z]\d{4})(?![\w])")
_EXIT_STATUS = lazy_compile(
    r"(?i:\b(?:exit(?:ed|s)? with (?:exit |return )?(?:code|status)|exit[ _]?(?:code|status)|return ?code))"
    r"(?:\s{0,8}(?:[:=]|of|is))?\s{0,8}(?P<code>[-+]?\d+)\b")

TRACEBACK = lazy_compile(r"^\s?Traceback \(most recent call last\):\s*$")
# The last line of a traceback: `Name: message` (a builtin is capitalised; other exceptions print
# their module path) or a bare name that reads like an exception.
# (Names are bounded: a line of `a.a.a.…` must not make the engine try every split.)
_NAME = r"[A-Za-z_]\w{0,100}"
_EXCEPTION_END = lazy_compile(
    r"^\s?(?P<msg>(?:(?:" + _NAME + r"\.){1,16}" + _NAME + r"|[A-Z]\w{0,100})(?::\s.*|:)"
    r"|(?:" + _NAME + r"\.){0,16}(?:[A-Z]\w{0,100}(?:Error|Exception|Interrupt|Exit|Warning)"
    r"|Stop(?:Async)?Iteration))\s*$")

_GENERIC_ANCHOR = r"^\s*"


def classify(text: str) -> Mark | None:
    """The error mark of a line (launcher prefixes already peeled), or None when it carries none."""
    if "NCCL " in text:
        if "NCCL WARN" in text and (m := _NCCL_WARN.search(text)):
            near = text.replace("NCCL WARN", "NCCL INFO", 1)
            return Mark("nccl-warn", "nccl", m["msg"], r"NCCL WARN ", near)
        if _NCCL_QUIET.match(text):
            return None
    if m := _C10.match(text):
        if m["sev"] not in "EF":
            return None
        family = "torchrun" if "torch/distributed/elastic" in m["file"] or m["file"].endswith("run.py") else "pytorch"
        sev_at = m.start("sev")
        near = text[:sev_at] + "W" + text[sev_at + 1:]
        anchor = r"^\s?\[[EF][^\]]*\]\s?" if text.lstrip().startswith("[") else r"^[EF]\d{4} [^\]]*\]\s?"
        # The process-group prefix (`[PG ID 0 PG GUID 0(default_pg) Rank 3] `) says which group and
        # rank: it is part of the envelope, so the same message from every group folds together.
        message = _PG_PREFIX.sub("", m["msg"], count=1)
        return Mark("c10-error", family, message, anchor + _PG_PREFIX_RE, near)
    if text.startswith("[") or text.startswith(" ["):
        if m := _CANN.match(text):
            if m["level"] not in ("ERROR", "CRITICAL"):
                return None
            near = text.replace(f"[{m['level']}]", "[INFO]", 1)
            return Mark("cann-error", "hccl", f"{m['module']} {m['msg']}".strip(), r"^\[(?:ERROR|CRITICAL)\].*?", near)
        if m := _NPU_FOOTER.match(text):
            return Mark("cann-error", "hccl", m["msg"], r"^\[ERROR\].*?", text.replace("[ERROR]", "[INFO]", 1))
        if (m := _BRACKET_LEVEL.match(text)) and _LOGGING.match(text) is None:
            level = m["level"]
            if level not in ("ERROR", "CRITICAL", "FATAL"):
                return None
            near = text.replace(f"[{level}]", "[INFO]", 1)
            if _ASCEND_WORDS.search(m["msg"]):
                return Mark("cann-error", "hccl", m["msg"], r"^\s?\[(?:ERROR|CRITICAL)\].*?", near)
            return Mark("log-error", "python", m["msg"], r"^\s?\[(?:ERROR|CRITICAL|FATAL)\].*?", near)
    if m := _LOGGING.match(text):
        level = m["level"]
        if level not in ("ERROR", "CRITICAL", "FATAL"):
            return None
        family = "torchrun" if "torch.distributed.elastic" in text else "python"
        near = text[:m.start("level")] + "INFO" + text[m.end("level"):]
        return Mark("log-error", family, m["msg"] or level, r"(?<![\w-])(?:ERROR|CRITICAL|FATAL)(?![\w-]).*?", near)
    return _content_mark(text)


def _content_mark(text: str) -> Mark | None:
    """Marks of lines that carry no severity envelope: shapes that mean failure by themselves."""
    if text[:4].isspace() or _PY_WARNING.match(text):
        return None  # source lines quoted in a traceback; `path:line: UserWarning: …`
    near = "note: " + text.strip()
    if "error" in text and (m := _SLURM.match(text)):
        return Mark("slurm-error", "slurm", f"{m['tool']}: error: {m['msg']}", _GENERIC_ANCHOR, near)
    if "terminate called" in text and (m := _TERMINATE.search(text)):
        return Mark("terminate", "pytorch", m[0], _GENERIC_ANCHOR, near)
    if "Fatal Python error" in text and (m := _FATAL_PY.search(text)):
        return Mark("fatal-signal", "python", f"Fatal Python error: {m['msg']}", _GENERIC_ANCHOR, near)
    if m := _SHELL_SIGNAL.match(text):
        dumped = " (core dumped)" if m["core"] else ""
        return Mark("fatal-signal", "python", m["msg"] + dumped, _GENERIC_ANCHOR, near)
    if "core dumped" in text and _CORE_DUMPED.search(text):
        return Mark("fatal-signal", "python", text.strip(), _GENERIC_ANCHOR, near)
    if "Killed" in text and (m := _KILLED.match(text)):
        return Mark("killed", "python", m["msg"], _GENERIC_ANCHOR, near)
    if ("Error" in text or "Exception" in text) and (m := _EXCEPTION.match(text)):
        return Mark("python-exception", "python", m["msg"], _GENERIC_ANCHOR, near)
    if "E" in text and (m := _ERROR_CODE.search(text)):
        return Mark("error-code", "hccl", text.strip(), _GENERIC_ANCHOR, near)
    lowered = text.lower()
    if (("exit" in lowered or "return" in lowered) and (m := _EXIT_STATUS.search(text))
            and int(m["code"]) != 0):
        family = "slurm" if "srun" in text else "torchrun" if "exitcode" in text else "python"
        return Mark("exit-status", family, text.strip(), _GENERIC_ANCHOR, near)
    return None


def exception_end(text: str) -> Mark | None:
    """The mark of a traceback's last line (`Type: message`, or a bare exception name)."""
    if m := _EXCEPTION_END.match(text):
        return Mark("python-exception", "python", m["msg"], _GENERIC_ANCHOR, "note: " + text.strip())
    return None


# --- folding what varies -----------------------------------------------------------------------

_MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
_DAYS = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"
# The parts of a message that change from rank to rank and run to run. Order matters: the first
# alternative that matches at a position wins (a time before its numbers, an address before hex).
_VARYING = lazy_compile(
    r"(?P<keep>(?<![\w])(?:E[A-Z]\d{4}|ERR\d{5})(?![\w]))"
    r"|(?P<time>\d{4}-\d\d-\d\d[-T _]\d\d:\d\d:\d\d(?:[.,:]\d+)*(?:Z|[+-]\d\d:?\d\d)?"
    r"|(?<![\w:])\d\d:\d\d:\d\d(?:[.,]\d+)*"
    r"|(?:" + _DAYS + r") (?:" + _MONTHS + r") +\d+ \d\d:\d\d:\d\d(?: \d{4})?)"
    r"|(?P<ip>(?:(?:::ffff:)?(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])"
    r"|(?<![\w.:])[0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{1,4})*::(?:[0-9a-fA-F]{1,4}(?::[0-9a-fA-F]{1,4})*)?(?![\w:]))"
    r"(?:<\d+>)?)"
    r"|(?P<addr>0x[0-9a-fA-F]+)"
    r"|(?P<id>(?<![\w.-])(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{5,})(?![\w.]))"
    r"|(?P<n>(?<![A-Za-z0-9])\d+(?:\.\d+)*(?:[eE][-+]?\d+)?"
    r"|(?<=(?<![A-Za-z])(?i:rank|node|host|gpu|npu|cuda|dev|device|worker|task|proc|pid|tid|thread)_?)\d+)")
_PLACEHOLDER = {"time": "<time>", "ip": "<ip>", "addr": "<addr>", "id": "<id>", "n": "<n>"}
_SPACE = lazy_compile(r"\s+")
_HAS_DIGIT = lazy_compile(r"\d")
MAX_SIGNATURE = 240


def pieces(message: str) -> Iterator[tuple[str | None, str]]:
    """The message cut into (kind, text): kind None for literal text, else what varies there."""
    if not _HAS_DIGIT.search(message):  # everything that varies holds a digit
        yield None, message
        return
    pos = 0
    for m in _VARYING.finditer(message):
        kind = m.lastgroup
        if kind == "keep":
            continue
        if m.start() > pos:
            yield None, message[pos:m.start()]
        yield kind, str(m[0])
        pos = m.end()
    if pos < len(message):
        yield None, message[pos:]


@functools.lru_cache(maxsize=4096)  # the same message comes from many ranks
def signature(message: str) -> str:
    """The message with what varies folded (`<n>`, `<ip>`, `<addr>`, `<id>`, `<time>`), so that the
    same message from different ranks, hosts and runs reads the same."""
    out = "".join(text if kind is None else _PLACEHOLDER[kind] for kind, text in pieces(message))
    out = str(_SPACE.sub(" ", out)).strip()
    return out if len(out) <= MAX_SIGNATURE else out[:MAX_SIGNATURE - 1] + "…"
