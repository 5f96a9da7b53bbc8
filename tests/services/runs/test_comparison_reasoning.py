"""A reasoning model in a comparison (issue 32, section 2): beside TTFT, which is then its first
thinking token, the time to first answer token, its reasoning and answer rates and tokens."""

from __future__ import annotations

from typing import Any

import pytest

from services import runs
from services.runs.tables import comparison_table
from tests.services.runs.test_runs import engine_summary, make_run


def stats(p50: float) -> dict[str, float]:
    return {"mean": p50, "p50": p50, "p90": p50, "p95": p50, "p99": p50}


def thinking(ttfat: float, reasoning_rate: float, answer_rate: float, tokens: int) -> dict[str, Any]:
    block = engine_summary(0.05, 0.01, 2.0, 300.0)
    block.update(
        ttft_includes_reasoning=True,
        ttfat_s=stats(ttfat),
        reasoning_tok_s=stats(reasoning_rate),
        answer_tok_s=stats(answer_rate),
        reasoning_tokens=tokens,
        answer_tokens=1000,
    )
    return block


def test_the_table_has_answer_timing_rates_and_tokens(db_url: str) -> None:
    a = make_run(name="a", engines={"think": thinking(0.8, 150.0, 40.0, 3000)})
    b = make_run(name="b", engines={"think": thinking(0.4, 300.0, 50.0, 1500)})
    comparison = runs.compare_runs([a, b])
    rows = {row.label: row for row in comparison.rows}
    assert rows["Time to first answer token p50"].values == (0.8, 0.4)
    assert rows["Reasoning tokens/s p50"].values == (150.0, 300.0)
    assert rows["Reasoning tokens/s p50"].marks == (None, "better")
    assert rows["Answer tokens/s p50"].changes[1] == pytest.approx(25.0)
    # Counts are shown, not judged: more thinking is neither better nor worse by itself.
    assert rows["Reasoning tokens"].values == (3000.0, 1500.0)
    assert rows["Reasoning tokens"].marks == (None, None)
    table = comparison_table(comparison).set_index("Metric")
    assert table.loc["Reasoning tokens/s p50", f"#{b} think"] == "300.0 tok/s"
    assert table.loc["Reasoning tokens", f"#{a} think (baseline)"] == "3,000"
    assert table.loc["Reasoning tokens", f"Δ #{b} think"] == ""


def test_no_reasoning_rows_for_models_that_answer_at_once(db_url: str) -> None:
    a = make_run(name="a", engines={"plain": engine_summary(0.05, 0.01, 2.0, 300.0)})
    b = make_run(name="b", engines={"plain": engine_summary(0.05, 0.01, 2.0, 310.0)})
    labels = [row.label for row in runs.compare_runs([a, b]).rows]
    assert not [label for label in labels if "answer" in label.lower() or "Reasoning" in label]
