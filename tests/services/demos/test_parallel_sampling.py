"""Parallel sampling: n answers decoded together give about n times the throughput."""

from __future__ import annotations

import pytest

from services.demos import runner
from services.demos.parallel_sampling import engine_verdict


def test_n4_against_n1(db_url: str, demo_server) -> None:
    demo_server.register("sampler", "ttft=100,itl=20", kv=20000)
    run_id = runner.start_demo(
        "parallel-sampling",
        ["sampler"],
        options={"prompt_tokens": 100, "max_tokens": 16},
        background=False,
    )
    result = runner.demo_result(run_id)
    assert result["status"] == "finished", result
    v = result["verdicts"]["sampler"]
    assert v["verdict"] == "shared" and v["choices_nN"] == 4
    assert v["throughput_gain"] == pytest.approx(4, rel=0.2)
    assert v["latency_ratio"] == pytest.approx(1, abs=0.2)
    assert v["kv_peak_nN"] > v["kv_peak_n1"] > 0
    assert "4 answers from one prompt cost sampler only ×1.0 the time of one" in result["conclusion"]


def test_verdict_thresholds() -> None:
    one = {"e2e_s": 1.0, "throughput_tok_s": 32.0}
    assert (
        engine_verdict(4, one, {"e2e_s": 3.9, "throughput_tok_s": 33.0, "choices": 4}).verdict
        == "serial"
    )
    assert (
        engine_verdict(4, one, {"e2e_s": 2.0, "throughput_tok_s": 64.0, "choices": 4}).verdict
        == "shared"
    )
    assert (
        engine_verdict(4, one, {"e2e_s": 1.0, "throughput_tok_s": 32.0, "choices": 1}).verdict
        == "ignored_n"
    )
    assert engine_verdict(4, one, {"unsupported": True}).verdict == "unsupported"
