"""CLI subcommands (see shootout/cli.py)."""
