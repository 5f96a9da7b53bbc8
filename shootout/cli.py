"""Shootout's headless command line: the same services as the app, for CI and scripts.

The `shootout` command (pyproject.toml), `python -m shootout` and `python cli.py` all run
`main`. Every subcommand lives in `commands/<name>.py` with a `register(subparsers)` that adds
its parser and sets `handler`; handlers return the exit code. Errors of the project's
own types print one clear line on stderr and exit 1; bad arguments exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from services.core.errors import ShootoutError
from services.core.processes import sigterm_as_ctrl_c

#: Subcommand -> the module that registers it. Only the chosen command's module is
#: imported (a benchmark must start sending within a second; pandas alone takes 0.25 s).
COMMANDS = {
    "engines": "commands.engines",
    "local": "commands.local",
    "bench": "commands.bench",
    "scrape": "commands.scrape",
    "history": "commands.history",
    "runs": "commands.runs",
    "export": "commands.runs",
    "import": "commands.runs",
    "plan": "commands.plan",
    "demo": "commands.demo",
    "ask": "commands.ask",
    "tune": "commands.tune",
    "parity": "commands.parity",
}
COMMAND_MODULES = list(dict.fromkeys(COMMANDS.values()))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or only `command`'s module when it is known."""
    parser = argparse.ArgumentParser(prog="shootout", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = [COMMANDS[command]] if command in COMMANDS else COMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv[0] if argv else None)
    try:
        args = parser.parse_args(argv)
    except ShootoutError as error:  # an argument's type refused it (services/core/ids.py)
        print(f"error: {error}", file=sys.stderr)
        return 2
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        with sigterm_as_ctrl_c():  # a CI timeout or `docker stop` ends a run as Ctrl-C does
            return int(handler(args) or 0)
    except ShootoutError as error:
        print(f"error: {error}", file=sys.stderr)
        # An error may carry its own exit code (the CI gate's tool error: 5).
        return int(getattr(error, "exit_code", 1))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (`| head`) went away: not an error of ours, and no traceback either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
