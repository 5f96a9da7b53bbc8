"""The presenter's buttons on a running demo: "Next step", pause, stop.

The page writes only config["control"] of the run row; the worker reads it between steps. A
process-local event wakes a worker in the same process at once (the CLI); one in its own
process polls the row (runner.POLL_S)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from db.models import Run
from db.session import session_scope
from services.core.errors import NotFoundError
from services.demos.reading import demo_view
from services.demos.records import DemoControl, demo_config
from services.runstate.lifecycle import RunKind
from services.team import owners

if TYPE_CHECKING:
    from services.team.access import Viewer

_wakeups: dict[int, threading.Event] = {}
_wakeups_lock = threading.Lock()


def wakeup(run_id: int) -> threading.Event:
    """The event that wakes the worker of `run_id` in this process."""
    with _wakeups_lock:
        return _wakeups.setdefault(run_id, threading.Event())


def forget_wakeup(run_id: int) -> None:
    with _wakeups_lock:
        _wakeups.pop(run_id, None)


def _control(
    run_id: int, *, pause: bool | None = None, released: int | None = None, stop: bool | None = None
) -> None:
    """Write the buttons given (None: unchanged); `released` never goes back."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != RunKind.DEMO:
            raise NotFoundError(f"No demo run #{run_id}.")
        if run.status not in ("pending", "running"):
            return
        config = demo_config(run.config)
        control: DemoControl = (config.get("control") or {}).copy()
        if pause is not None:
            control["pause"] = pause
        if released is not None:
            control["released"] = max(control.get("released", 0), released)
        if stop is not None:
            control["stop"] = stop
        config["control"] = control
        run.config = dict(config)  # a new dict: JSON columns do not track in-place changes
    wakeup(run_id).set()


def advance(run_id: int, viewer: Viewer | None = None) -> None:
    """ "Next step": release the step the worker waits at. The presenter's buttons are whoever
    started the demo's or an operator's (NotOwner); `viewer` None: the CLI, the worker."""
    owners.require_control(run_id, viewer, "steer it")
    view = demo_view(run_id)
    if view.awaiting is not None:
        _control(run_id, released=view.awaiting)


def set_pause(run_id: int, pause: bool, viewer: Viewer | None = None) -> None:
    """Turn waiting between steps on or off while the demo runs (off also releases a wait)."""
    owners.require_control(run_id, viewer, "steer it")
    released = None
    if not pause:
        view = demo_view(run_id)
        released = view.awaiting
    _control(run_id, pause=bool(pause), released=released)


def stop_demo(run_id: int, viewer: Viewer | None = None) -> None:
    """Stop after the requests in flight; what was measured stays stored."""
    owners.require_control(run_id, viewer, "stop it")
    _control(run_id, stop=True)
