"""The comparison table's cells: one unit for every statistic of a latency."""

from __future__ import annotations

from services.runs import compare_runs
from services.runs.tables import comparison_table
from tests.services.runs.test_runs import engine_summary, make_run


def test_a_latencys_rows_share_one_unit(db_url: str) -> None:
    """Issue 36: TTFT p99 read "1.04 s" under a p50 of "520 ms"."""
    run_id = make_run(
        engines={"a": engine_summary(0.52, 0.02, 2.0, 400.0), "b": engine_summary(0.4, 0.02, 2.0, 400.0)}
    )
    table = comparison_table(compare_runs([run_id]))
    ttft = table[table["Metric"].str.startswith("TTFT")]
    cells = [
        cell
        for column in ttft.columns
        if not column.startswith(("Metric", "Δ"))
        for cell in ttft[column]
    ]
    assert len(cells) >= 8 and all(cell.endswith(" s") for cell in cells), cells
