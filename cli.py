"""`python cli.py ...`, the same as the `shootout` command (shootout/cli.py): kept so that a
checkout without `pip install -e .` still runs the CLI from its root."""

from __future__ import annotations

import sys

from commands import print_json
from shootout.cli import COMMAND_MODULES, COMMANDS, build_parser, main

__all__ = ["COMMANDS", "COMMAND_MODULES", "build_parser", "main", "print_json"]

if __name__ == "__main__":
    sys.exit(main())
