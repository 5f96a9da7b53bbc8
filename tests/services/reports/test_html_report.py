"""The HTML reports carry what qualifies their figures: a run's load, warm-up, the generator's
self-check and the engines' notes (issue 36: they were only in the JSON export)."""

from __future__ import annotations

import html

from services import reports, runs
from services.runs.caveats import run_caveats
from tests.services.runs.test_caveats import caveated_run


def test_a_runs_report_holds_its_caveats(db_url: str) -> None:
    run_id = caveated_run()
    page = reports.export_run(run_id, "html").data.decode("utf-8")
    caveats = run_caveats(runs.get_run(run_id).config, runs.get_run(run_id).summary)
    assert "<h2>What qualifies these figures</h2>" in page
    for line in caveats.lines:
        assert f"<li>{html.escape(line)}</li>" in page
    for words in ("Load: concurrency 4, 20 requests", "Warm-up: 2 request", "CLIENT-BOUND"):
        assert words in page
    assert "llamacpp ignores min_tokens" in page


def test_a_comparison_report_holds_each_runs_caveats(db_url: str) -> None:
    first, second = caveated_run("first"), caveated_run("second")
    page = reports.export_comparison([first, second]).data.decode("utf-8")
    for run_id in (first, second):
        assert f"<h2>What qualifies #{run_id}</h2>" in page
    assert page.count("llamacpp ignores min_tokens") == 2
