"""The ``satchel`` command: a thin layer that parses arguments and calls the library.

Each subcommand lives in its own module and registers itself in ``COMMANDS``;
:func:`main` converts :class:`satchel.PackError` into one line on stderr and exit
status 2, in one place.
"""

from __future__ import annotations

import argparse
import codecs
import io
import sys
from collections.abc import Callable, Sequence

from .._errors import PackError

__all__ = ["COMMANDS", "main"]

#: name -> (help line, add_arguments, run)
COMMANDS: dict[
    str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
] = {}


def command(
    name: str,
    help: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
) -> None:
    """Register a subcommand: its help line, how it adds arguments, and how it runs."""
    COMMANDS[name] = (help, add_arguments, run)


def build_parser() -> argparse.ArgumentParser:
    from . import chunk as _chunk  # noqa: F401  (registers its command)
    from . import pack as _pack  # noqa: F401  (registers its command)

    for optional in ("trace", "ablate", "lab"):
        try:
            __import__(f"{__name__}.{optional}")
        except ImportError:
            pass
    parser = argparse.ArgumentParser(
        prog="satchel",
        description="Pack retrieved evidence into an LLM prompt within a hard token budget.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in sorted(COMMANDS):
        help_line, add, _ = COMMANDS[name]
        add(sub.add_parser(name, help=help_line, description=help_line))
    return parser


def _text_out() -> None:
    """Write any text. Prompts, JSON and traces go out as UTF-8 whatever the locale's code
    page (a Windows redirect to a file is cp1252 by default: a Chinese chunk raised
    UnicodeEncodeError, after --log had written its record); messages for people on
    stderr show what its encoding cannot as escapes."""
    out, err = sys.stdout, sys.stderr
    if isinstance(out, io.TextIOWrapper) and codecs.lookup(out.encoding).name != "utf-8":
        out.reconfigure(encoding="utf-8")
    if isinstance(err, io.TextIOWrapper):
        err.reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    _text_out()
    parser = build_parser()
    args = parser.parse_args(argv)
    _, _, run = COMMANDS[args.command]
    try:
        return run(args)
    except PackError as exc:
        print(f"satchel: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `satchel pack ... | head`
        return 0
    except KeyboardInterrupt:  # Ctrl+C (at stdin, or while a model answers): no traceback
        print("satchel: interrupted", file=sys.stderr)
        return 130
