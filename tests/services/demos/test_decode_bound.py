"""Decode against the roofline bound: measured rates, the bound from the bandwidth, the batch gain."""

from __future__ import annotations

import pytest

from services.demos import hardware, runner
from services.demos.decode_bound import engine_verdict


def test_decode_against_a_given_bandwidth(db_url: str, demo_server) -> None:
    # 20 ms per token = 50 tok/s per sequence; SmolLM2 135M in BF16 is 269 MB per step, so
    # 53.8 GB/s allows 200 tok/s at batch 1: the engine runs at a quarter of its bound.
    demo_server.register("decoder", "ttft=30,itl=20")
    options = {"bandwidth_gbs": 53.8, "weights": "bf16", "batch": 4, "max_tokens": 24}
    run_id = runner.start_demo("decode-bound", ["decoder"], options=options, background=False)
    result = runner.demo_result(run_id)
    assert result["status"] == "finished", result
    v = result["verdicts"]["decoder"]
    assert v["decode_tok_s_batch1"] == pytest.approx(50, rel=0.15)
    assert v["bound_tok_s_batch1"] == pytest.approx(200, rel=0.03)
    assert v["fraction_batch1"] == pytest.approx(0.25, rel=0.15)
    assert v["verdict"] == "below_bound"
    assert v["batch_gain"] == pytest.approx(4, rel=0.2) and v["batching"] == "near_linear"
    assert (
        "53.8 GB/s" in result["conclusion"]
        and "the weights read once per step served every sequence" in result["conclusion"]
    )
    assert "planner's SmolLM2 135M in BF16" in result["steps"][0]["finding"]


def test_measured_bandwidth_is_said_as_such() -> None:
    bandwidth = hardware.measure_copy_bandwidth(megabytes=32, repeats=2)
    assert bandwidth.measured and bandwidth.bytes_per_s > 1e8
    assert bandwidth.source.startswith("measured here by copying 32 MB")


def test_engine_reported_file_size_is_used() -> None:
    weights = hardware.engine_weights("smollm2-135m", 96_576_768, "Q4_1", None)
    assert weights.weight_format == "gguf-q4_1" and weights.weight_bytes == 96_576_768
    assert "model file the engine reports (GGUF Q4_1)" in weights.source
    point = hardware.decode_point(
        hardware.Bandwidth(25e9, "x", True), hardware.THIS_MACHINE, weights, 1, 100
    )
    assert point.memory_bound_tok_s == pytest.approx(25e9 / point.bytes_per_step_per_gpu)
    assert point.bytes_per_step_per_gpu > 96_576_768  # the weights plus the sequence's KV cache


def test_engine_verdict_thresholds() -> None:
    at_bound = engine_verdict(
        8,
        {"decode_tok_s": 60, "bound_tok_s": 100},
        {"decode_tok_s": 100, "bound_tok_s": 780, "parallel": 2.0},
    )
    assert at_bound.verdict == "at_bound" and at_bound.batching == "some"
    serial = engine_verdict(
        8,
        {"decode_tok_s": 20, "bound_tok_s": 100},
        {"decode_tok_s": 21, "bound_tok_s": 780, "parallel": 1.0},
    )
    assert serial.verdict == "below_bound" and serial.batching == "serial"
    together = engine_verdict(
        8,
        {"decode_tok_s": 20, "bound_tok_s": 100},
        {"decode_tok_s": 21, "bound_tok_s": 780, "parallel": 7.5},
    )
    assert together.batching == "none"
    assert engine_verdict(8, {"error": "x"}, None).verdict == "failed"


def test_unknown_gpu_is_refused_before_anything_runs(db_url: str, demo_server) -> None:
    from services.core.errors import ShootoutError

    demo_server.register("decoder2")
    with pytest.raises(ShootoutError, match="Unknown GPU"):
        runner.start_demo(
            "decode-bound", ["decoder2"], options={"hardware": "no-such-gpu"}, background=False
        )
