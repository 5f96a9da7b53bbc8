"""The comparison table's wording: one rule for changes of any size, one unit per latency row."""

from __future__ import annotations

import math

import pytest

from services.runs.comparison import change_text, format_row


def test_change_wording_is_one_rule_across_200_percent() -> None:
    """Issue 36: "+199.9% worse" became "3.0× worse" at +200%, a jump where the values had not moved."""
    assert change_text(199.9, "worse") == "+199.9% worse"
    assert change_text(200.0, "worse") == "+200.0% worse"
    assert change_text(21143.8, "worse") == "+21,143.8% worse"
    assert change_text(-50.0, "better") == "-50.0% better"
    assert change_text(0.01, "same") == "same"
    assert change_text(None, "better") == "better"
    assert change_text(None, None) == ""


def test_a_latency_row_keeps_one_unit() -> None:
    """Issue 36: Compare's E2E row read "850 ms" beside "1.20 s"."""
    assert format_row("e2e_s", [0.85, 1.2, None]) == ("0.850 s", "1.20 s", "—")
    assert format_row("ttft_s", [0.0123, 0.25, math.nan]) == ("12.3 ms", "250 ms", "—")
    assert format_row("ttft_s", [0.0004, 0.002]) == ("0.400 ms", "2.0 ms")
    units = {cell.split()[-1] for cell in format_row("e2e_s", [0.004, 0.9999, 12.5])}
    assert units == {"s"}
    assert format_row("output_throughput_tok_s", [12.34, 4321.0]) == ("12.3 tok/s", "4,321 tok/s")


def test_every_statistic_of_a_latency_can_share_one_unit() -> None:
    """A TTFT p99 row in seconds under a p95 row in ms read as a jump of a thousand."""
    p95, p99 = [0.216, 0.9], [0.24, 1.0]
    assert format_row("ttft_s", p95, p95 + p99) == ("0.216 s", "0.900 s")
    assert format_row("ttft_s", p99, p95 + p99) == ("0.240 s", "1.00 s")


def test_cost_rows_compare_the_price_each_run_stored_and_say_not_priced(db_url: str) -> None:
    """Issue 33: lower cost is better; a run without a price reads "not priced", never $0."""
    from services import runs
    from services.core import cost
    from services.runs.comparison import format_row
    from tests.services.runs.test_runs import engine_summary, make_run

    def priced(price: float | None, out_rate: float) -> dict:
        block = {
            **engine_summary(0.1, 0.02, 1.0, out_rate),
            "total_token_throughput_tok_s": out_rate * 2,
        }
        return {**block, cost.SUMMARY_KEY: cost.cost_of_block(price, block).to_json()}

    a = make_run(name="A", engines={"vllm": priced(3.6, 1000.0)})
    b = make_run(name="B", engines={"sglang": priced(3.6, 2000.0)})
    c = make_run(name="C", engines={"tgi": priced(None, 2000.0)})
    rows = {row.label: row for row in runs.compare_runs([a, b, c]).rows}
    output = rows["Cost per 1M output tokens"]
    assert output.values == (pytest.approx(1.0), pytest.approx(0.5), None)
    assert output.marks[1] == "better" and not output.higher_is_better
    assert format_row(output.metric, output.values) == ("$1.00", "$0.5000", "not priced")
    assert "Cost per 1M output tokens at goodput" not in rows  # no SLOs: no empty row
    unpriced = {row.label: row for row in runs.compare_runs([c]).rows}
    assert format_row("usd_per_1m_output", unpriced["Cost per 1M output tokens"].values) == (
        "not priced",
    )


def test_energy_rows_compare_what_was_measured_and_leave_reasons_out(db_url: str) -> None:
    """Issue 33: energy per output token (lower is better) and tokens per joule on Compare; a step
    whose energy was not measured has no figure, never 0 J."""
    from services import runs
    from tests.services.runs.test_runs import engine_summary, make_run

    def with_energy(j_per_token: float | None) -> dict:
        energy = (
            {
                "measured": True,
                "joules": 640.0,
                "j_per_output_token": j_per_token,
                "output_tokens_per_j": 1 / j_per_token,
            }
            if j_per_token
            else {"measured": False, "reason": "no NVIDIA GPU here"}
        )
        return {**engine_summary(0.1, 0.02, 1.0, 500.0), "energy": energy}

    a = make_run(name="A", engines={"vllm": with_energy(0.5)})
    b = make_run(name="B", engines={"sglang": with_energy(0.25)})
    c = make_run(name="C", engines={"tgi": with_energy(None)})
    rows = {row.label: row for row in runs.compare_runs([a, b, c]).rows}
    per_token = rows["Energy per output token"]
    assert per_token.values == (0.5, 0.25, None)
    assert per_token.marks[1] == "better" and not per_token.higher_is_better
    assert format_row(per_token.metric, per_token.values) == ("0.5 J", "0.25 J", "—")
    assert rows["Output tokens per joule"].values == (2.0, 4.0, None)
    assert rows["Output tokens per joule"].higher_is_better
    unmeasured = {row.label for row in runs.compare_runs([c]).rows}
    assert "Energy per output token" not in unmeasured
