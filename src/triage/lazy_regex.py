"""Module-level regexes compiled on first use, not at import.

The `regex` module compiles in Python (and `re` partly so): a hundred patterns at import cost tens
of milliseconds of every run, most of them for formats the logs at hand never show. `lazy_compile`
stands in for `regex.compile` at module level, `lazy_re` for `re.compile`: the pattern is compiled
the first time one of its methods or attributes is looked up, and each one looked up is then kept
on the holder, so later calls reach the compiled pattern's method directly (one dictionary
look-up, as for a module global).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, AnyStr, cast

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
    import regex  # imported with the first pattern used: `triage --help` needs none (~9 ms)

    return regex.compile(*args, **kwargs)


def lazy_compile(*args: Any, **kwargs: Any) -> regex.Pattern[str]:
    """`regex.compile(*args, **kwargs)`, done when the pattern is first used."""
    return cast("regex.Pattern[str]", _Lazy(_regex_compile, args, kwargs))


def lazy_re(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, done when the pattern is first used."""
    return cast("re.Pattern[AnyStr]", _Lazy(re.compile, (pattern, flags), {}))
