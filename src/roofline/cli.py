"""Command line: parse, call the API, render.  Bad input -> 'roofline: error: ...', exit 2.

Each subcommand lives in its own module under ``roofline.commands`` and
exposes ``register(subparsers)``; ``roofline.commands.COMMANDS`` lists them in
``--help`` order, and this file only dispatches them, so adding a command never
edits this file.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from roofline.errors import RooflineError
from roofline.text import one_line


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2; a mistyped command gets a suggestion."""

    def error(self, message: str) -> NoReturn:
        # 'roofline: error: ' already names the program: a subcommand's error names only the subcommand
        prog = self.prog.removeprefix("roofline").strip()
        where = f"{prog}: " if prog else ""
        # the message quotes what was typed: control characters shown, not run
        print(one_line(f"roofline: error: {where}{message} (see '{self.prog} --help')"), file=sys.stderr)
        raise SystemExit(2)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's "argument COMMAND: invalid choice: ... (choose from <every command>)" -> the closest command(s)
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            self.error(unknown_command(str(value), list(action.choices)))
        super()._check_value(action, value)


def unknown_command(typed: str, commands: list[str]) -> str:
    """"unknown command 'devcies'; did you mean 'devices'?", by the project's one name matcher
    (:func:`roofline.names.closest`): its best match, and any other command that contains what was typed.

    >>> unknown_command("devcies", ["devices", "device", "demo"])
    "unknown command 'devcies'; did you mean 'devices'?"
    >>> unknown_command("dev", ["devices", "device", "demo"])
    "unknown command 'dev'; did you mean 'device' or 'devices'?"
    """
    from roofline.names import closest, normalize

    index = {normalize(c): c for c in commands}
    key = normalize(typed)
    if not key:  # nothing to match ('' or punctuation)
        return f"unknown command {typed!r}"
    best = closest(typed, index, 3)
    picks = best[:1] + [c for c in best[1:] if key and key in normalize(c)]
    return f"unknown command {typed!r}; did you mean " + " or ".join(repr(c) for c in picks) + "?"


def build_parser() -> argparse.ArgumentParser:
    from roofline.commands import COMMANDS
    from roofline.version import __version__

    parser = Parser(
        prog="roofline",
        description="The roofline model: how fast can a workload run on a device, and what limits it.",
        epilog="example: roofline plot --peak 100GFLOP/s --bandwidth 10GB/s --point app:0.8e9:4e9 -o chart.png",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"roofline {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except RooflineError as exc:
        print(f"roofline: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("roofline: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
