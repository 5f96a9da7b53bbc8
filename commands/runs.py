"""`python cli.py runs`: not built yet (its issue fills it)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("runs", help="(coming)")
    parser.set_defaults(handler=lambda args: (print("not built yet"), 2)[1])
