"""Module-level regexes compiled on first use, not at import.

The `regex` module compiles in Python: a hundred patterns at import cost tens of milliseconds of
every run, most of them for formats the logs at hand never show. `lazy_compile` stands in for
`regex.compile` at module level: the pattern is compiled the first time one of its methods or
attributes is looked up, and each one looked up is then kept on the holder, so later calls reach
the compiled pattern's method directly (one dictionary look-up, as for a module global).
"""

from __future__ import annotations

from typing import Any, cast

import regex


class _Lazy:
    """Compiles `regex.compile(*args, **kwargs)` when first asked for anything of the pattern."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._args, self._kwargs = args, kwargs
        self._compiled: regex.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        # Called only for names not on the holder yet: the first look-up of each one.
        if name.startswith("__"):
            raise AttributeError(name)  # copy/pickle probing for hooks: not the pattern's
        if self._compiled is None:
            self._compiled = regex.compile(*self._args, **self._kwargs)
        value = getattr(self._compiled, name)
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        return f"lazy_compile{self._args!r}"


def lazy_compile(*args: Any, **kwargs: Any) -> regex.Pattern[str]:
    """`regex.compile(*args, **kwargs)`, done when the pattern is first used."""
    return cast("regex.Pattern[str]", _Lazy(args, kwargs))
