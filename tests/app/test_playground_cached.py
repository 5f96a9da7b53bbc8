"""The Playground says where a cached-token count comes from and why it can be 0 (issue 47:
"24 on turn 1, vLLM 0 on turn 2" went unexplained)."""

from __future__ import annotations

from tests.app.test_playground_page import offline_engines, reopened, store_exchange

__all__ = ["offline_engines"]  # the fixture, imported for the test below


def test_each_panes_cached_count_names_its_source_and_why_it_is_zero(
    offline_engines: list[str],
) -> None:
    at = reopened(
        store_exchange(
            {
                "alpha": {
                    "answer": "a",
                    "params": {"kind": "vllm"},
                    "usage": {"prompt_tokens": 30, "prompt_tokens_details": {"cached_tokens": 0}},
                },
                "beta": {
                    "answer": "b",
                    "params": {"kind": "llamacpp"},
                    "usage": {"prompt_tokens": 30, "timings": {"cache_n": 24}},
                },
            }
        )
    )
    assert not at.exception, at.exception
    counts = {c.value: c.help for c in at.caption if c.value.startswith("prompt")}
    vllm = next(help for value, help in counts.items() if "cached\xa00" in value)
    llama = next(help for value, help in counts.items() if "cached\xa024" in value)
    assert "vLLM's own counter" in vllm and "whole KV blocks" in vllm and "128 tokens" in vllm
    assert "timings.cache_n" in llama and "turn 1 can already count" in llama


def test_a_stopped_pane_says_it_stopped_before_the_count_not_that_its_engine_lacks_one(
    offline_engines: list[str],
) -> None:
    """Issue 56: after Stop, llama.cpp's and vLLM's panes read "cached not reported", though both
    report it: their count comes on the last chunk, which a stopped answer never gets."""
    at = reopened(
        store_exchange(
            {
                "alpha": {"answer": "a", "status": "cancelled", "params": {"kind": "vllm"}},
                "beta": {"answer": "b", "status": "cancelled", "params": {"kind": "llamacpp"}},
            },
            status="cancelled",
        )
    )
    assert not at.exception, at.exception
    counts = [c for c in at.caption if c.value.startswith("prompt")]
    assert len(counts) == 2
    for caption in counts:
        assert "not reported" not in caption.value and "not\xa0reported" not in caption.value
        assert "stopped" in caption.value, caption.value
        assert "Stopped before" in caption.help and "Not reported" not in caption.help
