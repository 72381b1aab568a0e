"""Module-level regexes compiled on first use, not at import.

The `regex` module compiles in Python (and `re` partly so): a hundred patterns at import cost tens
of milliseconds of every run, most of them for formats the logs at hand never show. `lazy_compile`
stands in for `regex.compile` at module level, `lazy_re` for `re.compile`: the pattern is compiled
the first time one of its methods or attributes is looked up, and each one looked up is then kept
on the holder, so later calls reach the compiled pattern's method directly (one dictionary
look-up, as for a module global).

A `regex` pattern is also kept for the next runs (`compile_regex`, which `lazy_compile` and the
rules use): its parser is Python, ~0.5 ms a pattern, ~30 ms of a run that meets 70 of them. What
regex's own pickling keeps of a pattern (`Pattern._pickled_data`, the arguments of its C compiler)
is written to the cache folder (triage.cache) at exit, under a name holding regex's and Python's
versions, and the next run makes the pattern from it as unpickling would (`_regex.compile`, a few
microseconds), without pickle. An entry is used only where the file's digest holds and every part
has the type regex gave it; anything else is compiled again.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, AnyStr, cast

from triage import cache

if TYPE_CHECKING:
    import regex


class _Lazy:
    """Compiles `compile(*args, **kwargs)` when first asked for anything of the pattern."""

    def __init__(self, compiler: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._compile, self._args, self._kwargs = compiler, args, kwargs
        self._compiled: Any = None

    def __getattr__(self, name: str) -> Any:
        # Called only for names not on the holder yet: the first look-up of each one.
        if name.startswith("__"):
            raise AttributeError(name)  # copy/pickle probing for hooks: not the pattern's
        if self._compiled is None:
            self._compiled = self._compile(*self._args, **self._kwargs)
        value = getattr(self._compiled, name)
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        return f"lazy {'regex' if self._compile is _regex_compile else 're'} pattern {self._args!r}"


def _regex_compile(*args: Any, **kwargs: Any) -> Any:
    if not kwargs and len(args) in (1, 2) and isinstance(args[0], str):
        return compile_regex(*args)
    import regex

    return regex.compile(*args, **kwargs)


def lazy_compile(*args: Any, **kwargs: Any) -> regex.Pattern[str]:
    """`regex.compile(*args, **kwargs)`, done when the pattern is first used."""
    return cast("regex.Pattern[str]", _Lazy(_regex_compile, args, kwargs))


MAX_KEPT = 1024  # patterns in the file (~0.6 KB each): every built-in rule and module pattern twice over
_kept: dict[str, Any] | None = None  # what earlier runs kept: read with the first pattern compiled
_added: dict[str, list[Any]] = {}  # what this run compiled, written at exit
_made: dict[str, Any] = {}


def compile_regex(pattern: str, flags: int = 0) -> regex.Pattern[str]:
    """`regex.compile(pattern, flags)`, made from what an earlier run kept where it can."""
    import regex  # imported with the first pattern used: `triage --help` needs none (~9 ms)

    key = f"{int(regex.DEFAULT_VERSION)} {int(flags)} {pattern}"
    if (made := _made.get(key)) is not None:
        return cast("regex.Pattern[str]", made)
    kept = _kept_entries().get(key)
    made = _from_kept(pattern, kept) if kept is not None else None
    if made is None:
        made = regex.compile(pattern, flags)
        if (data := _kept_data(made)) is not None:
            if not _added:
                import atexit

                atexit.register(_save)
            _added[key] = data
    _made[key] = made
    return cast("regex.Pattern[str]", made)


def _file_name() -> str:
    import regex

    return f"regex-{cache.key(regex.__version__, sys.version)}.json"


def _kept_entries() -> dict[str, Any]:
    global _kept
    if _kept is None:
        _kept = _read()
    return _kept


def _read() -> dict[str, Any]:
    """The file's entries, or none where it is missing, damaged or not what this version writes."""
    data = cache.read(_file_name())
    if data is None:
        return {}
    digest, _, body = data.partition(b"\n")
    if digest.decode("ascii", "replace") != cache.digest(body):
        return {}
    try:
        entries = json.loads(body)
    except ValueError:
        return {}
    return entries if isinstance(entries, dict) else {}


def _kept_data(pattern: Any) -> list[Any] | None:
    """What is kept of a compiled pattern: its C compiler's arguments, but for the source."""
    data = getattr(pattern, "_pickled_data", None)
    if not (isinstance(data, tuple) and len(data) == 11):
        return None  # not the layout this module knows: keep nothing
    _, flags, code, group_index, index_group, named_lists, list_indexes, req_offset, req_chars, req_flags, groups = data
    import regex

    if named_lists or list_indexes or flags & regex.LOCALE or not isinstance(code, bytes):
        return None  # named lists, locale: made anew each time
    kept = [int(flags), code.hex(), group_index, [list(p) for p in sorted(index_group.items())], req_offset,
            list(req_chars), req_flags, groups]
    return kept if _from_kept(pattern.pattern, kept, check_only=True) else None


def _from_kept(pattern: str, kept: Any, *, check_only: bool = False) -> Any:
    """The pattern made from a kept entry, or None where the entry is not one this module writes
    (`check_only`: whether it is one)."""
    if not (isinstance(kept, list) and len(kept) == 8):
        return None
    flags, code, group_index, index_group, req_offset, req_chars, req_flags, groups = kept
    if not (all(type(v) is int for v in (flags, req_offset, req_flags, groups)) and isinstance(code, str)
            and isinstance(req_chars, list) and all(type(v) is int for v in req_chars)
            and isinstance(group_index, dict)
            and all(isinstance(k, str) and type(v) is int for k, v in group_index.items())
            and isinstance(index_group, list)
            and all(isinstance(p, list) and len(p) == 2 and type(p[0]) is int and isinstance(p[1], str)
                    for p in index_group)):
        return None
    if check_only:
        return True
    from regex import _regex  # what unpickling a pattern calls (regex's copyreg entry)

    try:
        return _regex.compile(pattern, flags, bytes.fromhex(code), group_index, dict(index_group), {}, [],
                              req_offset, tuple(req_chars), req_flags, groups)
    except (TypeError, ValueError, OverflowError, RuntimeError):
        return None


def _save() -> None:
    """This run's patterns added to the file (as it is now: other runs may have added theirs)."""
    entries = {**_read(), **_added}
    if len(entries) > MAX_KEPT:
        entries = dict(_added)
    try:
        body = json.dumps(entries, separators=(",", ":")).encode("ascii")
    except (TypeError, ValueError):  # not what _kept_data gives: keep nothing rather than fail at exit
        return
    cache.write(_file_name(), cache.digest(body).encode("ascii") + b"\n" + body)


def lazy_re(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, done when the pattern is first used."""
    return cast("re.Pattern[AnyStr]", _Lazy(re.compile, (pattern, flags), {}))
