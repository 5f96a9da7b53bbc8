"""The Triton adapter on recorded answers: the label names the backend that serves the models
(never TensorRT-LLM for a Python-backend model), a Triton without an OpenAI frontend is a
server the probe accepts, and a Python-backend model's metrics (two scrapes recorded from the
local tritonserver 2.51, one streamed request of 10 tokens apart) normalise to its signals and
give its run split (issue 54): the served model's own totals, never a sum over an ensemble."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.bench.spec import EngineTarget
from services.bench.window_counts import RunSplitMeans, edge_of, run_split_of, series_of, window
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


def triton_split(model: str, before: str, after: str) -> RunSplitMeans | None:
    """The run split of `model` over two metrics pages, read as a benchmark step's edges are."""
    target = EngineTarget(name="triton", base_url="http://triton:8000", kind="triton", model=model)
    wanted = series_of(target)
    counts = window(edge_of(before, wanted, 0.0), edge_of(after, wanted, 10.0))
    return run_split_of(counts, get_adapter("triton").run_split_for(model))


def test_a_python_backend_models_run_split_is_its_own_counters_over_the_window() -> None:
    before = (FIXTURES / "triton-2.51-python-before.prom").read_text()
    after = (FIXTURES / "triton-2.51-python-after.prom").read_text()
    split = triton_split("smollm2", before, after)
    assert split is not None
    # One request between the pages: Triton's own µs totals, as seconds, exactly.
    assert split.requests == 1
    assert split.e2e_s == pytest.approx((12889357 - 12235781) / 1e6, rel=1e-9)
    # Triton 2.51 keeps no first-response histogram: the part is not known, never estimated.
    assert split.ttft_s is None
    # Its queue counter is there, and not read: blind to an in-flight batcher (below).
    assert split.queue_s is None
    assert 'of model "smollm2" only' in split.source
    # Another model's totals are not this one's; without a model nothing is read.
    assert triton_split("another", before, after) is None
    assert get_adapter("triton").run_split_for(None) is None


def bumped(text: str, deltas: dict[tuple[str, str], float]) -> str:
    """A Triton page later: each (series, model) in `deltas` grown by its delta (a histogram's
    `_bucket` lines with its `_count`)."""

    def grow(line: str) -> str:
        found = re.match(r'(\w+)\{.*model="([^"]+)".*\} (\S+)$', line)
        if found is None:
            return line
        name, model, value = found.groups()
        if name.endswith("_bucket"):
            name = name.removesuffix("_bucket") + "_count"
        delta = deltas.get((name, model))
        return line if delta is None else line.rsplit(" ", 1)[0] + f" {float(value) + delta!r}"

    return "\n".join(grow(line) for line in text.splitlines()) + "\n"


#: A step of 10 requests to a TensorRT-LLM ensemble: the ensemble counts each once (2.5 s whole,
#: 0.4 s to the first response, no queue of its own); each model it calls counts it again, with
#: its own queue and durations (postprocessing once per streamed token).
ENSEMBLE_STEP = {
    ("nv_inference_request_success", "ensemble"): 10,
    ("nv_inference_request_duration_us", "ensemble"): 10 * 2_500_000,
    ("nv_inference_queue_duration_us", "ensemble"): 0,
    ("nv_inference_first_response_histogram_ms_sum", "ensemble"): 10 * 400.0,
    ("nv_inference_first_response_histogram_ms_count", "ensemble"): 10,
    ("nv_inference_request_success", "tensorrt_llm"): 10,
    ("nv_inference_request_duration_us", "tensorrt_llm"): 10 * 2_400_000,
    ("nv_inference_queue_duration_us", "tensorrt_llm"): 10 * 300_000,
    ("nv_inference_first_response_histogram_ms_sum", "tensorrt_llm"): 10 * 350.0,
    ("nv_inference_first_response_histogram_ms_count", "tensorrt_llm"): 10,
    ("nv_inference_request_success", "preprocessing"): 10,
    ("nv_inference_request_duration_us", "preprocessing"): 10 * 20_000,
    ("nv_inference_queue_duration_us", "preprocessing"): 10 * 5_000,
    ("nv_inference_request_success", "postprocessing"): 2_300,
    ("nv_inference_request_duration_us", "postprocessing"): 2_300 * 200,
    ("nv_inference_queue_duration_us", "postprocessing"): 2_300 * 50,
}


def test_an_ensemble_is_split_from_its_own_series_never_summed_with_its_steps(
    shared_dir: Path,
) -> None:
    before = (shared_dir / "fixtures/metrics/trtllm_triton.txt").read_text()
    after = bumped(before, ENSEMBLE_STEP)
    split = triton_split("ensemble", before, after)
    assert split is not None
    # The ensemble's 10 requests, each once: a sum over the repository would say 2330 requests
    # and mix in the steps' queues and durations.
    assert split.requests == 10
    # The ensemble's own queue reads 0 while its requests wait in TensorRT-LLM: not known.
    assert split.queue_s is None
    assert split.ttft_s == pytest.approx(0.4, rel=1e-9)
    assert split.e2e_s == pytest.approx(2.5, rel=1e-9)
    # Served bare, the TensorRT-LLM model is split from its own series in the same pages.
    bare = triton_split("tensorrt_llm", before, after)
    assert bare is not None and bare.requests == 10
    assert bare.queue_s is None
    assert (bare.ttft_s, bare.e2e_s) == pytest.approx((0.35, 2.4), rel=1e-9)
