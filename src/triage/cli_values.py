"""Option values read without a pydantic validator for each.

Typer 0.29 coerces every value given on the command line through a pydantic `TypeAdapter` it builds
for that parameter when the command runs: pydantic's import and the adapters cost `triage analyze`
~0.1 s of its start-up, more than the commands' own imports. The values triage's commands take are
mostly text, lists of text and whole numbers: those are read here. Anything else (a path, a
choice, a float), and any value these do not accept as they are (`-j 0`, `-j x`), goes to typer's
own coercion, so its result and its error messages are typer's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args, get_origin

_TYPER = object()  # not read here: typer's coercion decides


class QuickValues:
    """The `coerce` of one parameter (what typer's `RuntimeParam` offers), for text and numbers."""

    def __init__(self, kind: str | None, low: int | None, high: int | None, typer_param: Callable[[], Any]) -> None:
        self.kind, self.low, self.high = kind, low, high
        self._typer_param = typer_param  # builds typer's own, with its adapter, when needed

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multiple = param.multiple or param.nargs == -1
        if value is None:
            return () if multiple else None  # as typer's: nothing given
        quick = self._read(value, multiple)
        if quick is _TYPER:
            return self._typer_param().coerce(value, param=param, ctx=ctx)
        return quick

    def _read(self, value: Any, multiple: bool) -> Any:
        if self.kind == "text" and not multiple and isinstance(value, str):
            return value
        if self.kind == "texts" and multiple and isinstance(value, (list, tuple)) \
                and all(isinstance(item, str) for item in value):
            return list(value)
        if self.kind == "int" and not multiple:
            number = value if type(value) is int else \
                int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None
            if number is not None and (self.low is None or number >= self.low) \
                    and (self.high is None or number <= self.high):
                return number
        return _TYPER


def quick_values(param: Any, typer_param: Callable[[], Any]) -> QuickValues:
    """`param`'s values read here when its type is text, a list of text, or an int (in a range,
    not clamped) with nothing else asked of it; others left to typer, whose coercion is built only
    once a value is given (an option left out costs nothing)."""
    desc = getattr(param, "type_descriptor", None)
    info = getattr(desc, "parameter_info", None)
    kind = None
    if desc is not None and info is not None and desc.file_annotation is None \
            and getattr(info, "parser", None) is None and getattr(info, "click_type", None) is None:
        annotation = desc.annotation
        if annotation is str:
            kind = "text"
        elif get_origin(annotation) is list and get_args(annotation) == (str,):
            kind = "texts"
        elif annotation is int and not getattr(info, "clamp", False):
            kind = "int"
    return QuickValues(kind, getattr(info, "min", None), getattr(info, "max", None), typer_param)
