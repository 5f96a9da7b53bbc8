"""Swapping the process-wide telemetry hub in a test (a stand-in GPU sampler, then a fresh hub)."""

from __future__ import annotations

from typing import Any

from services.telemetry import hub as hub_module
from services.telemetry.hub import TelemetryHub


def reset_hub(hub: TelemetryHub | None = None, **options: Any) -> TelemetryHub:
    """Close the process-wide hub and put `hub` (or a new one built with `options`) in its place."""
    with hub_module._hub_lock:
        if hub_module._hub is not None:
            hub_module._hub.close()
        hub_module._hub = hub if hub is not None else TelemetryHub(**options)
        return hub_module._hub
