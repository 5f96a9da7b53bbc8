"""The comparison as tables: one row per metric (values and changes against the baseline),
and the engines' reported settings side by side."""

from __future__ import annotations

from typing import Any

import pandas as pd

from services.runs.comparison import change_text, format_row
from services.runs.records import Comparison

MARK_COLOURS = {"better": "#1a7f37", "worse": "#cf222e", "same": "#57606a"}


def comparison_table(comparison: Comparison) -> pd.DataFrame:
    """Metric rows; for every series its value, and for all but the baseline the change."""
    base = comparison.baseline
    by_metric: dict[str, list[float | None]] = {}
    for row in comparison.rows:
        by_metric.setdefault(row.metric, []).extend(row.values)
    records = []
    for row in comparison.rows:
        record: dict[str, str] = {"Metric": row.label}
        # One unit for all of a latency's statistics (mean to p99), not only within a row.
        cells = format_row(row.metric, row.values, by_metric[row.metric])
        for index, series in enumerate(comparison.series):
            note = row.notes[index] if row.notes and row.values[index] is None else None
            record[series.label] = note or cells[index]
            if index != base:
                record[f"Δ {series.label}"] = change_text(row.changes[index], row.marks[index])
        records.append(record)
    columns = ["Metric"]
    for index, series in enumerate(comparison.series):
        columns.append(
            series.label + (" (baseline)" if index == base and len(comparison.series) > 1 else "")
        )
        if index != base:
            columns.append(f"Δ {series.label}")
    frame = pd.DataFrame.from_records(records)
    if frame.empty:
        return pd.DataFrame(columns=columns)
    frame.columns = columns
    return frame


def mark_style(value: Any) -> str:
    """The CSS of a change cell: its mark's colour ("" for a cell without a mark)."""
    text = str(value)
    for mark, colour in MARK_COLOURS.items():
        if text.endswith(mark):
            return f"color: {colour}; font-weight: 600"
    return ""


def style_comparison_table(table: pd.DataFrame) -> Any:
    """Better in green, worse in red (a pandas Styler for st.dataframe and the HTML report)."""
    delta_columns = [column for column in table.columns if str(column).startswith("Δ ")]
    return table.style.map(mark_style, subset=delta_columns) if delta_columns else table.style


def settings_table(comparison: Comparison, only_differences: bool = False) -> pd.DataFrame:
    """The engines' reported settings, one row per setting, one column per series."""
    labels = [series.label for series in comparison.series]
    records = []
    for row in comparison.settings:
        if only_differences and not row.differs:
            continue
        records.append(
            {
                "Setting": row.key,
                **dict(zip(labels, (v if v is not None else "—" for v in row.values))),
                "Differs": row.differs,
            }
        )
    return pd.DataFrame.from_records(records, columns=["Setting", *labels, "Differs"])
