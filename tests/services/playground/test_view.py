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
        "TTFT\xa0**0.023\xa0s** · 1,234\xa0tokens/s  \nITL\xa0mean\xa012.0\xa0ms · p90\xa0—"
    )
    counts = view.token_counts(column)
    assert counts == "prompt\xa012,345 · completion\xa064 · cached\xa0not\xa0reported · finish\xa0length"
    for line in (*figures.split("  \n"), counts):
        assert all(" " not in piece for piece in line.split(" · "))


# Issue 56: a hidden answer's notes and error name no engine, on every screen that arranges it.
TRITON = "tri-7"
LLAMA = "llama-9"


def _blind_exchange_with_notes() -> int:
    """A blind exchange sent with top_k, min_tokens and n = 2 to a Triton and a llama.cpp
    engine, its notes as `engine_params` wrote them, Triton's answer failed naming its port."""
    from db.models import Exchange, Run
    from db.session import session_scope
    from services.engines import SamplingParams
    from services.engines.endpoints import EngineRecord
    from services.playground.params import engine_params

    asked = SamplingParams(top_k=40, min_tokens=2, n=2)
    with session_scope() as session:
        run = Run(
            kind="playground",
            status="finished",
            engine_names=f"{TRITON},{LLAMA}",
            config={"conversation_id": "c", "turn": 1, "prompt": "p", "blind": True},
        )
        session.add(run)
        session.flush()
        for name, kind in ((TRITON, "triton"), (LLAMA, "llamacpp")):
            record = EngineRecord(
                0, name, "http://127.0.0.1:8001", kind, f"model-of-{name}", None, None, None
            )
            _, notes = engine_params(record, asked)
            session.add(
                Exchange(
                    run_id=run.id,
                    conversation_id="c",
                    engine_name=name,
                    model=f"model-of-{name}",
                    answer="an answer",
                    status="failed" if kind == "triton" else "finished",
                    params={"kind": kind},
                    metrics={"notes": notes, "ttft_s": 0.1234},
                    error_class="connect_refused" if kind == "triton" else None,
                    error="Triton at http://127.0.0.1:8001 refused" if kind == "triton" else None,
                )
            )
        return run.id


def test_a_hidden_answers_notes_and_error_name_no_engine(db_url: str) -> None:
    from dataclasses import asdict

    from services import playground
    from services.playground import votes
    from services.team.access import Viewer

    run_id = _blind_exchange_with_notes()
    arrangement = view.arrange(playground.get_exchange(run_id), "someone")
    assert arrangement.hidden
    by_label = {arrangement.labels[c.engine]: c for c in arrangement.columns}
    triton_label, llama_label = arrangement.labels[TRITON], arrangement.labels[LLAMA]
    # Pooled: the same notes under every answer, so what one kind lacks points at no answer.
    pooled = [
        "An engine in this exchange does not support parallel sampling (n > 1): sent n = 1.",
        "An engine in this exchange does not take min_tokens: not sent.",
        "An engine in this exchange does not take top_k, min_tokens: not sent.",
    ]
    assert by_label[triton_label].notes == by_label[llama_label].notes == pooled
    assert by_label[triton_label].error == f"Failed: {playground_error('connect_refused')}."
    for column in arrangement.columns:
        shown = {k: v for k, v in asdict(column).items() if k != "engine"}
        text = repr(shown)
        for word in ("Triton", "triton", "llama", "8001", "model-of", "0.1234"):
            assert word not in text, (word, text)
    # After the reveal the notes say the kinds again.
    votes.reveal(run_id, Viewer(role="operator", identity="local"))
    revealed = view.arrange(playground.get_exchange(run_id), "someone")
    notes = {c.engine: c.notes for c in revealed.columns}
    assert notes[LLAMA] == ["llama.cpp does not take min_tokens: not sent."]
    assert notes[TRITON][0] == "Triton does not take top_k, min_tokens: not sent."


def playground_error(error_class: str) -> str:
    from services.client import ERROR_CLASSES

    return ERROR_CLASSES[error_class]


def test_a_note_of_an_unknown_form_is_said_without_its_words_while_hidden() -> None:
    from services.playground.params import blind_notes

    assert blind_notes(["vLLM does not take top_k: not sent."], "Answer A") == [
        "Answer A's engine does not take top_k: not sent."
    ]
    assert blind_notes(["my-engine on port 8001 dropped a setting"], "Answer B") == [
        "Answer B's engine did not take a setting as asked (the note names the engine: shown after the vote)."
    ]
