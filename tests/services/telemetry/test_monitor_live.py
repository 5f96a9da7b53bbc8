"""The live view's start: stored samples fill only the part of the window the hub did not watch
(the page test shows a benchmark's stored samples leading the live chart)."""

from __future__ import annotations

import pytest

from services.telemetry.monitor import live
from services.telemetry.snapshot import Snapshot


def _history(first_ts: float) -> dict[str, list[Snapshot]]:
    return {"engine:a": [Snapshot("engine:a", "vllm", "vLLM", first_ts, {"kv_cache_usage": 0.5})]}


def test_a_window_the_hub_watched_throughout_asks_the_database_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The page refreshes every second: without this, every refresh queried the window's first second."""
    asked: list[tuple[float, float]] = []
    monkeypatch.setattr(live, "load_window", lambda start, end, sources: asked.append((start, end)))
    now = 10_000.0
    assert live._stored_before(_history(now - 299), now - 300, now) == {}
    assert asked == []
