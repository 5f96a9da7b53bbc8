"""CLI subcommands (see shootout/cli.py, which loads each module by name)."""

from __future__ import annotations

import json
from typing import Any


def print_json(payload: Any) -> None:
    """Print JSON the way every subcommand does (stable keys, dates as strings)."""
    print(json.dumps(payload, indent=2, sort_keys=True, default=str))
