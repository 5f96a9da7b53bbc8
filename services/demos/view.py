"""How the Demos page words a demo's state, as plain functions over records.py's records: the status
line, the step markers, the progress text, and when a big number's change is no change."""

from __future__ import annotations

from typing import Literal

from services.demos import scenarios
from services.demos.base import Scenario
from services.demos.charts import step_figure
from services.demos.readout import BigNumber
from services.demos.records import DemoView
from services.demos.runner import (
    StepView,
    advance,
    demo_view,
    list_demos,
    set_pause,
    start_demo,
    stop_demo,
)
from services.engines.endpoints import list_engines
from services.team.owners import may_control_run

#: What the page reads: this module's own, and what it passes on from the feature's others.
__all__ = [
    "STEP_MARKERS",
    "DemoView",
    "Scenario",
    "StepView",
    "advance",
    "delta_color",
    "demo_view",
    "list_demos",
    "list_engines",
    "may_control_run",
    "progress_text",
    "scenarios",
    "set_pause",
    "start_demo",
    "status_text",
    "step_figure",
    "stop_demo",
]

_STATUS_TEXT = {
    "pending": "starting",
    "running": "running",
    "finished": "finished",
    "finished_with_errors": "finished with errors",
    "failed": "failed",
    "cancelled": "stopped",
    "interrupted": "interrupted",
}
#: What follows a step's title while it is not simply done.
STEP_MARKERS = {
    "running": " · measuring…",
    "pending": " · next",
    "failed": " · failed",
    "skipped": " · skipped",
    "cancelled": " · stopped",
}


def status_text(status: str) -> str:
    return _STATUS_TEXT.get(status, status)


def progress_text(view: DemoView) -> str:
    """ "Step 2 of 4" while a demo runs (the step under way, never past the last one)."""
    steps = len(view.steps)
    return f"Step {min(steps, int(view.progress * steps) + 1)} of {steps or '…'}"


def delta_color(number: BigNumber) -> Literal["normal", "inverse", "off"]:
    """A change of 0% or ×1.0 is drawn grey: green or red would call it news."""
    unchanged = number.delta is None or number.delta.lstrip("+-") in ("0%", "×1.0")
    return "off" if unchanged else number.delta_color
