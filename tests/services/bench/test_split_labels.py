"""Issue 43: a split says whose times it is. Behind the router the parts are its worker's
(labelled so, the router's own time in the rest), and Triton's token rates say they come from
Shootout's model script, not from Triton."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from services.bench.stats import RequestRecord, split_block
from services.bench.view.split import request_words, split_figure, split_lines, split_table
from services.client import ChatRequest, run_chat
from services.core.measure import EngineTimes
from services.engines import get_adapter
from services.engines.normalise import EngineNormaliser, metric_prefixes
from services.playground import Column, view
from tests.support.metrics_text import parse_text
from tests.support.scripted_server import ScriptedServer

FIXTURES = Path(__file__).resolve().parents[1] / "engines" / "fixtures"


def pane_split(engine: str, kind: str, e2e_s: float, time_split: Any) -> str | None:
    """The Playground pane's split line of one finished answer of 32 tokens."""
    column = Column(
        engine=engine, model=None, kind=kind, status="finished", answer="", choices=[],
        ttft_s=0.05, completion_tokens=32, finish_reason="length", e2e_s=e2e_s, time_split=time_split,
    )  # fmt: skip
    return view.engine_split(column, ("ms", "ms"))


def test_the_router_passes_its_workers_times_on_marked_as_the_workers(
    scripted_server: ScriptedServer,
) -> None:
    request = ChatRequest(
        base_url=scripted_server.base_url,
        model=scripted_server.model(ttft=20, itl=2, tokens=8, report="llamacpp", etimes="0:15:13"),
        messages=[{"role": "user", "content": "Say something short."}],
        kind="router",
    )
    result = asyncio.run(run_chat(request))
    assert result.ok, result.error
    assert result.engine_times is not None and result.engine_times.via == "router"
    back = EngineTimes.from_json(result.engine_times.to_json())
    assert back == result.engine_times
    split = result.time_split()
    assert split is not None and split.via == "router"
    assert "the router's own time is in the rest" in get_adapter("router").engine_times_source


def test_every_display_of_a_routers_split_names_the_workers_times() -> None:
    records = [
        RequestRecord(
            "router",
            i,
            True,
            ttft_s=0.05,
            e2e_s=0.5,
            output_tokens=32,
            engine_times=EngineTimes(prefill_s=0.03, decode_s=0.4, source="timings", via="router"),
        )
        for i in range(3)
    ]
    block = split_block(records)
    assert block["via"] == "router"
    summary = {"engines": {"router": {"completed": 3, "time_split": block}}}
    (line,) = split_lines(summary, {"router": "SGLang router (smg)"})
    assert "the worker's times (the router passes them on; its own time is in the rest)" in line
    parts = set(split_table(summary)["part"])
    assert "prefill (worker)" in parts and "decode (worker)" in parts
    assert "rest of E2E (the router's own time among it)" in parts
    assert not any("(engine)" in part for part in parts)
    figure = split_figure(summary, {})
    assert figure is not None and figure.data[0].y[0] == "router (its worker's times)"
    assert request_words(records[0]).startswith("the worker's times (the router passes them on")
    pane = pane_split("router", "router", 0.5, records[0].time_split)
    assert pane is not None and pane.startswith("Its worker's own (the router's time is in the rest):")
    # The engine's own times stay the engine's.
    plain = [
        RequestRecord(
            "v", 0, True, ttft_s=0.05, e2e_s=0.5, engine_times=EngineTimes(prefill_s=0.03, decode_s=0.4)
        )
    ]
    assert "via" not in split_block(plain)
    assert "prefill (engine)" in set(
        split_table({"engines": {"v": {"time_split": split_block(plain)}}})["part"]
    )


def test_tritons_token_rates_say_they_come_from_shootouts_model_script() -> None:
    before = (FIXTURES / "triton-2.51-python-before.prom").read_text()
    after = (FIXTURES / "triton-2.51-python-after.prom").read_text()
    adapter = get_adapter("triton")
    signals = adapter.signals_for("smollm2")
    state = EngineNormaliser(signals, adapter.label, rate_window_s=60, latency_window_s=60)
    state.update(parse_text(before, metric_prefixes(signals)), 0.0)
    result = state.update(parse_text(after, metric_prefixes(signals)), 10.0)
    assert result.values["generation_tokens_per_s"] == pytest.approx(1.0)
    for signal in ("prompt_tokens_per_s", "generation_tokens_per_s", "requests_running"):
        assert result.notes[signal] == (
            "counted by Shootout's model script (scripts/triton_model.py), not by Triton"
        )
    # Triton's own counters say nothing of the kind.
    assert "e2e_mean_s" not in result.notes or "model script" not in result.notes["e2e_mean_s"]
