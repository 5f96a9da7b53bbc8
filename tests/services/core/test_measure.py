"""Per-request metrics and the one percentile: exact values on hand-made streams."""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field

import numpy as np
import pytest

from services.core.measure import (
    cached_tokens,
    chunk_token_counts,
    describe,
    measure_stream,
    percentile,
    token_count,
    token_gaps,
    tpot,
)


@dataclass
class Choice:
    times: list[float] = field(default_factory=list)
    chars: list[int] = field(default_factory=list)
    reasoning: list[int] = field(default_factory=list)


def stream(
    ttft: float, gaps: list[float], chars: list[int], start: float = 100.0, thinking: int = 0
) -> Choice:
    """A choice whose first `thinking` chunks are thinking."""
    times = [start + ttft]
    for gap in gaps:
        times.append(times[-1] + gap)
    return Choice(times, chars, list(range(thinking)))


def test_percentile_linear_interpolation() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 50) == 2.5
    assert percentile(values, 90) == pytest.approx(3.7)
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile([5.0], 99) == 5.0


def test_describe_has_the_summary_keys_and_chosen_percentiles() -> None:
    stats = describe([4.0, 1.0, 3.0, 2.0], percentiles=(50, 99.9))
    assert stats["mean"] == 2.5
    assert stats["p50"] == 2.5
    assert stats["p99.9"] == pytest.approx(3.997)
    assert stats["min"] == 1.0 and stats["max"] == 4.0
    assert {"p90", "p95", "p99", "std"} <= stats.keys()
    empty = describe([])
    assert empty["p50"] is None and empty["mean"] is None


def test_chunk_token_counts_follows_the_usage_count() -> None:
    assert chunk_token_counts([3, 3, 3], 3) == [1, 1, 1]
    assert chunk_token_counts([3, 3, 3], None) == [1, 1, 1]
    # 6 tokens over 3 chunks of equal text: 2 each.
    assert chunk_token_counts([4, 4, 4], 6) == [2, 2, 2]
    # Proportional to the text: the long chunk carries the extra tokens.
    assert chunk_token_counts([1, 1, 10], 6) == [1, 1, 4]
    assert sum(chunk_token_counts([5, 7, 2, 9], 17)) == 17
    # Fewer tokens than chunks (a whitespace-only chunk): the first ones carry them.
    assert chunk_token_counts([1, 1, 1], 2) == [1, 1, 0]


def test_token_gaps_is_per_token_and_sums_to_decode_time() -> None:
    # Chunks at 0.100 (TTFT), 0.110, 0.130 carrying 1, 1, 2 tokens.
    gaps = token_gaps([0.100, 0.110, 0.130], [1, 1, 2])
    assert gaps == pytest.approx([0.010, 0.010, 0.010])
    assert sum(gaps) == pytest.approx(0.130 - 0.100)
    # A first chunk of 3 tokens: two tokens arrived with the first (gap 0).
    assert token_gaps([0.1, 0.2], [3, 1]) == pytest.approx([0.0, 0.0, 0.1])
    # A chunk carrying no token: its time moves on to the next token's gap.
    assert token_gaps([0.1, 0.15, 0.2], [1, 0, 1]) == pytest.approx([0.1])
    assert token_gaps([], []) == []


def test_tpot() -> None:
    assert tpot(0.1, 1.1, 11) == pytest.approx(0.1)
    assert tpot(0.1, 0.1, 1) is None
    assert tpot(None, 1.0, 10) is None


def test_the_issue_shape_gives_one_itl_per_token_whose_mean_is_the_tpot() -> None:
    """64 tokens, 4 per chunk, TTFT 50 ms, 10 ms per token: `cli.py ask` said 10.00 ms and
    `cli.py bench` 9.52 ms for this shape. One definition: 63 gaps summing to E2E - TTFT."""
    choice = stream(0.050, [0.040] * 15, [16] * 16)
    figures = measure_stream(100.0, [choice], {"completion_tokens": 64, "prompt_tokens": 9})
    assert figures.ttft_s == pytest.approx(0.050)
    assert figures.e2e_s == pytest.approx(0.650)
    assert figures.chunk_tokens == [4] * 16
    assert len(figures.itl_s) == 63 and figures.itl_s[:3] == [0.0, 0.0, 0.0]
    assert sum(figures.itl_s) == pytest.approx(figures.e2e_s - figures.ttft_s)
    assert figures.tpot_s == pytest.approx(0.6 / 63)
    assert figures.itl_mean_s == pytest.approx(figures.tpot_s)
    assert round(figures.itl_mean_s * 1000, 2) == 9.52
    assert (figures.output_tokens, figures.prompt_tokens, figures.cached_tokens) == (64, 9, None)


def test_a_stream_without_usage_counts_one_token_per_chunk() -> None:
    figures = measure_stream(0.0, [stream(0.1, [0.01, 0.03], [3, 3, 3], start=0.0)], None)
    assert figures.chunk_tokens == [1, 1, 1] and figures.output_tokens == 3
    assert figures.itl_s == pytest.approx([0.01, 0.03])
    assert figures.tpot_s == pytest.approx(0.02) and figures.itl_p90_s == pytest.approx(0.028)


def test_several_choices_span_ttft_and_e2e_and_share_the_tokens() -> None:
    first = stream(0.2, [0.1, 0.1], [4, 4, 4], start=0.0)
    second = stream(0.1, [0.1, 0.3], [4, 4, 4], start=0.0)
    figures = measure_stream(0.0, [first, second], {"completion_tokens": 6})
    assert figures.ttft_s == pytest.approx(0.1) and figures.e2e_s == pytest.approx(0.5)
    # ITL and TPOT are choice 0's: 3 of the 6 tokens, one per chunk.
    assert figures.chunk_tokens == [1, 1, 1] and figures.itl_s == pytest.approx([0.1, 0.1])
    assert figures.output_tokens == 6


