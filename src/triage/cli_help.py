"""How `triage --help` and its sub-commands name option values and point at help after a usage error.

Typer 0.29 renders every value from its Python type: `{paths}...`, `<list[str]>`, `<list[Path]>`,
`<int range>`, `<str>`. `HelpGroup`, the class of the root group, restyles every parameter of every
command under it (sub-apps and commands registered later included) once the command tree is built,
so a new option renders well without a `metavar=` of its own:

* a choice shows its values, `[terminal|json]`;
* an int is `N`, a float `NUM`, with a range given as `[N>=1]`, `[1<=N<=65535]`;
* a path is `PATH` (a repeatable option says so in its help text);
* other text is the option's long name (`--host HOST`) or the argument's (`RULE_ID`);
* an argument is shown by its name only, `PATH...` for a variadic `paths`, and the usage line
  writes `PATH...` for a required argument and `[DIR]` for an optional one (not `{paths}...`).

A `metavar=` given in the code is kept as is.
"""

from __future__ import annotations

import datetime
from pathlib import PurePath
from typing import Any, get_args

from typer import _click
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from triage.cli_values import quick_values


def _number_range(param: TyperArgument | TyperOption) -> str | None:
    """The range of a number, written with its value name: `N>=1`, `1<=N<=65535`."""
    low, high, name = param.min, param.max, param.metavar or "VALUE"
    if low is None and high is None:
        return None
    if low is None:
        return f"{name}<={high}"
    if high is None:
        return f"{name}>={low}"
    return f"{low}<={name}<={high}"


def _runtime_param(param: Any, typer_param: Any) -> Any:
    """The coercion of a parameter's values: triage.cli_values' where it reads them, else typer's."""
    quick = param.__dict__.get("_quick_values")
    if quick is None:
        quick = param.__dict__["_quick_values"] = quick_values(param, typer_param)
    return quick


# Subclasses that only override methods (no mixin, no slots): `restyle` swaps a parameter's class
# for one of these, which keeps its state and layout. Each also reads its values without pydantic
# where it can (triage.cli_values).
class _Argument(TyperArgument):
    def get_runtime_param(self) -> Any:
        return _runtime_param(self, super().get_runtime_param)

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        return None  # the name column already says it

    def _rich_display_name(self) -> str:
        return (self.metavar or "VALUE") + ("..." if self.nargs != 1 else "")

    def _usage_display_name(self) -> str:
        name = self._rich_display_name()
        return name if self.required else f"[{name}]"

    def get_error_hint(self) -> str:
        return f"'{self._rich_display_name()}'"

    def _get_number_range_help_str(self) -> str | None:
        return _number_range(self)


class _Option(TyperOption):
    def get_runtime_param(self) -> Any:
        return _runtime_param(self, super().get_runtime_param)

    def display_type(self, ctx: _click.Context) -> str:
        return self.metavar or "VALUE"

    def _get_number_range_help_str(self) -> str | None:
        if self.count and self.min == 0 and self.max is None:
            return None
        return _number_range(self)


def value_name(param: TyperArgument | TyperOption, ctx: _click.Context | None = None) -> str:
    """The metavar a parameter gets from its type (and, for text, its name)."""
    desc = param.type_descriptor
    if desc.is_choice and desc.choices is not None:
        return "[" + "|".join(_choice(c) for c in desc.choices) + "]"
    annotation: Any = desc.annotation
    if desc.is_list and get_args(annotation):
        annotation = get_args(annotation)[0]
    if annotation is bool:
        return "BOOL"
    if annotation is int:
        return "N"
    if annotation is float:
        return "NUM"
    if annotation is datetime.datetime:
        return "TIME"
    if desc.is_path or (isinstance(annotation, type) and issubclass(annotation, PurePath)):
        return "PATH"
    longest = max((o for o in param.opts if o.startswith("--")), key=len, default=None)
    name = (longest.lstrip("-").replace("-", "_") if longest else param.name or "value").upper()
    if isinstance(param, TyperArgument) and param.nargs != 1 and name.endswith("S"):
        name = name[:-1]  # `paths...` is a list of PATH
    return name


def _help_option(option: Any) -> Any:
    """The `--help` option click makes when a command runs: an `_Option` too (read without pydantic)."""
    if isinstance(option, TyperOption) and not isinstance(option, _Option):
        option.__class__ = _Option
    return option


class _Command(TyperCommand):
    def get_help_option(self, ctx: _click.Context) -> Any:
        return _help_option(super().get_help_option(ctx))


class _Group(TyperGroup):
    def get_help_option(self, ctx: _click.Context) -> Any:
        return _help_option(super().get_help_option(ctx))


def restyle(command: _click.Command) -> None:
    """Give every parameter of `command` and of the commands under it the styled rendering."""
    if type(command) is TyperCommand:
        command.__class__ = _Command
    elif type(command) is TyperGroup:
        command.__class__ = _Group
    for param in command.params:
        if isinstance(param, TyperArgument) and not isinstance(param, _Argument):
            param.metavar = param.metavar or value_name(param)
            param.__class__ = _Argument
        elif isinstance(param, TyperOption) and not isinstance(param, _Option):
            if not (param.is_flag or param.count):
                param.metavar = param.metavar or value_name(param)
            param.__class__ = _Option
    for sub in getattr(command, "commands", {}).values():
        restyle(sub)


class HelpGroup(TyperGroup):
    """The root group: restyles the whole command tree it is built with (see the module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        restyle(self)

    def get_help_option(self, ctx: _click.Context) -> Any:
        return _help_option(super().get_help_option(ctx))


def help_command(exc: BaseException) -> str | None:
    """`triage <sub-command> --help` for the command a usage error is about (None when unknown)."""
    ctx = getattr(exc, "ctx", None)
    if not isinstance(ctx, _click.Context):
        return None
    names = []
    while ctx is not None and ctx.parent is not None:  # the root's name is how it was run: say `triage`
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(["triage", *reversed(names), "--help"])


def _choice(choice: Any) -> str:
    return str(getattr(choice, "value", choice))

