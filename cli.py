"""Shootout's headless command line: the same services as the app, for CI and scripts.

Every subcommand lives in `commands/<name>.py` with a `register(subparsers)` that adds
its parser and sets `handler`; handlers return the exit code. Errors of the project's
own types print one clear line on stderr and exit 1; bad arguments exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any

from services.errors import ShootoutError

COMMAND_MODULES = [
    "commands.engines",
    "commands.local",
    "commands.bench",
    "commands.scrape",
    "commands.runs",
    "commands.plan",
    "commands.demo",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python cli.py", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def print_json(payload: Any) -> None:
    """Print JSON the way every subcommand does (stable keys, dates as strings)."""
    print(json.dumps(payload, indent=2, sort_keys=True, default=str))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except ShootoutError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (`| head`) went away: not an error of ours, and no traceback either.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
