"""Waiting for a tuning run from a test (the app and the CLI follow it through its view)."""

from __future__ import annotations

import time

from services.runstate.lifecycle import HEARTBEAT_INTERVAL_S
from services.tune.jobs import TuneRunView, get_run


def wait_until_ended(run_id: int, timeout_s: float) -> TuneRunView:
    """Poll until the run has ended, or `timeout_s` passed (the caller asserts which)."""
    deadline = time.monotonic() + timeout_s
    while True:
        view = get_run(run_id)
        if not view.active or time.monotonic() > deadline:
            return view
        time.sleep(HEARTBEAT_INTERVAL_S / 10)
