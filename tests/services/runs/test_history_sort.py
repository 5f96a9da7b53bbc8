"""services.runs.history: the list ordered by a result across its pages, the result as text."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from services import runs
from services.core.errors import ValidationError
from services.runs import view as runs_view
from tests.services.runs.test_runs import engine_summary, make_run


def day(n: int) -> datetime:
    return datetime(2026, 11, n, tzinfo=UTC)


@pytest.fixture
def five_runs(db_url: str) -> dict[str, int]:
    """Runs whose best engine is not their first, one without figures, one with NaN figures."""
    return {
        "slow": make_run(
            name="slow", engines={"a": engine_summary(0.3, 0.02, 1.0, 120.0)}, created_at=day(1)
        ),
        "fast": make_run(
            name="fast",
            engines={
                "a": engine_summary(0.2, 0.02, 1.0, 300.0),
                "b": engine_summary(0.04, 0.02, 1.0, 1234.5),
            },
            created_at=day(2),
        ),
        "none": make_run(name="none", kind="playground", engines={"a": {}}, created_at=day(3)),
        "nan": make_run(
            name="nan", engines={"a": engine_summary(math.nan, 0.02, 1.0, math.nan)}, created_at=day(4)
        ),
        "mid": make_run(
            name="mid", engines={"a": engine_summary(0.1, 0.02, 1.0, 700.0)}, created_at=day(5)
        ),
    }


def names(sort: runs.RunSort, page: int = 1, page_size: int = 50) -> list[str]:
    return [i.name for i in runs.list_runs(page=page, page_size=page_size, sort=sort).items]


def test_sorted_by_a_result_across_pages_runs_without_it_last(five_runs: dict[str, int]) -> None:
    assert names("newest") == ["mid", "nan", "none", "fast", "slow"]
    assert names("output_tok_s") == ["fast", "mid", "slow", "nan", "none"]
    assert names("ttft_p50") == ["fast", "mid", "slow", "nan", "none"]
    # The order holds over the whole list, not within a page of newest runs.
    assert names("output_tok_s", page=1, page_size=2) == ["fast", "mid"]
    assert names("output_tok_s", page=2, page_size=2) == ["slow", "nan"]
    assert runs.list_runs(page=3, page_size=2, sort="ttft_p50").total == 5
    fast = runs.list_runs(sort="output_tok_s").items[0]
    assert (fast.best_output_tok_s, fast.best_ttft_p50_s) == (1234.5, 0.04)
    with pytest.raises(ValidationError, match="Unknown order"):
        runs.list_runs(sort="fastest")  # type: ignore[arg-type]


def test_the_sorted_result_shows_as_text_never_none(five_runs: dict[str, int]) -> None:
    table = runs_view.history_view(runs.RunFilter(), 1, runs_view.history_sort("output_tok_s")).table
    assert table is not None
    assert table["Best output tok/s"].tolist() == ["1,234 tok/s", "700.0 tok/s", "120.0 tok/s", "–", "–"]
    ttft = runs_view.history_view(runs.RunFilter(), 1, "ttft_p50").table
    assert ttft is not None and ttft["Best TTFT p50"].tolist() == [
        "40.0 ms",
        "100 ms",
        "300 ms",
        "–",
        "–",
    ]
    newest = runs_view.history_view(runs.RunFilter(), 1, runs_view.history_sort(None)).table
    assert newest is not None and "Best output tok/s" not in newest.columns
    assert runs_view.history_sort("Best TTFT p50") == "ttft_p50"
    assert runs_view.history_sort("bogus") == "newest"
