"""After a restart: no run is left "running" forever (the rule lives in services/lifecycle.py,
with the rest of every run's life; this name stays for the app's start and old callers)."""

from __future__ import annotations

from services.lifecycle import mark_interrupted_after_restart as recover_interrupted_runs

__all__ = ["recover_interrupted_runs"]
