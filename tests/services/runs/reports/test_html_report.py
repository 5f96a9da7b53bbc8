"""The HTML reports carry what qualifies their figures: a run's load, warm-up, the generator's
self-check and the engines' notes (issue 36: they were only in the JSON export)."""

from __future__ import annotations

import html

from services import runs
from services.bench.caveats import run_caveats
from services.runs import reports
from tests.services.runs.test_caveats import caveated_run
from tests.services.runs.test_comparison_split import split_run, timed


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


def test_a_runs_report_holds_where_the_time_went(db_url: str) -> None:
    """Issue 32: the engine's own queue, prefill and decode and the rest, as the Runs page shows
    them: in words, as a table and as the chart (plotly inline, so it opens offline)."""
    run_id = split_run("timed", "vllm-cpu", "vllm", timed())
    page = reports.export_run(run_id, "html").data.decode("utf-8")
    section = page.split("<h2>Where the time went</h2>")[1].split("<h2>")[0]
    assert html.escape(f"#{run_id} vllm-cpu: mean E2E 300.0 ms = queue 1.0 + prefill 20.0") in section
    assert "<td>rest of E2E</td>" in section and "<td>277.0</td>" in section
    assert "Where the time went (mean per request" in section  # the chart's title
    assert "<td>Rest of E2E p50</td>" in page  # and the rows of the percentile table


def test_a_comparison_report_says_who_reported_nothing(db_url: str) -> None:
    a = split_run("timed", "vllm-cpu", "vllm", timed())
    b = split_run("silent", "sglang-cpu", "sglang", {"requests": 4, "reported": 0})
    page = reports.export_comparison([a, b]).data.decode("utf-8")
    section = page.split("<h2>Where the time went</h2>")[1].split("<h2>")[0]
    assert f"<li>#{b} sglang-cpu: where the time went: not reported by SGLang</li>" in section
    assert "<td>Queue (engine) p50</td><td>1.0 ms</td><td>not reported by SGLang</td>" in page


def test_a_report_without_a_split_has_no_such_section(db_url: str) -> None:
    run_id = split_run("old", "vllm", "vllm", None)
    assert "Where the time went" not in reports.export_run(run_id, "html").data.decode("utf-8")
