"""GPU names where a run recorded them: under a few keys of its summary, config, engine block or
engine snapshot, as a string, a list, or records with a name (the Planner and comparability
read them alike)."""

from __future__ import annotations

from typing import Any

from services.core.json_types import ForeignJson

#: Keys under which a summary, a config or an engine block may name the hardware.
HARDWARE_KEYS = (
    "hardware",
    "gpu",
    "gpus",
    "gpu_name",
    "gpu_names",
    "gpu_model",
    "device",
    "devices",
    "accelerator",
)
_NAME_KEYS = ("name", "model", "label", "type", *HARDWARE_KEYS)


def _strings(value: Any, depth: int = 0) -> list[str]:
    """Names inside a hardware field: a string, a list of them, or records with a name."""
    if depth > 3:
        return []
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _strings(item, depth + 1)]
    if isinstance(value, dict):
        return [s for key in _NAME_KEYS if key in value for s in _strings(value[key], depth + 1)]
    return []


def hardware_names(*blocks: ForeignJson) -> list[str]:
    """GPU names under the hardware keys of the given objects (a summary's or a config's keys
    an importer kept from another tool's file, what an engine or its probe reported)."""
    return [s for block in blocks for key in HARDWARE_KEYS if key in block for s in _strings(block[key])]
