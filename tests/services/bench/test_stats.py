"""Statistics: exact values on hand-made records."""

from __future__ import annotations

import pytest

from services.bench.stats import (
    RequestRecord,
    SloSpec,
    cdf_points,
    concurrency_timeline,
    meets_slo,
    summarize_engine,
    time_weighted_mean,
)


def record(
    index: int,
    ok: bool = True,
    start: float = 0.0,
    ttft: float = 0.1,
    e2e: float = 1.0,
    out: int = 10,
    inp: int = 100,
    **extra,
) -> RequestRecord:
    return RequestRecord(
        engine="e",
        index=index,
        ok=ok,
        start_s=start,
        ttft_s=ttft if ok else None,
        e2e_s=e2e,
        itl_s=[(e2e - ttft) / (out - 1)] * (out - 1) if ok and out > 1 else [],
        input_tokens=inp if ok else None,
        output_tokens=out if ok else 0,
        **extra,
    )


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
    assert summary["goodput_output_tok_s"] is None
    assert summary["engine_metrics"] == {"prefix_cache_hit_rate": None, "kv_cache_usage_max": None}


def test_goodput_and_slo_attainment() -> None:
    records = [
        record(0, ttft=0.05),
        record(1, ttft=0.2),
        record(2, ttft=0.05, e2e=3.0),
        record(3, ok=False),
    ]
    slo = SloSpec(ttft_ms=100, e2e_ms=2000)
    assert [meets_slo(r, slo) for r in records] == [True, False, False, False]
    summary = summarize_engine(records, slo=slo)
    assert summary["slo_attainment"] == 0.25
    assert summary["goodput_rps"] == pytest.approx(1 / summary["duration_s"])
    # Only the one request within the SLOs counts its tokens, over the same duration.
    good_tokens = records[0].output_tokens or 0
    assert summary["goodput_output_tok_s"] == pytest.approx(good_tokens / summary["duration_s"])
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


def test_token_rate_chart_bins_tokens_by_arrival_and_agrees_with_the_table() -> None:
    """Issue 19: the chart summed the tokens of requests that *finished* in each second and
    skipped empty seconds (a flat ~64 tok/s line beside a table saying 24.5)."""
    from services.bench.stats import summarize_engine, throughput_series

    records = [
        # 10 tokens from 0.5 s to 1.625 s, a silent gap, then 4 tokens from 4.0 s to 4.75 s
        RequestRecord(
            engine="e",
            index=0,
            ok=True,
            start_s=0.0,
            ttft_s=0.5,
            e2e_s=1.625,
            output_tokens=10,
            itl_s=[0.125] * 9,
        ),
        RequestRecord(
            engine="e",
            index=1,
            ok=True,
            start_s=3.5,
            ttft_s=0.5,
            e2e_s=1.25,
            output_tokens=4,
            itl_s=[0.25] * 3,
        ),
        RequestRecord(engine="e", index=2, ok=False, start_s=1.0, e2e_s=0.2, error_class="http_status"),
    ]
    series = throughput_series(records, 1.0)
    assert [p["t_s"] for p in series] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert [p["output_tok_s"] for p in series] == [4.0, 6.0, 0.0, 0.0, 4.0]
    table = summarize_engine(records, percentiles=(50,))
    assert table["output_throughput_tok_s"] == pytest.approx(
        sum(p["output_tok_s"] for p in series) / 4.75
    )


def test_token_rate_without_gaps_spreads_tokens_between_first_and_last() -> None:
    from services.bench.stats import token_arrival_times

    record = RequestRecord(
        engine="e", index=0, ok=True, start_s=1.0, ttft_s=1.0, e2e_s=3.0, output_tokens=3
    )
    assert token_arrival_times(record) == [2.0, 3.0, 4.0]
