"""Long repeated "not measured here: <reason>" cells become one note (issue 47)."""

from __future__ import annotations

import pandas as pd

from services.bench.view.tables import fold_not_measured

REASON = "not measured here: no NVIDIA GPU here (NVML: libnvidia-ml.so.1 not found)"


def test_every_row_not_measured_drops_the_column_for_one_note() -> None:
    table = pd.DataFrame({"engine": ["a", "b", "c"], "energy measured by": [REASON] * 3})
    folded, note = fold_not_measured(table, "energy measured by", "Energy")
    assert list(folded.columns) == ["engine"]
    assert note == f"Energy: {REASON}."


def test_some_rows_measured_keep_the_column_with_short_cells() -> None:
    table = pd.DataFrame({"J/output tok": ["0.128 J", REASON, REASON]})
    folded, note = fold_not_measured(table, "J/output tok", "Energy")
    assert list(folded["J/output tok"]) == ["0.128 J", "not measured", "not measured"]
    assert note is not None and note.count("no NVIDIA GPU") == 1


def test_a_measured_table_is_left_alone() -> None:
    table = pd.DataFrame({"energy measured by": ["power samples, NVML"]})
    assert fold_not_measured(table, "energy measured by", "Energy") == (table, None)
