"""Issue 20: limits of a shared server, enforced on what is actually sent."""

from __future__ import annotations

import pytest

from services import endpoints, limits, playground
from services.bench import jobs
from services.engines import SamplingParams
from services.errors import ValidationError


def test_extra_body_cannot_lift_n_or_max_tokens(db_url: str, scripted_server) -> None:  # type: ignore[no-untyped-def]
    for name in ("a", "b"):
        endpoints.add_engine(name, scripted_server.base_url, kind="vllm", model=scripted_server.model(tokens=4))
    choices = (playground.EngineChoice("a", extra_body={"n": 1000, "max_tokens": 1_000_000}),
               playground.EngineChoice("b"))
    with pytest.raises(ValidationError, match="SHOOTOUT_LIMIT_N"):
        playground.send(playground.SendRequest(engines=choices, prompt="hi", params=SamplingParams(max_tokens=8)))
    choices = (playground.EngineChoice("a", extra_body={"max_tokens": 1_000_000}), playground.EngineChoice("b"))
    with pytest.raises(ValidationError, match="SHOOTOUT_LIMIT_MAX_TOKENS"):
        playground.send(playground.SendRequest(engines=choices, prompt="hi", params=SamplingParams(max_tokens=8)))
    assert playground.history(10) == []  # refused before anything was stored


def test_a_huge_prompt_is_refused_before_anything_is_stored(db_url: str, scripted_server,  # type: ignore[no-untyped-def]
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOOTOUT_LIMIT_PROMPT_CHARS", "1000")
    for name in ("a", "b"):
        endpoints.add_engine(name, scripted_server.base_url, kind="vllm", model=scripted_server.model(tokens=4))
    with pytest.raises(ValidationError, match="1,001 characters"):
        playground.send(playground.SendRequest(engines=(playground.EngineChoice("a"), playground.EngineChoice("b")),
                                               prompt="x" * 1001, params=SamplingParams(max_tokens=8)))


def test_concurrent_benchmarks_are_capped(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOOTOUT_LIMIT_BENCHMARKS", "1")
    limits.check_active("benchmark", 0)
    with pytest.raises(ValidationError, match="1 benchmarks are running on this server already"):
        limits.check_active("benchmark", jobs.count_active(jobs.KIND) + 1)
