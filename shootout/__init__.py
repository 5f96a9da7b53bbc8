"""Shootout's entry points: the `shootout` command and `python -m shootout` (shootout/cli.py).

The product's code lives in the top-level packages beside this one (services, db, web,
commands, app_pages); pyproject.toml installs them together."""
