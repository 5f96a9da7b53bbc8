"""The usage held against the stream (services/core/counts.py): the lies it refuses, and the
honest streams it must never refuse (end-of-sequence tokens, several tokens per chunk,
characters of several tokens, thinking tags, several choices)."""

from __future__ import annotations

import pytest

from services.core.counts import Refusal, StreamCount, held_counts

WORDS = [" red", " fox", " sky", " sea"]


def chunks(count: int, size: int = 1) -> list[str]:
    """`count` chunks of `size` words each."""
    return ["".join(WORDS[(i * size + k) % 4] for k in range(size)) for i in range(count)]


def test_a_full_length_usage_over_two_streamed_tokens_is_refused() -> None:
    held = held_counts({"completion_tokens": 32, "prompt_tokens": 9}, None, 2, [chunks(2)], 32)
    assert held.completion_tokens is None and held.output_tokens == 2 and held.stream_tokens == 2
    assert held.refused == (Refusal("completion_tokens", 32, 2, "above_stream"),)
    assert held.prompt_tokens == 9


def test_a_usage_three_times_its_one_token_chunks_is_refused() -> None:
    held = held_counts({"completion_tokens": 96}, None, 32, [chunks(32)], 32)
    assert held.output_tokens == 32 and held.refused[0].rule == "above_stream"


def test_a_usage_below_the_chunks_is_refused() -> None:
    held = held_counts({"completion_tokens": 3}, None, 32, [chunks(32)])
    assert held.output_tokens == 32 and held.refused[0].rule == "below_stream"


@pytest.mark.parametrize(
    ("usage", "field", "rule"),
    [
        ({"completion_tokens": -32}, "completion_tokens", "negative"),
        ({"completion_tokens": 32, "prompt_tokens": -5}, "prompt_tokens", "negative"),
        (
            {
                "completion_tokens": 32,
                "prompt_tokens": 20,
                "prompt_tokens_details": {"cached_tokens": 60},
            },
            "cached_tokens",
            "above_prompt",
        ),
        (
            {"completion_tokens": 32, "prompt_tokens_details": {"cached_tokens": -1}},
            "cached_tokens",
            "negative",
        ),
        (
            {"completion_tokens": 32, "completion_tokens_details": {"reasoning_tokens": -4}},
            "reasoning_tokens",
            "negative",
        ),
    ],
)
def test_impossible_counters_are_refused_by_name(usage: dict, field: str, rule: str) -> None:
    held = held_counts(usage, None, 32, [chunks(32)], 32)
    assert [(r.field, r.rule) for r in held.refused] == [(field, rule)]
    assert held.output_tokens == 32
    values = (held.completion_tokens, held.prompt_tokens, held.cached_tokens, held.reasoning_tokens)
    assert all(value is None or value >= 0 for value in values)


def test_llamacpp_cache_n_above_the_prompt_is_refused() -> None:
    held = held_counts({"completion_tokens": 4, "prompt_tokens": 10}, {"cache_n": 30}, 4, [chunks(4)])
    assert held.cached_tokens is None and held.refused[0].field == "cached_tokens"


def test_completion_above_max_tokens_without_the_stream_to_show_it_is_refused() -> None:
    # No text recorded (an import, a test's hand-made trace): only the bound asked holds it.
    held = held_counts({"completion_tokens": 64}, None, 32, None, 32)
    assert held.output_tokens == 32 and held.refused[0].rule == "above_max_tokens"
    assert held.stream_tokens is None and not held.over_max_tokens


def test_a_stream_past_max_tokens_is_the_engine_ignoring_it_not_a_lying_counter() -> None:
    held = held_counts({"completion_tokens": 40}, None, 40, [chunks(40)], 32)
    assert held.refused == () and held.output_tokens == 40 and held.over_max_tokens


@pytest.mark.parametrize(
    ("texts", "usage"),
    [
        # vLLM's recorded stream: 5 chunks, then the end-of-sequence token in the usage.
        ([["S", "ammy", ":", " hello", "."]], 6),
        # Fixed output (ignore_eos): exactly one token per chunk.
        ([chunks(32)], 32),
        # Three tokens per chunk (a stream interval, speculative decoding): coarse.
        ([chunks(11, 3)], 32),
        # A first chunk of four tokens among one-token chunks.
        ([[*chunks(1, 4), *chunks(28)]], 32),
        # Subword tokens three to a chunk ("tokenization" is 3 tokens): coarse, so the text's
        # own bounds hold, not one token per chunk.
        ([[" tokenization is", " hard to", " get right"] * 4], 30),
        # Characters of several byte-level tokens each, sent whole (one chunk per character).
        ([["日", "本", "語", "の", "文"] * 4], 45),
        # A reasoning parser's stripped tags and the end-of-sequence token: 3 tokens unseen.
        ([chunks(20)], 23),
        # Two choices, the usage summing both.
        ([chunks(16), chunks(16)], 32),
        # Whitespace-only chunks are tokens too.
        ([["\n", "\n", " ok", "\n\n"]], 5),
    ],
)
def test_honest_streams_are_never_refused(texts: list[list[str]], usage: int) -> None:
    chunk_count = sum(len(parts) for parts in texts)
    held = held_counts({"completion_tokens": usage}, None, chunk_count, texts, 64)
    assert held.refused == () and held.output_tokens == usage


def test_the_streams_count_proves_its_words_and_splits_no_word_twice() -> None:
    count = StreamCount.of([["Hel", "lo wor", "ld", " again"]])
    assert (count.chunks, count.tokens, count.coarse) == (4, 4, True)
    assert StreamCount.of([[" a b c d e f"]]).tokens == 6
    fine = StreamCount.of([chunks(8)])
    assert (fine.tokens, fine.coarse) == (8, False) and fine.most == 8 + 4


def test_non_numbers_stay_unreported_and_old_answers_without_text_keep_their_usage() -> None:
    held = held_counts({"completion_tokens": "32", "prompt_tokens": 2.5}, None, 3, None)
    assert (held.completion_tokens, held.prompt_tokens, held.output_tokens) == (None, None, 3)
    assert held.refused == ()
    assert held_counts({"completion_tokens": 64}, None, 16, None).output_tokens == 64


def test_a_refusal_reads_back_and_odd_stored_ones_are_dropped() -> None:
    refusal = Refusal("completion_tokens", -32, None, "negative")
    assert Refusal.from_json(refusal.to_json()) == refusal
    assert Refusal.from_json({"field": "x", "reported": "1", "rule": "negative"}) is None
    assert Refusal.from_json({"field": "x", "reported": 1, "rule": "invented"}) is None
    assert Refusal.from_json([1, 2]) is None
