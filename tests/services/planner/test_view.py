"""The Planner page's service functions: form answers checked and turned into typed values, the
plan's metric cards, and the stored runs offered and measured against the plan's bound."""

from __future__ import annotations

import pytest

from db.models import Run
from db.session import session_scope
from services.core.errors import ValidationError
from services.planner import PlanRequest, PlanResult, make_plan, view


def test_constraints_take_the_forms_choices() -> None:
    constraints = view.constraints("cpu", 1, "interactive", "some", False, "standard", "gguf")
    assert constraints.hardware == "cpu" and constraints.model_format == "gguf"


def test_an_unknown_choice_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="Unknown hardware 'tpu'"):
        view.constraints("tpu", 1, "interactive", "some", False, "standard", "hf")


def test_adding_a_model_needs_a_file_or_a_path() -> None:
    with pytest.raises(ValidationError, match="Upload a config.json or GGUF file"):
        view.add_model(key="m", name="M")


def test_rate_stays_short_for_a_quarter_width_metric() -> None:
    assert view.rate(12_345_678) == "12.3M tok/s" and view.rate(950.4) == "950 tok/s"


def _plan() -> PlanResult:
    return make_plan(PlanRequest(model="llama-3-8b", gpu="h100-sxm", batch=16, context=8192))


def test_plan_metrics_are_two_rows_of_four_with_units() -> None:
    memory, speed = view.plan_metrics(_plan())
    assert [m.label for m in memory] == [
        "KV cache per token",
        "KV cache for the batch",
        "Weights",
        "Fits?",
    ]
    assert speed[0].label == "Decode bound" and len(speed) == 4
    assert memory[1].value.endswith(" GiB") and memory[1].delta and memory[1].delta.endswith(" GB")
    assert speed[0].value.endswith("tok/s") and speed[1].value == "bandwidth"


def test_engines_are_ranked_as_markdown_cards() -> None:
    constraints = view.constraints("cpu", 1, "interactive", "some", False, "standard", "gguf")
    cards = view.ranking_cards(constraints)
    assert cards[0].title.startswith("**1") and "score" in cards[0].title
    assert all(card.reasons.startswith("- ") for card in cards)


def _stored_run(name: str, model: str | None, gpu: str | None, rate: float, **block: object) -> None:
    engine = {"output_throughput_tok_s": rate, "concurrency_mean": 16, "completed": 4}
    engine |= {"input_tokens": 4000, "output_tokens": 1000, **block}
    with session_scope() as session:
        session.add(
            Run(
                kind="benchmark",
                name=name,
                model=model,
                config={"gpu": gpu} if gpu else {},
                summary={"engines": {"vllm": engine}},
            )
        )


def test_without_stored_runs_the_offer_says_so(db_url: str) -> None:
    offer = view.run_offer(_plan())
    assert offer.choices(include_others=True) == {}
    assert offer.notice and "No stored run has an output throughput yet" in offer.notice


def test_a_run_of_another_setup_is_offered_only_on_request_and_warned(db_url: str) -> None:
    _stored_run("smol *chat*", "smollm2", None, 900.0)
    planned = _plan()
    offer = view.run_offer(planned)
    assert offer.notice and "none recorded Llama 3.1 8B" in offer.notice
    assert offer.choices() == {} and len(offer.choices(include_others=True)) == 1
    measured = view.measure_run(planned, next(iter(offer.choices(include_others=True).values())))
    assert measured.warning and "smollm2, not Llama 3.1 8B" in measured.warning
    assert measured.caption and "batch 16 and context 1,125" in measured.caption
    assert measured.share.label == "Share of the bound" and measured.share.value.endswith("%")
    assert measured.achieved_tok_s == 900.0


def test_a_comparable_run_is_measured_at_its_own_batch_without_a_warning(db_url: str) -> None:
    _stored_run("bench", "meta-llama/Llama-3.1-8B-Instruct", "NVIDIA H100 80GB HBM3", 800.0)
    planned = _plan()
    offer = view.run_offer(planned)
    assert offer.notice is None and len(offer.choices()) == 1
    measured = view.measure_run(planned, next(iter(offer.choices().values())))
    assert measured.warning is None and measured.plan.measured is not None
    assert measured.plan.request.achieved_tok_s == 800.0


def test_a_typed_rate_is_measured_at_the_plans_batch() -> None:
    measured = view.measure_number(_plan(), 500.0)
    assert measured.plan.request.batch == 16 and measured.warning is None
    assert "500.0 of" in (measured.share.delta or "")


def test_a_run_whose_figures_overstate_is_warned_although_it_matches(db_url: str) -> None:
    """Issue 32: the traps Compare refuses a winner for qualify a share of the bound too."""
    _stored_run(
        "warm",
        "meta-llama/Llama-3.1-8B-Instruct",
        "NVIDIA H100 80GB HBM3",
        800.0,
        cached_tokens=3600,
        honoured_output_len=False,
    )
    planned = _plan()
    measured = view.measure_run(planned, next(iter(view.run_offer(planned).choices().values())))
    assert measured.warning == (
        "Its figures overstate what the setup sustains: fixed output length not honoured\\: answers "
        "ended early, so decode is under-counted; warm prefix cache (90% of prompt tokens)\\: prefill "
        "was mostly skipped."
    )


def test_the_cost_floor_uses_the_users_price_and_no_default() -> None:
    plan = _plan()
    assert view.cost_floor(plan, "").value == "not priced"
    card = view.cost_floor(plan, "3.6")
    gpus = plan.request.tp
    # $3.6 x GPUs per hour over the decode bound's tokens per hour, per million.
    expected = 3.6 * gpus * 1e6 / (plan.decode.bound_tok_s * 3600)
    assert card.value == (f"${expected:,.2f}" if expected >= 1 else f"${expected:,.4f}")
    assert card.delta == f"at the decode bound, {gpus} GPU(s) at $3.6/GPU-hour"
    with pytest.raises(ValidationError, match="not a plain number"):
        view.cost_floor(plan, "$3.50")
