"""Statistics: exact values on hand-made records."""

from __future__ import annotations

import pytest

from services.bench.stats import (
    RequestRecord,
    SloSpec,
    cdf_points,
    concurrency_timeline,
    describe,
    meets_slo,
    percentile,
    spread_itl,
    summarize_engine,
    time_weighted_mean,
    tokens_per_chunk,
    tpot,
)


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


def test_tokens_per_chunk_follows_the_usage_count() -> None:
    assert tokens_per_chunk([3, 3, 3], 3) == [1, 1, 1]
    assert tokens_per_chunk([3, 3, 3], None) == [1, 1, 1]
    # 6 tokens over 3 chunks of equal text: 2 each.
    assert tokens_per_chunk([4, 4, 4], 6) == [2, 2, 2]
    # Proportional to the text: the long chunk carries the extra tokens.
    assert tokens_per_chunk([1, 1, 10], 6) == [1, 1, 4]
    assert sum(tokens_per_chunk([5, 7, 2, 9], 17)) == 17
    # Fewer tokens than chunks (a whitespace-only chunk): the first ones carry them.
    assert tokens_per_chunk([1, 1, 1], 2) == [1, 1, 0]


def test_spread_itl_is_per_token_and_sums_to_decode_time() -> None:
    # Chunks at 0.100 (TTFT), 0.110, 0.130 carrying 1, 1, 2 tokens.
    gaps = spread_itl([0.100, 0.110, 0.130], [1, 1, 2])
    assert gaps == pytest.approx([0.010, 0.010, 0.010])
    assert sum(gaps) == pytest.approx(0.130 - 0.100)
    # A first chunk of 3 tokens: two tokens arrived with the first (gap 0).
    assert spread_itl([0.1, 0.2], [3, 1]) == pytest.approx([0.0, 0.0, 0.1])
    # A chunk carrying no token: its time moves on to the next token's gap.
    assert spread_itl([0.1, 0.15, 0.2], [1, 0, 1]) == pytest.approx([0.1])
    assert spread_itl([], []) == []


def test_tpot() -> None:
    assert tpot(0.1, 1.1, 11) == pytest.approx(0.1)
    assert tpot(0.1, 0.1, 1) is None
    assert tpot(None, 1.0, 10) is None


def record(index: int, ok: bool = True, start: float = 0.0, ttft: float = 0.1, e2e: float = 1.0, out: int = 10,
           inp: int = 100, **extra) -> RequestRecord:
    return RequestRecord(engine="e", index=index, ok=ok, start_s=start, ttft_s=ttft if ok else None, e2e_s=e2e,
                         itl_s=[(e2e - ttft) / (out - 1)] * (out - 1) if ok and out > 1 else [], input_tokens=inp if ok else None,
                         output_tokens=out if ok else 0, **extra)


def test_summary_counts_throughput_and_errors() -> None:
    records = [
        record(0, start=0.0),
        record(1, start=1.0, e2e=2.0),
        record(2, ok=False, start=1.5, e2e=0.5, error_class="stream_cut"),
        record(3, ok=False, start=2.0, e2e=0.1, error_class="http_status"),
        record(4, start=-1.0, warmup=True),
    ]
    summary = summarize_engine(records)
    assert (summary["completed"], summary["failed"], summary["sent"], summary["warmup"]) == (2, 2, 4, 1)
    assert summary["completed"] + summary["failed"] == summary["sent"]
    assert summary["errors_by_class"] == {"stream_cut": 1, "http_status": 1}
    # Measured window: first start 0.0 to last end 3.0 (record 1: 1.0 + 2.0).
    assert summary["duration_s"] == pytest.approx(3.0)
    assert summary["request_throughput_rps"] == pytest.approx(2 / 3)
    assert summary["output_throughput_tok_s"] == pytest.approx(20 / 3)
    assert summary["input_throughput_tok_s"] == pytest.approx(200 / 3)
    assert summary["total_token_throughput_tok_s"] == pytest.approx(220 / 3)
    assert summary["ttft_s"]["p50"] == pytest.approx(0.1)
    assert summary["e2e_s"]["mean"] == pytest.approx(1.5)
    assert summary["tpot_s"]["p50"] == pytest.approx((0.9 / 9 + 1.9 / 9) / 2)
    assert summary["error_rate"] == 0.5
    assert summary["goodput_rps"] is None
    assert summary["engine_metrics"] == {"prefix_cache_hit_rate": None, "kv_cache_usage_max": None}


