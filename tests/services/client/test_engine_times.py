"""Where each request's time went: the engine's own times read by its adapter from a scripted
server that reports them in vLLM's, llama.cpp's and TGI's shapes, and the split of the client's
TTFT and E2E (services.core.measure.time_split), exact against known server times."""

from __future__ import annotations

import asyncio

import pytest

from services.client import ChatRequest, StreamResult, run_chat
from services.core.measure import EngineTimes, time_split
from services.engines import get_adapter
from tests.support.scripted_server import ScriptedServer

MESSAGES = [{"role": "user", "content": "Say something short."}]


def ask(server: ScriptedServer, kind: str, **scenario: object) -> StreamResult:
    request = ChatRequest(
        base_url=server.base_url, model=server.model(**scenario), messages=MESSAGES, kind=kind
    )
    result = asyncio.run(run_chat(request))
    assert result.ok, result.error
    return result


# -- the split itself ---------------------------------------------------------------------


def test_split_adds_up_to_the_client_figures_exactly() -> None:
    engine = EngineTimes(queue_s=0.004, prefill_s=0.030, decode_s=0.200)
    split = time_split(0.040, 0.250, engine)
    assert split is not None
    assert split.engine_s == pytest.approx(0.234)
    assert split.ttft_rest_s == pytest.approx(0.006)
    assert split.e2e_rest_s == pytest.approx(0.016)
    assert split.queue_s + split.prefill_s + split.ttft_rest_s == pytest.approx(0.040, abs=1e-15)
    assert split.queue_s + split.prefill_s + split.decode_s + split.e2e_rest_s == pytest.approx(
        0.250, abs=1e-15
    )


def test_split_without_queue_keeps_the_wait_in_the_rest() -> None:
    split = time_split(0.050, 0.300, EngineTimes(prefill_s=0.030, decode_s=0.240))
    assert split is not None and split.queue_s is None
    assert split.ttft_rest_s == pytest.approx(0.020)
    assert split.e2e_rest_s == pytest.approx(0.030)


def test_split_of_an_inference_total_has_no_ttft_rest() -> None:
    split = time_split(0.050, 0.300, EngineTimes(queue_s=0.010, inference_s=0.270))
    assert split is not None
    assert split.prefill_s is None and split.ttft_rest_s is None
    assert split.e2e_rest_s == pytest.approx(0.020)


def test_no_times_reported_is_no_split() -> None:
    assert time_split(0.05, 0.3, None) is None
    assert time_split(0.05, 0.3, EngineTimes(prompt_tokens=12, cached_tokens=4)) is None


def test_engine_times_round_trip_through_json_and_read_leniently() -> None:
    times = EngineTimes(queue_s=0.001, prefill_s=0.02, decode_s=0.3, prompt_tokens=10, source="metrics")
    assert EngineTimes.from_json(times.to_json()) == times
    odd = EngineTimes.from_json({"queue_s": "soon", "prefill_s": float("nan"), "prompt_tokens": 1.5})
    assert odd == EngineTimes()
    assert EngineTimes.from_json(None) is None


# -- each engine's shape, read by its adapter ----------------------------------------------


def test_vllm_metrics_on_the_usage_chunk_split_exactly(scripted_server: ScriptedServer) -> None:
    result = ask(
        scripted_server, "vllm", ttft=20, itl=2, tokens=8, cached=3, report="vllm", etimes="1.5:12:14"
    )
    times = result.engine_times
    assert times == EngineTimes(
        queue_s=0.0015,
        prefill_s=0.012,
        decode_s=0.014,
        prompt_tokens=result.prompt_tokens,
        cached_tokens=3,
        source="metrics",
    )
    figures = result.metrics()
    split = result.time_split()
    assert split is not None
    assert split.ttft_rest_s == figures.ttft_s - 0.0015 - 0.012
    assert split.e2e_rest_s == figures.e2e_s - (0.0015 + (0.012 + 0.014))


def test_llamacpp_timings_split_exactly(scripted_server: ScriptedServer) -> None:
    result = ask(
        scripted_server,
        "llamacpp",
        ttft=20,
        itl=2,
        tokens=8,
        prompt=9,
        cached=4,
        report="llamacpp",
        etimes="0:15:13",
    )
    assert result.engine_times == EngineTimes(
        prefill_s=0.015, decode_s=0.013, prompt_tokens=9, cached_tokens=4, source="timings"
    )
    figures = result.metrics()
    split = result.time_split()
    assert split is not None and split.queue_s is None
    assert split.ttft_rest_s == figures.ttft_s - 0.0 - 0.015
    assert split.e2e_rest_s == figures.e2e_s - (0.0 + (0.015 + 0.013))


