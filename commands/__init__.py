"""CLI subcommands (see cli.py)."""
