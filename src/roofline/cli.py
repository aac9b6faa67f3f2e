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

from roofline.core.errors import RooflineError
from roofline.core.text import one_line


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2; a mistyped command gets a suggestion."""

    def error(self, message: str) -> NoReturn:
        # 'roofline: error: ' already names the program: a subcommand's error names only the subcommand
        prog = self.prog.removeprefix("roofline").strip()
        where = f"{prog}: " if prog else ""
        # the message quotes what was typed: control characters shown, not run
        print(one_line(f"roofline: error: {where}{message} (see '{self.prog} --help')"), file=sys.stderr)
        raise SystemExit(2)

    def _parse_optional(self, arg_string: str) -> Any:
        # an option by a unique prefix ('--quic' for '--quick') is taken, and said on stderr: the one rule of
        # roofline.core.names for every name a user types (argparse lists an ambiguous prefix's matches itself)
        # argparse's private return differs by version: (action, option, [sep,] explicit) up to 3.12.x/3.13.0,
        # a list of such tuples after; only a single match is a unique prefix (several: argparse's error)
        found = super()._parse_optional(arg_string)
        first = found[0] if isinstance(found, list) and len(found) == 1 else found
        if isinstance(first, tuple) and len(first) >= 2 and first[0] is not None and isinstance(first[1], str):
            typed = arg_string.split("=", 1)[0]
            if first[1] != typed:
                note(f"{typed!r} taken as {first[1]!r} (the one option it starts)")
        return found

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        # argparse's "unrecognized arguments: --quik" -> the command's closest option(s), by the one matcher
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            parser: argparse.ArgumentParser = self
            for action in self._actions:
                if isinstance(action, argparse._SubParsersAction) and getattr(ns, action.dest, None) in action.choices:
                    parser = action.choices[getattr(ns, action.dest)]
            parser.error(unrecognized(extras, [o for a in parser._actions for o in a.option_strings]))
        return ns

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's "argument COMMAND: invalid choice: ... (choose from <every command>)" -> the closest command(s)
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            self.error(unknown_command(str(value), list(action.choices)))
        super()._check_value(action, value)


def unknown_command(typed: str, commands: list[str]) -> str:
    """"unknown command 'devcies'; did you mean 'devices'?", by the project's one name matcher
    (:func:`roofline.core.names.closest`): its best match, and any other command that contains what was typed.

    >>> unknown_command("devcies", ["devices", "device", "demo"])
    "unknown command 'devcies'; did you mean 'devices'?"
    >>> unknown_command("dev", ["devices", "device", "demo"])
    "unknown command 'dev'; did you mean 'device' or 'devices'?"
    """
    from roofline.core.names import closest, normalize

    index = {normalize(c): c for c in commands}
    key = normalize(typed)
    if not key:  # nothing to match ('' or punctuation)
        return f"unknown command {typed!r}"
    best = closest(typed, index, 3)
    picks = best[:1] + [c for c in best[1:] if key and key in normalize(c)]
    return f"unknown command {typed!r}; did you mean " + " or ".join(repr(c) for c in picks) + "?"


def unrecognized(extras: list[str], options: list[str]) -> str:
    """"unrecognized arguments: --quik; did you mean '--quick'?": the closest options to the first unknown one
    (:func:`roofline.core.names.closest`, names this similar only).

    >>> unrecognized(["--quik"], ["--quick", "--show", "--out", "-h", "--help"])
    "unrecognized arguments: --quik; did you mean '--quick'?"
    >>> unrecognized(["stray"], ["--quick"])
    'unrecognized arguments: stray'
    """
    from roofline.core.names import TYPO_CUTOFF, closest, normalize

    typed = extras[0].split("=", 1)[0]
    text = "unrecognized arguments: " + " ".join(extras[:5])  # argparse's own wording, then the suggestion
    long = [o for o in options if o.startswith("--")]
    if not typed.startswith("--") or not normalize(typed) or not long:
        return text
    near = closest(typed, {normalize(o): o for o in long}, 2, TYPO_CUTOFF)
    near = [o for o in near if _similar(typed, o)]  # none below the cutoff: no far-fetched guess
    return text + "; did you mean " + " or ".join(repr(o) for o in near) + "?" if near else text


def _similar(a: str, b: str) -> bool:
    import difflib

    from roofline.core.names import TYPO_CUTOFF, normalize

    return difflib.SequenceMatcher(None, normalize(a), normalize(b)).ratio() >= TYPO_CUTOFF


_NOTED: set[str] = set()


def note(text: str) -> None:
    """'roofline: note: ...' on stderr, each text once per run."""
    if text not in _NOTED:
        _NOTED.add(text)
        print(one_line(f"roofline: note: {text}"), file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    from roofline.commands import COMMANDS
    from roofline.core.version import __version__

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
    """The ``roofline`` command on ``argv``; its exit status.  Without ``argv`` it is the program (the console
    script, ``python -m roofline.cli``): it exits when done, without the interpreter's teardown (:func:`exit_now`)."""
    rc = _run(argv)
    if argv is None:
        exit_now(rc)
    return rc