def test_an_empty_stream_has_no_figures() -> None:
    figures = measure_stream(5.0, [], {"completion_tokens": 0})
    assert (figures.ttft_s, figures.e2e_s, figures.tpot_s, figures.itl_s) == (None, None, None, [])
    assert figures.itl_mean_s is None and figures.itl_p90_s is None and figures.output_tokens == 0


def test_cached_tokens_from_openai_usage_or_llamacpp_timings() -> None:
    assert cached_tokens({"prompt_tokens_details": {"cached_tokens": 12}}, {"cache_n": 3}) == 12
    assert cached_tokens({"prompt_tokens": 5}, {"cache_n": 3}) == 3
    # The Playground stores the timings inside the usage.
    assert cached_tokens({"timings": {"cache_n": 7}}) == 7
    assert cached_tokens({"prompt_tokens_details": None}, None) is None
    assert cached_tokens(None) is None
    assert cached_tokens({"prompt_tokens_details": {"cached_tokens": "4"}}) is None


def test_token_count_takes_whole_numbers_only() -> None:
    assert [token_count(v) for v in (3, 3.0, 3.5, "3", None, True, float("nan"))] == [
        3,
        3,
        None,
        None,
        None,
        None,
        None,
    ]


def test_percentile_along_an_axis_is_the_same_rule() -> None:
    matrix = np.array([[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]])
    assert percentile(matrix, 90, axis=1).tolist() == pytest.approx([3.7, 3.7])
    with pytest.raises(ValueError):
        percentile([], 50)


def test_describe_of_a_long_list_matches_the_textbook_figures() -> None:
    rng = random.Random(7)
    values = [rng.lognormvariate(-4.6, 0.4) for _ in range(20_000)]
    figures = describe(iter(values), (50, 99.9))
    assert figures["mean"] == pytest.approx(statistics.fmean(values), rel=1e-12)
    assert figures["std"] == pytest.approx(statistics.pstdev(values), rel=1e-9)
    assert figures["p50"] == pytest.approx(statistics.median(values), rel=1e-12)
    assert figures["min"] == min(values) and figures["max"] == max(values)
    assert figures["p99.9"] == percentile(values, 99.9)


def test_chunk_token_counts_add_up_and_follow_the_text() -> None:
    # A first chunk of three words among one-word chunks carries three tokens.
    assert chunk_token_counts([12, 4, 4, 4, 4, 4, 4], 9) == [3, 1, 1, 1, 1, 1, 1]
    # Short chunks keep one token each; the long one gives back what that lifted.
    assert chunk_token_counts([1] * 10 + [100], 20) == [1] * 10 + [10]
    rng = random.Random(3)
    for _ in range(2000):
        chars = [rng.randint(0, 20) for _ in range(rng.randint(1, 30))]
        total = rng.randint(len(chars), 5 * len(chars))
        counts = chunk_token_counts(chars, total)
        assert sum(counts) == total and min(counts) >= 1


def test_thinking_chunks_give_ttfat_reasoning_and_answer_tokens_and_rates() -> None:
    """4 thinking chunks then 6 answer chunks, one token each, 10 ms apart, TTFT 50 ms: the
    answer starts 40 ms after the first thinking token; ITL and TPOT stay over all 10 tokens."""
    choice = stream(0.050, [0.010] * 9, [4] * 10, start=0.0, thinking=4)
    figures = measure_stream(0.0, [choice], {"completion_tokens": 10})
    assert figures.ttft_s == pytest.approx(0.050) and figures.ttfat_s == pytest.approx(0.090)
    assert (figures.reasoning_tokens, figures.reasoning_tokens_source) == (4, "stream")
    assert figures.answer_tokens == 6 and figures.output_tokens == 10
    assert figures.ttft_includes_reasoning
    assert figures.reasoning_tok_s == pytest.approx(4 / 0.040)
    assert figures.answer_tok_s == pytest.approx(5 / 0.050)
    assert figures.tpot_s == pytest.approx(0.010) and len(figures.itl_s) == 9


def test_the_engines_reasoning_count_wins_and_says_so() -> None:
    choice = stream(0.050, [0.010] * 9, [4] * 10, start=0.0, thinking=4)
    usage = {"completion_tokens": 20, "completion_tokens_details": {"reasoning_tokens": 12}}
    figures = measure_stream(0.0, [choice], usage)
    assert (figures.reasoning_tokens, figures.reasoning_tokens_source) == (12, "usage")
    assert figures.answer_tokens == 8
    # Without the detail, the usage's 20 tokens are shared over the 10 chunks: 2 per chunk.
    shared = measure_stream(0.0, [choice], {"completion_tokens": 20})
    assert (shared.reasoning_tokens, shared.answer_tokens) == (8, 12)


def test_a_model_that_does_not_think_has_ttfat_equal_to_ttft() -> None:
    figures = measure_stream(0.0, [stream(0.1, [0.01, 0.03], [3, 3, 3], start=0.0)], None)
    assert figures.ttfat_s == figures.ttft_s and figures.reasoning_tokens == 0
    assert figures.answer_tokens == 3 and not figures.ttft_includes_reasoning
    assert figures.reasoning_tok_s is None and figures.answer_tok_s == pytest.approx(2 / 0.04)


def test_thinking_without_an_answer_has_no_ttfat() -> None:
    figures = measure_stream(0.0, [stream(0.1, [0.01], [3, 3], start=0.0, thinking=2)], None)
    assert figures.ttfat_s is None and figures.ttft_includes_reasoning
    assert (figures.reasoning_tokens, figures.answer_tokens) == (2, 0)
    assert figures.reasoning_tok_s is None and figures.answer_tok_s is None
