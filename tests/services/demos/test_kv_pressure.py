"""KV-cache pressure read from the engine's metrics: queueing with room to spare, and preemption."""

from __future__ import annotations

import pytest

from services.demos import runner
from services.demos.kv_pressure import engine_verdict

OPTIONS = {"levels": "1,4", "prompt_tokens": 100, "max_tokens": 16}


def test_queue_and_preemption(db_url: str, demo_server) -> None:
    demo_server.register("roomy", "ttft=300,itl=40", slots=2, kv=4000)
    demo_server.register("cramped", "ttft=300,itl=40", kv=200, preempt=1)
    run_id = runner.start_demo("kv-pressure", ["roomy", "cramped"], options=OPTIONS, background=False)
    result = runner.demo_result(run_id)
    assert result["status"] == "finished", result
    roomy, cramped = result["verdicts"]["roomy"], result["verdicts"]["cramped"]

    assert roomy["verdict"] == "queued_not_kv"
    assert roomy["waiting_peak"] >= 1 and roomy["first_queue_concurrency"] == 4
    assert 0 < roomy["kv_peak"] < 0.2 and roomy["preemptions"] == 0
    assert roomy["latency_growth"] == pytest.approx(
        1.5, rel=0.1
    )  # two of four waited for a slot: mean ×1.5

    assert cramped["verdict"] == "preempted"
    assert cramped["preemptions"] >= 2 and cramped["kv_peak"] == 1.0
    assert result["conclusion"].startswith("The KV cache ran out: cramped preempted")
    assert "although the cache was far from full" in result["conclusion"]


def test_verdict_without_kv_metrics() -> None:
    levels = [
        {
            "concurrency": 1,
            "e2e_mean_s": 1.0,
            "kv_reason": "not reported by llama.cpp",
            "waiting_peak": 0,
        },
        {
            "concurrency": 8,
            "e2e_mean_s": 3.0,
            "kv_reason": "not reported by llama.cpp",
            "waiting_peak": 4,
        },
    ]
    v = engine_verdict(levels)
    assert v.verdict == "queued" and v.kv_peak is None and v.kv_reason == "not reported by llama.cpp"
    assert engine_verdict([{"concurrency": 1, "error": "boom"}]).verdict == "failed"
