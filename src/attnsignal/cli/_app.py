"""The ``attnsignal`` application object that every sub-command module registers on, and
the exception for bad input that is not a :class:`~attnsignal.config.ConfigError`.

Its own module so that the command modules import it without importing the package that
imports them (:mod:`attnsignal.cli` registers the commands and runs the app).
"""

from __future__ import annotations

import re
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

__all__ = ["app", "UsageFailure", "HelpCommand"]

#: a ``[`` that rich would read as the start of markup (``[slurm]`` vanished from help texts)
_OPEN_BRACKET = re.compile(r"(?<!\\)\[")
#: the metavar of an option without one, by the type tag typer would show
_METAVARS = {"<path>": "PATH", "<int>": "INT", "<float>": "NUMBER", "<str>": "TEXT",
             "<bool>": ""}


class _Positional(TyperArgument):
    """A positional argument as the help shows it: its name (``DIR...``, ``SPEC|status``),
    with no type tag beside it (typer writes ``<str>``, ``<list[Path]>``) and no braces in the
    usage line (``compare [OPTIONS] DIR...``, ``[DIR]`` when optional)."""

    def display_type_rich(self, ctx: Any) -> None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        if self.nargs != 1 and not name.endswith("..."):
            name += "..."
        return name if self.required else f"[{name}]"


def _plain(param: Any, ctx: Any) -> Any:
    """``param`` as the help shows it: no metavar on a flag (typer writes ``<bool>``), an
    upper-case type name where an option has none (not ``<str>``), a positional argument by
    its name alone (:class:`_Positional`), and its help with every ``[`` escaped, so that rich
    prints ``[slurm]`` as written instead of taking it for markup. Idempotent: an escaped
    ``\\[`` stays as it is."""
    if isinstance(param, TyperArgument):
        param.__class__ = _Positional
    elif getattr(param, "is_flag", False):
        param.metavar = ""
    elif getattr(param, "metavar", "") is None and hasattr(param, "display_type"):
        try:
            tag = param.display_type(ctx)
        except Exception:  # pragma: no cover - a type typer cannot name: keep its own
            tag = None
        if tag is not None:
            param.metavar = _METAVARS.get(str(tag).lower(), str(tag).strip("<>").upper())
    if getattr(param, "help", None):
        param.help = _OPEN_BRACKET.sub(r"\\[", param.help)
    return param


class HelpCommand(TyperCommand):
    """A command whose help shows its options plainly (:func:`_plain`)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return [_plain(p, ctx) for p in super().get_params(ctx)]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        if self.help:
            self.help = _OPEN_BRACKET.sub(r"\\[", self.help)
        super().format_help(ctx, formatter)


class _HelpGroup(TyperGroup):
    """The root group, its options shown as :class:`HelpCommand` shows a command's."""

    def get_params(self, ctx: Any) -> list[Any]:
        return [_plain(p, ctx) for p in super().get_params(ctx)]


app = typer.Typer(
    cls=_HelpGroup,
    name="attnsignal",
    help=(
        "Softmax attention discovering a hidden signal (arXiv 2606.22406): simulate SGA on "
        "the sphere, compute the theory, run sweeps and reproduce the paper."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from .._version import __version__

        print(f"attnsignal {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="print the version and exit"),
) -> None:
    """Softmax attention discovering a hidden signal."""


class UsageFailure(Exception):
    """Raised by commands for bad input that is not a ConfigError (one line, exit 2)."""
