"""The Runs page's comparison table in AppTest: its row names stay in view when it scrolls."""

from __future__ import annotations

import json

from tests.app.test_runs_page import runs_page, two_runs


def test_the_metric_column_is_pinned(db_url: str) -> None:
    """Issue 36: with several runs the last change columns sat past the right edge; scrolling to
    them scrolled the metric names away."""
    a, b = two_runs()
    at = runs_page(compare=f"{a},{b}")
    assert not at.exception
    table = next(t for t in at.dataframe if "Metric" in t.value.columns)
    config = json.loads(table.proto.columns)
    assert config["Metric"]["pinned"] is True