def test_goodput_and_slo_attainment() -> None:
    records = [record(0, ttft=0.05), record(1, ttft=0.2), record(2, ttft=0.05, e2e=3.0), record(3, ok=False)]
    slo = SloSpec(ttft_ms=100, e2e_ms=2000)
    assert [meets_slo(r, slo) for r in records] == [True, False, False, False]
    summary = summarize_engine(records, slo=slo)
    assert summary["slo_attainment"] == 0.25
    assert summary["goodput_rps"] == pytest.approx(1 / summary["duration_s"])
    # TPOT limits do not apply to one-token answers.
    assert meets_slo(record(5, out=1, ttft=0.01, e2e=0.01), SloSpec(tpot_ms=1))


def test_fixed_output_honoured_or_not() -> None:
    full = [record(0, out=10, requested_output_tokens=10), record(1, out=10, requested_output_tokens=10)]
    assert summarize_engine(full, fixed_output=True)["honoured_output_len"] is True
    short = full + [record(2, out=4, requested_output_tokens=10)]
    summary = summarize_engine(short, fixed_output=True)
    assert summary["honoured_output_len"] is False
    assert summary["short_output_requests"] == 1
    assert summarize_engine(full)["honoured_output_len"] is None


def test_concurrency_timeline_and_mean() -> None:
    records = [record(0, start=0.0, e2e=2.0), record(1, start=1.0, e2e=2.0)]
    timeline = concurrency_timeline(records)
    assert timeline == [(0.0, 1), (1.0, 2), (2.0, 1), (3.0, 0)]
    assert time_weighted_mean(timeline) == pytest.approx(4 / 3)
    assert summarize_engine(records)["concurrency_max"] == 2


def test_cdf_points() -> None:
    xs, ys = cdf_points([3.0, 1.0, 2.0, 4.0])
    assert xs == [1.0, 2.0, 3.0, 4.0]
    assert ys == [0.25, 0.5, 0.75, 1.0]
    xs, ys = cdf_points(list(range(1000)), max_points=10)
    assert len(xs) <= 12 and ys[-1] == 1.0


def test_describe_of_a_long_list_equals_the_plain_python_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Long lists (a run's ITLs) are sorted and squared with numpy: the figures must be the same
    floats as the plain Python path gives."""
    import random

    from services.bench import stats

    rng = random.Random(7)
    values = [rng.lognormvariate(-4.6, 0.4) for _ in range(20_000)]
    assert len(values) >= stats._NUMPY_FROM
    with_numpy = stats.describe(values, (50, 99.9))
    monkeypatch.setattr(stats, "_NUMPY_FROM", len(values) + 1)
    assert stats.describe(iter(values), (50, 99.9)) == with_numpy
    assert with_numpy["p50"] == stats.percentile(sorted(values), 50)


def test_token_rate_chart_bins_tokens_by_arrival_and_agrees_with_the_table() -> None:
    """Issue 19: the chart summed the tokens of requests that *finished* in each second and
    skipped empty seconds (a flat ~64 tok/s line beside a table saying 24.5)."""
    from services.bench.stats import summarize_engine, throughput_series

    records = [
        # 10 tokens from 0.5 s to 1.625 s, a silent gap, then 4 tokens from 4.0 s to 4.75 s
        RequestRecord(engine="e", index=0, ok=True, start_s=0.0, ttft_s=0.5, e2e_s=1.625, output_tokens=10,
                      itl_s=[0.125] * 9),
        RequestRecord(engine="e", index=1, ok=True, start_s=3.5, ttft_s=0.5, e2e_s=1.25, output_tokens=4,
                      itl_s=[0.25] * 3),
        RequestRecord(engine="e", index=2, ok=False, start_s=1.0, e2e_s=0.2, error_class="http_status"),
    ]
    series = throughput_series(records, 1.0)
    assert [p["t_s"] for p in series] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert [p["output_tok_s"] for p in series] == [4.0, 6.0, 0.0, 0.0, 4.0]
    table = summarize_engine(records, percentiles=(50,))
    assert table["output_throughput_tok_s"] == pytest.approx(sum(p["output_tok_s"] for p in series) / 4.75)


def test_token_rate_without_gaps_spreads_tokens_between_first_and_last() -> None:
    from services.bench.stats import token_arrival_times

    record = RequestRecord(engine="e", index=0, ok=True, start_s=1.0, ttft_s=1.0, e2e_s=3.0, output_tokens=3)
    assert token_arrival_times(record) == [2.0, 3.0, 4.0]
