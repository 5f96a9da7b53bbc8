"""The Playground form's fields to a SendRequest and back, without Streamlit."""

from __future__ import annotations

import pytest

from services.core.errors import ShootoutError
from services.playground import Column, view


def _form(**extra: object) -> dict[str, object]:
    return {
        "pg_engines": ["a", "b"],
        "pg_prompt": "hi",
        "pg_system": "be brief",
        "pg_temperature": 0.5,
        "pg_max_tokens": 0,  # 0 reads as "the engine's default"
        "pg_stop_text": " END, ,###",
        "pg_n": 2,
        "pg_top_k": 40,
        "pg_model_a": " m1 ",
        "pg_extra_b": '{"repetition_penalty": 1.1}',
        **extra,
    }


def test_form_request_reads_every_field() -> None:
    request = view.form_request(_form(), "conv-1")
    assert [c.engine for c in request.engines] == ["a", "b"]
    assert request.engines[0].model == "m1" and request.engines[0].extra_body is None
    assert request.engines[1].model is None and request.engines[1].extra_body == {
        "repetition_penalty": 1.1
    }
    assert request.params.max_tokens is None and request.params.top_k == 40 and request.params.n == 2
    assert request.params.stop == ("END", "###")
    assert request.conversation_id == "conv-1" and request.schema is None


def test_form_values_refill_what_form_request_read() -> None:
    request = view.form_request(
        _form(pg_schema_on=True, pg_schema=view.DEFAULT_SCHEMA, pg_blind=True), None
    )
    again = view.form_request(view.form_values(request), None)
    assert again == request and again.blind


@pytest.mark.parametrize(
    ("text", "message"), [("{not json", "is not JSON"), ("[1, 2]", "must be a JSON object")]
)
def test_a_bad_extra_body_names_its_engine(text: str, message: str) -> None:
    with pytest.raises(ShootoutError, match=f"extra_body of b {message}"):
        view.form_request(_form(pg_extra_b=text), None)


def test_pane_figures_break_only_between_figures() -> None:
    # Each figure is one unbreakable piece ("0.02 s" wrapped as "0.02" / "s" in a narrow pane).
    column = Column(
        engine="a",
        model=None,
        kind="vllm",
        status="finished",
        answer="",
        choices=[],
        ttft_s=0.0234,
        itl_mean_s=0.012,
        itl_p90_s=None,
        tokens_per_s=1234.5,
        prompt_tokens=12345,
        completion_tokens=64,
        finish_reason="length",
    )
    figures = view.figures(column, ("s", "ms"))
    assert figures == (
        "TTFT\xa0**0.02\xa0s** · 1,234.5\xa0tokens/s  \nITL\xa0mean\xa012\xa0ms · p90\xa0–"
    )
    counts = view.token_counts(column)
    assert counts == "prompt\xa012,345 · completion\xa064 · cached\xa0not\xa0reported · finish\xa0length"
    for line in (*figures.split("  \n"), counts):
        assert all(" " not in piece for piece in line.split(" · "))