def test_tgi_headers_split_exactly(scripted_server: ScriptedServer) -> None:
    result = ask(
        scripted_server, "tgi", ttft=20, itl=2, tokens=8, prompt=9, report="tgi", etimes="3:10:20"
    )
    assert result.engine_times == EngineTimes(
        queue_s=0.003, inference_s=0.030, prompt_tokens=9, source="headers"
    )
    split = result.time_split()
    assert split is not None and split.prefill_s is None and split.ttft_rest_s is None
    assert split.e2e_rest_s == result.metrics().e2e_s - (0.003 + 0.030)


def test_measured_server_times_leave_a_small_rest_on_loopback(
    scripted_server: ScriptedServer,
) -> None:
    """The server reports what it measured (received -> first write -> last write): what is
    left of the client's E2E is the loopback and the two programs' own handling."""
    rests = []
    for _ in range(5):
        result = ask(scripted_server, "vllm", ttft=15, itl=3, tokens=12, report="vllm")
        split = result.time_split()
        assert split is not None and split.e2e_rest_s is not None
        # The writes keep to the script's clock: prefill + decode is its 15 + 11 * 3 ms or more.
        assert split.prefill_s + split.decode_s >= 0.048 - 0.0005
        rests.append(split.e2e_rest_s)
    # Small on loopback: the median within 20 ms even on a busy 2-core machine (a few ms
    # when it is calm); never below zero, since the server's span lies inside the client's.
    assert 0 <= min(rests) and sorted(rests)[2] < 0.020, rests


def test_an_engine_that_reports_nothing_has_no_times(scripted_server: ScriptedServer) -> None:
    for kind in ("sglang", "openai", "vllm"):
        result = ask(scripted_server, kind, ttft=5, itl=1, tokens=4)
        assert result.engine_times is None and result.time_split() is None
    assert get_adapter("sglang").engine_times_source == ""


def test_a_malformed_report_reads_as_not_reported() -> None:
    vllm = get_adapter("vllm")
    assert vllm.engine_times({"metrics": "fast"}, None, {}) is None
    assert vllm.engine_times({"metrics": {"queue_time_ms": None}}, None, {}) is None
    assert get_adapter("tgi").engine_times({}, None, {b"x-queue-time": b"soon"}) is None
    llama = get_adapter("llamacpp").engine_times({"timings": {"prompt_ms": 5.0}}, None, {})
    assert llama == EngineTimes(prefill_s=0.005, source="timings")


# -- the real local engines -----------------------------------------------------------------


@pytest.mark.engines
def test_real_engines_split_adds_up_and_leaves_little_on_loopback(local_engines: list) -> None:
    """llama.cpp (timings, passed on by the router in front of it) and vLLM
    (--enable-per-request-metrics) time their own work: prefill + decode (+ queue) + rest is
    the client's E2E, and on loopback the rest is small; SGLang's streamed chat carries no
    times: not reported."""
    from services.client import run_many
    from services.engines import SamplingParams

    for engine in local_engines:
        if engine.kind not in ("llamacpp", "vllm", "sglang", "router"):
            continue  # Triton's generate extension has no per-request times
        requests = [
            ChatRequest(
                base_url=engine.base_url,
                model=engine.model or "",
                kind=engine.kind,
                messages=[{"role": "user", "content": f"Count to five, take {i}."}],
                params=SamplingParams(temperature=0.0, max_tokens=16),
                read_timeout_s=120,
            )
            for i in range(4)
        ]
        results = asyncio.run(run_many(requests, concurrency=1))
        for result in results:
            assert result.ok, f"{engine.name}: {result.error}"
            if engine.kind == "sglang":
                assert result.engine_times is None and result.time_split() is None
                continue
            figures = result.metrics()
            split = result.time_split(figures)
            assert split is not None, f"{engine.name} reported no times: {result.engine_fields}"
            assert split.prefill_s is not None and split.decode_s is not None
            total = (split.queue_s or 0.0) + split.prefill_s + split.decode_s + split.e2e_rest_s
            if split.overcount_s == 0:
                assert total == pytest.approx(figures.e2e_s, abs=1e-9)
            else:
                # The engine counted more than the client saw: the rest is clamped at 0, the
                # parts exceed E2E by no more than the overcount, and a note says so.
                assert split.e2e_rest_s >= 0 and split.clamp_note
                assert figures.e2e_s - 1e-9 <= total <= figures.e2e_s + split.overcount_s + 1e-9
            # Loopback, one request at a time: what the engine did not time is the HTTP exchange,
            # its front end (vLLM's tokenizer and detokenizer) and our client: tens of ms at most.
            # It can fall a little below 0: llama.cpp's decode time runs to the end of its last
            # step, after the last text went out (-11 ms seen on a busy host), and vLLM's engine
            # clock stops after its last output is handed over (-53 ms seen on a busy host).
            assert -0.1 < split.e2e_rest_s < 0.25, (engine.name, split)
