"""What a demo's run row holds beside its summary, read back: the engines as they were when the
demo started (`Run.engines`), whichever version stored them."""

from __future__ import annotations

from dataclasses import replace

from services.demos.records import engine_from_snapshot, engine_snapshot
from services.engines.endpoints import EngineRecord


def test_an_engine_snapshot_reads_back_as_the_engine() -> None:
    engine = EngineRecord(
        id=7,
        name="snap",
        base_url="http://127.0.0.1:9/v1",
        kind="vllm",
        model="m",
        api_key_env=None,
        metrics_url=None,
        local_id=None,
        info={"served_by": "vLLM"},
        usd_per_hour=1.5,
    )
    snapshot = engine_snapshot(engine)
    assert "id" not in snapshot
    assert engine_from_snapshot(snapshot) == replace(engine, id=0)


def test_a_snapshot_stored_before_prices_and_probe_info_reads_with_their_defaults() -> None:
    older = {"id": 3, "name": "old", "base_url": "http://h/v1", "kind": "llamacpp", "model": None}
    assert engine_from_snapshot(older) == EngineRecord(
        3, "old", "http://h/v1", "llamacpp", None, None, None, None, {}, None
    )
