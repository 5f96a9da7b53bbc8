"""services.runs.view (what the Runs page shows) and the one test of "does this run hold
engine results" (RunDetail.has_measurements, runs.comparison_of_run)."""

from __future__ import annotations

from datetime import date

import pytest

from db.models import Exchange
from db.session import session_scope
from services import runs
from services.core.errors import ValidationError
from services.runs import view as runs_view
from tests.services.runs.test_runs import engine_summary, make_run


def test_the_filter_from_the_form_drops_cleared_dates_and_unknown_archive_choices() -> None:
    filters = runs_view.history_filter(
        kinds=["benchmark"], text="", since=(), until=date(2026, 1, 2), archived=None, engine="vllm"
    )
    assert filters == runs.RunFilter(
        kinds=("benchmark",), engine="vllm", until=date(2026, 1, 2), text=None, archived="hide"
    )
    assert runs_view.history_filter(archived="only").archived == "only"


def test_history_view_table_choices_and_the_empty_messages(db_url: str) -> None:
    assert runs_view.history_view(runs.RunFilter(), 1).empty_message == "No runs match these filters."
    assert runs_view.history_view(runs.RunFilter(), 2).empty_message == "No runs on this page."
    run_id = make_run(name="nightly", engines={"vllm": engine_summary(0.1, 0.02, 1.0, 500.0)})
    shown = runs_view.history_view(runs.RunFilter(), 1)
    assert shown.empty_message is None and shown.table is not None
    assert list(shown.table["Run"]) == [f"#{run_id}"]
    assert shown.table["Results"][0].startswith("vllm: TTFT p50 100 ms")
    assert shown.choices == {run_id: f"#{run_id} nightly (vllm)"}
    assert shown.caption == "1 runs match · page 1 of 1"


def test_a_run_without_results_says_so_and_asks_for_no_comparison(db_url: str) -> None:
    run_id = make_run(name="nothing yet", status="running")
    detail = runs.get_run(run_id)
    assert not detail.has_measurements
    assert runs.comparison_of_run(detail) is None
    shown = runs_view.run_page_view(run_id)
    assert not shown.has_results and shown.run.view is None
    assert shown.repeats_note is None and shown.demo_conclusion is None


def test_a_cancelled_run_whose_engines_never_ran_holds_no_results(db_url: str) -> None:
    run_id = make_run(engines={"vllm": {"not_run": True}}, status="cancelled")
    detail = runs.get_run(run_id)
    assert detail.has_measurements  # a summary to look at ...
    assert runs.comparison_of_run(detail) is None  # ... but nothing measured in it
    assert not runs_view.run_page_view(run_id).has_results


def test_playground_exchanges_count_as_results_for_the_page_and_the_cli_alike(db_url: str) -> None:
    run_id = make_run(kind="playground", engines={})
    with session_scope() as session:
        session.add(
            Exchange(
                run_id=run_id,
                conversation_id="c1",
                engine_name="llama",
                turn=1,
                status="done",
                answer="hi",
                metrics={"ttft_s": 0.05, "e2e_s": 0.2},
            )
        )
    detail = runs.get_run(run_id)
    assert detail.has_measurements
    comparison = runs.comparison_of_run(detail)
    assert comparison is not None and [s.engine for s in comparison.series] == ["llama"]
    shown = runs_view.run_page_view(run_id)
    assert shown.has_results and shown.run.exchanges is not None


def test_a_concluded_demo_shows_its_conclusion_as_its_result(db_url: str) -> None:
    from db.models import Run

    run_id = make_run(kind="demo", engines={})
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.summary = {"conclusion": "One slot is enough on this machine."}
    shown = runs_view.run_page_view(run_id)
    assert shown.demo_conclusion == "One slot is enough on this machine."
    assert shown.has_results  # no "holds no results yet" under its conclusion


def test_run_page_view_texts(db_url: str) -> None:
    first = make_run(name="a", engines={"vllm": engine_summary(0.1, 0.02, 1.0, 500.0)})
    second = make_run(name="b", engines={"vllm": engine_summary(0.1, 0.02, 1.0, 500.0)})
    shown = runs_view.run_page_view(first)
    assert shown.title == f"Run #{first}: a"
    assert shown.repeats_note == f"Repeated runs of this setup: #{second}."
    assert shown.has_results and shown.run.view is not None
    assert shown.stored["summary"]["engines"]["vllm"]["output_throughput_tok_s"] == 500.0
    assert runs_view.compare_with(first, f"{second}, {first}") == f"{first},{second}"
    assert runs_view.tag_list(" nightly, ,a100 ") == ["nightly", "a100"]


def test_compare_page_view_from_the_address(db_url: str) -> None:
    a = make_run(engines={"vllm": engine_summary(0.1, 0.02, 1.0, 500.0)}, requests={"vllm": [0.1] * 30})
    b = make_run(engines={"sglang": engine_summary(0.05, 0.02, 1.0, 700.0)})
    shown = runs_view.compare_page_view([f"{a},{b}"], f"{b}:sglang")
    assert shown.title == f"Compare #{a}, #{b}"
    assert shown.view.comparison.baseline_series.key == f"{b}:sglang"
    assert shown.series_labels == {f"{a}:vllm": f"#{a} vllm", f"{b}:sglang": f"#{b} sglang"}
    assert runs_view.cdf_choices(shown.view) == ["cdf:ttft_s", "cdf:tpot_s", "cdf:itl_s", "cdf:e2e_s"]
    assert runs_view.table_height(shown.view) == 35 * (len(shown.view.table) + 1) + 3
    assert "green is better" in (runs_view.baseline_caption(shown.view) or "")
    with pytest.raises(ValidationError):
        runs_view.compare_page_view(["x"], None)


def test_the_delete_question_names_every_run() -> None:
    assert runs_view.delete_question([3]).startswith("Delete #3 and every request")
    assert "with them?" in runs_view.delete_question([3, 4])
