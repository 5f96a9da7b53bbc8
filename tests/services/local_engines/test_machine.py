"""How a dead engine's exit is told (services/local_engines/machine.py); the CPU detection's
tests sit with the build that reads it (tests/services/engines/test_llamacpp_build.py)."""

from __future__ import annotations

from services.local_engines import machine


def test_exit_statuses_in_plain_words() -> None:
    assert machine.describe_exit(-4) == ("killed by SIGILL (illegal instruction)", "SIGILL")
    assert machine.describe_exit(132) == ("killed by SIGILL (illegal instruction)", "SIGILL")
    assert machine.describe_exit(1) == ("exit 1", None)
