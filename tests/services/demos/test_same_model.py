"""The "same model, different engines" demo on the real local engines: llama.cpp's Q4_1
against vLLM, with a conclusion written from the measured divergence; and what its step stores
of services/parity's comparison."""

from __future__ import annotations

import json

from services.demos import runner
from services.demos.same_model import parity_figures
from services.parity.metrics import PooledComparison


def test_same_model_demo_concludes_from_the_measured_divergence(local_engines: list) -> None:
    run_id = runner.start_demo(
        "same-model",
        ["llamacpp-4slot", "vllm-cpu"],
        options={"prompts": 4, "max_tokens": 16},
        background=False,
    )
    result = runner.demo_result(run_id)
    assert result["status"] == "finished", result
    verdict = result["verdicts"]["vllm-cpu"]
    assert verdict["verdict"] in ("identical", "rounding", "different")
    assert verdict["exact_match_rate"] is not None and verdict["task_score"] is not None
    conclusion = result["conclusion"]
    assert "vllm-cpu" in conclusion and "llamacpp-4slot" in conclusion
    if verdict["verdict"] != "identical":
        assert f"token {verdict['divergence_median']:g}" in conclusion


def test_same_model_demo_against_itself_is_identical(local_engines: list) -> None:
    run_id = runner.start_demo(
        "same-model",
        ["llamacpp-4slot", "llamacpp-1slot"],
        options={"prompts": 3, "max_tokens": 16},
        background=False,
    )
    result = runner.demo_result(run_id)
    assert result["verdicts"]["llamacpp-1slot"]["verdict"] == "identical", result["conclusion"]
    assert result["conclusion"].startswith("Same model, same answers")


def test_a_steps_parity_figures_are_paritys_own_and_the_margin() -> None:
    pooled = PooledComparison(
        compared=3,
        exact_match_rate=2 / 3,
        diverged=1,
        divergence_positions=(4,),
        divergence_median=4.0,
        divergence_p10=4.0,
        divergence_p90=4.0,
        token_agreement_mean=0.9,
        logprob_diff_mean=0.02,
        topk_rate=1.0,
        units=("token",),
    )
    expected = {**pooled.to_dict(), "margin_median": 0.3}
    assert json.dumps(parity_figures(pooled, 0.3)) == json.dumps(expected)
