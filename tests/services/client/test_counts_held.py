"""A stream's usage held against its own text, end to end through the client (issue 55): the
scripted server's lying counters are refused, and the recorded streams of real engines (vLLM,
llama.cpp) never are."""

from __future__ import annotations

import pytest

from services.client import ChatRequest, run_blocking, run_chat
from services.engines import SamplingParams
from tests.support.scripted_server import ScriptedServer

MESSAGES = [{"role": "user", "content": "Say something short."}]


def ask(server: ScriptedServer, max_tokens: int | None = 32, **scenario: object) -> object:
    request = ChatRequest(
        base_url=server.base_url,
        model=server.model(**scenario),
        messages=MESSAGES,
        params=SamplingParams(max_tokens=max_tokens),
    )
    result = run_blocking(run_chat(request))
    assert result.ok, result.error
    return result


def test_a_full_length_usage_over_two_tokens_gives_the_streams_figures(
    scripted_server: ScriptedServer,
) -> None:
    result = ask(scripted_server, tokens=2, ctok=32, itl=5)
    figures = result.metrics()  # type: ignore[attr-defined]
    assert figures.output_tokens == 2 and figures.completion_tokens is None
    assert figures.stream_tokens == 2 and figures.chunk_tokens == [1, 1]
    # One gap between the two chunks, not 31 gaps of a sixteenth of it (the host may be loaded).
    assert figures.tpot_s == pytest.approx(figures.chunk_times_s[1] - figures.chunk_times_s[0])
    assert [(r.field, r.reported, r.against) for r in figures.refused] == [("completion_tokens", 32, 2)]
    assert result.output_tokens == 2 and result.completion_tokens is None  # type: ignore[attr-defined]
    assert result.summary()["completion_tokens"] is None  # type: ignore[attr-defined]


def test_the_max_tokens_asked_travels_with_the_result(scripted_server: ScriptedServer) -> None:
    result = ask(scripted_server, max_tokens=8, tokens=12, cap=0)
    assert result.max_tokens == 8  # type: ignore[attr-defined]
    assert result.metrics().over_max_tokens  # type: ignore[attr-defined]
    assert not ask(scripted_server, max_tokens=None, tokens=12).metrics().over_max_tokens  # type: ignore[attr-defined]


def test_a_real_engines_recorded_stream_is_never_refused(scripted_server: ScriptedServer) -> None:
    """vLLM's recording: five chunks, then the end-of-sequence token in its usage (6)."""
    result = ask(scripted_server, replay="vllm_chat_stream.txt", itl=1)
    figures = result.metrics()  # type: ignore[attr-defined]
    assert figures.refused == () and (figures.completion_tokens, figures.stream_tokens) == (6, 5)
    assert figures.output_tokens == 6


@pytest.mark.engines
async def test_the_local_engines_streams_are_never_refused(local_engines: list) -> None:
    """The real engines, as a benchmark asks (fixed output) and as a person does (natural stop,
    several choices): their usage always agrees with their streams."""
    asks = [
        SamplingParams(temperature=0.0, max_tokens=48, min_tokens=48, ignore_eos=True),
        SamplingParams(temperature=0.0, max_tokens=48),
        SamplingParams(temperature=0.8, max_tokens=24, n=2),
    ]
    for engine in local_engines:
        for params in asks:
            request = ChatRequest(
                base_url=engine.base_url,
                model=engine.model or "",
                kind=engine.kind,
                messages=[{"role": "user", "content": "Write a short poem about the sea, in French."}],
                params=params,
                read_timeout_s=120,
            )
            result = await run_chat(request)
            if params.n and params.n > 1 and result.error and "HTTP 400" in result.error:
                continue  # a one-slot llama.cpp refuses n > 1 itself: nothing to hold
            assert result.ok, f"{engine.name}: {result.error}"
            figures = result.metrics()
            assert figures.refused == (), (engine.name, params, result.usage, result.texts)
            assert not figures.over_max_tokens, (engine.name, params, figures.stream_tokens)


def test_answers_of_the_same_text_share_a_digest_and_others_do_not(
    scripted_server: ScriptedServer,
) -> None:
    first, again = ask(scripted_server, tokens=6), ask(scripted_server, tokens=6)
    other = ask(scripted_server, tokens=6, salt=1)
    assert first.answer_digest() == again.answer_digest() != other.answer_digest()  # type: ignore[attr-defined]
