"""The Triton adapter on recorded answers: the label names the backend that serves the models
(never TensorRT-LLM for a Python-backend model), a Triton without an OpenAI frontend is a
server the probe accepts, and a Python-backend model's metrics (two scrapes recorded from the
local tritonserver 2.51, one streamed request of 10 tokens apart) normalise to its signals."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.engines import get_adapter
from services.engines.base import HttpAnswer, ProbeEvidence
from services.engines.normalise import EngineNormaliser, metric_prefixes
from services.engines.probe import interpret
from services.telemetry.scraper import kind_from_metrics
from tests.support.metrics_text import parse_text

FIXTURES = Path(__file__).parent / "fixtures"
NOT_FOUND = HttpAnswer(404, {"error": "Not Found"})


def triton_evidence(configs: dict[str, dict]) -> ProbeEvidence:
    answers = {
        "/v1/models": NOT_FOUND,
        "/health": NOT_FOUND,
        "/v2": HttpAnswer(200, {"name": "triton", "version": "2.51.0", "extensions": []}),
        "/v2/health/ready": HttpAnswer(200, None),
        "POST /v2/repository/index": HttpAnswer(
            200, [{"name": name, "version": "1", "state": "READY"} for name in configs]
        ),
    }
    for name, config in configs.items():
        answers[f"/v2/models/{name}/config"] = HttpAnswer(200, {"name": name, **config})
    return ProbeEvidence("http://127.0.0.1:8085", answers)


@pytest.mark.parametrize(
    ("configs", "label"),
    [
        ({"smollm2": {"backend": "python"}}, "Triton (Python backend)"),
        (
            {
                "ensemble": {"platform": "ensemble", "backend": ""},
                "preprocessing": {"backend": "python"},
                "tensorrt_llm": {"backend": "tensorrtllm"},
            },
            "Triton (Python backend, TensorRT-LLM backend)",
        ),
        ({"tensorrt_llm": {"backend": "tensorrtllm"}}, "Triton (TensorRT-LLM backend)"),
        ({}, "Triton"),
    ],
)
def test_the_probe_names_the_backend_that_serves(configs: dict, label: str) -> None:
    result = interpret(triton_evidence(configs))
    assert result.state == "ok", result.message
    assert (result.kind, result.kind_label, result.version) == ("triton", label, "2.51.0")
    assert result.models == list(configs)
    assert result.healthy is True
    assert get_adapter("triton").label == "Triton"


def test_a_python_backend_models_metrics_normalise() -> None:
    before = (FIXTURES / "triton-2.51-python-before.prom").read_text()
    after = (FIXTURES / "triton-2.51-python-after.prom").read_text()
    assert kind_from_metrics(after) == "triton"
    adapter = get_adapter("triton")
    signals = adapter.signals_for("smollm2")
    state = EngineNormaliser(signals, adapter.label, rate_window_s=60, latency_window_s=60)
    state.update(parse_text(before, metric_prefixes(signals)), 0.0)
    values = state.update(parse_text(after, metric_prefixes(signals)), 10.0).values
    assert values["generation_tokens_per_s"] == pytest.approx(10 / 10)
    assert values["prompt_tokens_per_s"] == pytest.approx(2 / 10)
    assert values["e2e_mean_s"] == pytest.approx((12889357 - 12235781) / 1e6)
    assert values["requests_waiting"] == 0 and values["requests_running"] == 0
    # Another model's series are not this one's.
    other = adapter.signals_for("another")
    state = EngineNormaliser(other, adapter.label)
    state.update(parse_text(before, metric_prefixes(other)), 0.0)
    assert state.update(parse_text(after, metric_prefixes(other)), 10.0).values.get("e2e_mean_s") is None