def exit_now(rc: int) -> None:
    """Exit with ``rc`` as the interpreter would, less its teardown: the exit handlers (:mod:`atexit`) run and the
    standard streams are flushed, then :func:`os._exit`.  Freeing torch's modules and objects one by one takes
    0.5-0.9 s of every run that imported it, and nothing needs it.  A normal return instead (the interpreter's
    own exit) while another thread runs (the interpreter joins it first), under a profiler or tracer (it reports
    after the program returns), where the handlers cannot be run, or when a stream cannot be flushed (a closed
    pipe: the interpreter says so as usual)."""
    import atexit
    import os
    import threading

    run_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's: what the interpreter calls at exit
    if run_handlers is None or threading.active_count() > 1 or not 0 <= rc <= 255 or _observed():
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    run_handlers()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(rc)


def _observed() -> bool:
    """A profiler, tracer or debugger is attached (``python -m cProfile``, ``coverage``, ``pdb``): it reports
    after the program returns, so the program returns."""
    monitoring = getattr(sys, "monitoring", None)  # Python >= 3.12: cProfile and coverage may use it instead
    tools = [] if monitoring is None else [monitoring.get_tool(k) for k in range(6)]
    return sys.gettrace() is not None or sys.getprofile() is not None or any(t is not None for t in tools)


def _run(argv: list[str] | None) -> int:
    import warnings

    from roofline.core.names import NameResolved

    _NOTED.clear()
    with warnings.catch_warnings():
        # a name taken as another (a unique prefix: 'mi300' is MI300X) is said on stderr, once
        warnings.simplefilter("always", NameResolved)
        shown = warnings.showwarning

        def show(message: Any, category: Any, *rest: Any, **kw: Any) -> None:
            if issubclass(category, NameResolved):
                note(str(message))
            else:
                shown(message, category, *rest, **kw)

        warnings.showwarning = show
        return _main(argv)


def command_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """The options of the command ``args`` runs, by destination (``{"max_tokens": "--max-tokens"}``), with the
    command's ``cli_parameters`` default (an API parameter set by an option of another name: ``{"diff_traces.b":
    "--diff"}``, ``p.set_defaults(cli_parameters=...)``):
    what :func:`roofline.core.arguments.as_cli` names in a check's error."""
    options: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and getattr(args, action.dest, None) in action.choices:
            sub = action.choices[getattr(args, action.dest)]
            for a in sub._actions:
                longest = max(a.option_strings, key=len, default="")
                if longest.startswith("--"):
                    options[a.dest] = longest
    options.update(getattr(args, "cli_parameters", None) or {})
    return options


def _main(argv: list[str] | None) -> int:
    from roofline.core.arguments import as_cli
    from roofline.frontends import workers

    # the trace reader's worker processes are forked from a server that takes ~2.5 s to warm up: started first,
    # it warms while the commands are imported and the arguments parsed (here it starts 0.2 s after the command, not 0.4)
    workers.start_early(*workers.from_argv(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with as_cli(command_options(parser, args)):
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
