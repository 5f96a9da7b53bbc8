"""services/bench/view/costs.py: a run's cost per engine and step, "not priced" when it had no price."""

from __future__ import annotations

from services.bench import view as views
from services.bench.stats import summarize_engine
from services.core import cost


def block(price: float | None, out_tok_s: float, goodput_tok_s: float | None = None) -> dict:
    base = {
        **summarize_engine([]),
        "output_throughput_tok_s": out_tok_s,
        "total_token_throughput_tok_s": out_tok_s * 2,
        "goodput_output_tok_s": goodput_tok_s,
    }
    return {**base, cost.SUMMARY_KEY: cost.cost_of_block(price, base).to_json()}


def test_each_engine_shows_its_price_and_cost_or_not_priced() -> None:
    summary = {
        "engines": {"a": block(3.6, 1000.0, 500.0), "b": block(None, 1000.0, 500.0)},
        "slo": "TTFT <= 100 ms",
    }
    table = views.cost_table(summary)
    a, b = table.to_dict("records")
    assert a == {
        "engine": "a",
        "price ($/h)": "3.6",
        "$/1M output tok": "$1.00",
        "$/1M total tok": "$0.5000",
        "$/1M output tok at goodput": "$2.00",
    }
    assert set(b.values()) == {"b", "not priced"}
    assert views.cost_lines(summary) == [
        (
            "a: 3.6 $/h, $1.00 per 1M output tokens, $0.5000 per 1M total tokens, "
            "$2.00 per 1M output tokens at goodput"
        ),
        "b: not priced",
    ]


def test_a_priced_engine_that_met_no_slo_says_so_not_not_priced() -> None:
    summary = {"engines": {"a": block(3.6, 1000.0, 0.0)}, "slo": "TPOT <= 15 ms"}
    (row,) = views.cost_table(summary).to_dict("records")
    assert row["$/1M output tok"] == "$1.00"
    assert row["$/1M output tok at goodput"] == "no goodput (no request met the SLOs)"
    assert views.cost_lines(summary)[0].endswith(
        "per 1M total tokens, no goodput (no request met the SLOs)"
    )


def test_without_slos_there_is_no_goodput_column() -> None:
    table = views.cost_table({"engines": {"a": block(1.0, 10.0)}})
    assert "$/1M output tok at goodput" not in table.columns


def test_a_run_stored_before_prices_reads_not_priced() -> None:
    old = summarize_engine([])
    assert views.cost_lines({"engines": {"a": old}}) == ["a: not priced"]


def test_a_sweep_has_a_row_per_step() -> None:
    summary = {
        "engines": {"a": {**block(2.0, 20.0), "from_step": 1}},
        "sweep": [
            {"engine": "a", "step": 0, "concurrency": 1, **block(2.0, 10.0)},
            {"engine": "a", "step": 1, "concurrency": 2, **block(2.0, 20.0)},
        ],
    }
    rows = views.cost_rows(summary, steps=True)
    assert [(r.engine, r.step) for r in rows] == [("a", "concurrency 1"), ("a", "concurrency 2")]
    assert rows[0].cost.usd_per_1m_output == 2 * rows[1].cost.usd_per_1m_output  # type: ignore[operator]
    assert list(views.cost_table(summary, steps=True)["step"]) == ["concurrency 1", "concurrency 2"]


def test_the_cheapest_step_meeting_the_slos_is_named() -> None:
    """Issue 33: across engines and sweep steps, the least money per token that counts."""
    from services.bench.stats import SloSpec

    def step(engine: str, level: int, price: float, goodput_tok_s: float, attainment: float) -> dict:
        base = {
            **block(price, goodput_tok_s * 2, goodput_tok_s),
            "completed": 10,
            "slo_attainment": attainment,
        }
        return {"engine": engine, "step": level, "concurrency": level, **base}

    slo = SloSpec(ttft_ms=500, attainment=0.9)
    summary = {
        "engines": {"a": {}, "b": {}},
        "sweep": [
            step("a", 1, 3.6, 100.0, 0.97),  # $10 per 1M tokens within the SLO
            step("b", 1, 7.2, 400.0, 0.95),  # $5: the cheapest that meets them
            step("b", 2, 7.2, 900.0, 0.5),  # cheaper still, but misses the SLOs
        ],
    }
    assert views.cheapest_line(summary, slo) == (
        "Cheapest meeting the SLOs: b at concurrency 1, $5.00 per 1M output tokens at goodput."
    )
    missed = views.cheapest_line(summary, SloSpec(ttft_ms=500, attainment=0.99))
    assert missed is not None and missed.startswith("Cheapest meeting the SLOs: none")
    unpriced = {"engines": {"a": {**block(None, 10.0), "completed": 3}}}
    assert views.cheapest_line(unpriced, SloSpec()) is None
    single = {"engines": {"a": {**block(3.6, 1000.0), "completed": 3}}}
    assert (
        views.cheapest_line(single, SloSpec())
        == "Cheapest (no SLOs set): a, $1.00 per 1M output tokens."
    )


def test_the_cost_frontier_keeps_only_the_choices_worth_paying_for() -> None:
    """Issue 33: $ per 1M output tokens against tokens/s per user (1 / median TPOT), the
    frontier across engines; an unpriced step is no point (not a $0 one)."""
    from services.bench.view.costs import (
        CostPoint,
        cost_frontier,
        cost_frontier_figure,
        sweep_cost_points,
    )

    def step(engine: str, level: int, price: float | None, tok_s: float, tpot: float) -> dict:
        base = {**block(price, tok_s), "completed": 10, "tpot_s": {"p50": tpot}}
        return {"engine": engine, "step": level, "concurrency": level, **base}

    summary = {
        "engines": {"a": {}, "b": {}},
        "sweep": [
            step("a", 0, 3.6, 100.0, 0.01),  # 100 tok/s per user, $10
            step("a", 1, 3.6, 400.0, 0.02),  # 50 tok/s per user, $2.50
            step("b", 0, 3.6, 80.0, 0.02),  # 50 tok/s per user, $12.50: beaten by a at 1
            step("b", 1, None, 500.0, 0.04),  # not priced: no point
        ],
    }
    points = sweep_cost_points(summary)
    assert [(p.label, round(p.per_user_tok_s), round(p.usd_per_1m, 2)) for p in points] == [
        ("a concurrency 0", 100, 10.0),
        ("a concurrency 1", 50, 2.5),
        ("b concurrency 0", 50, 12.5),
    ]
    assert [p.label for p in cost_frontier(points)] == ["a concurrency 1", "a concurrency 0"]
    figure = cost_frontier_figure(points)
    assert figure is not None
    assert [trace.name for trace in figure.data] == ["a", "b", "frontier"]
    assert list(figure.data[-1].y) == [2.5, 10.0]
    assert cost_frontier_figure([CostPoint("a", "a", 1.0, 1.0)]) is None
