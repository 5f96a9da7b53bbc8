"""The Runs page in AppTest: history, filters, comparison and run views, addresses, edits."""

from __future__ import annotations

from datetime import UTC

from streamlit.testing.v1 import AppTest

from services import runs
from tests.conftest import REPO_ROOT
from tests.services.runs.test_runs import engine_summary, make_run
from tests.support.forms import enter_submits
from tests.support.markdown import as_read
from tests.support.prometheus import SAMPLES_ORIGIN


def runs_page(**query: str | list[str]) -> AppTest:
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / "runs.py"), default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def texts(at: AppTest) -> str:
    return " ".join(
        as_read(e.value)
        for kind in ("markdown", "caption", "info", "error", "title", "subheader")
        for e in getattr(at, kind)
    )


def param(at: AppTest, key: str) -> str:
    value = at.query_params[key]
    return value if isinstance(value, str) else value[-1]


def two_runs() -> tuple[int, int]:
    a = make_run(
        name="before",
        engines={"vllm": engine_summary(0.100, 0.02, 1.0, 500.0)},
        requests={"vllm": [0.09, 0.10, 0.11]},
        tags=["nightly"],
    )
    b = make_run(
        name="after",
        engines={"sglang": engine_summary(0.050, 0.02, 1.0, 700.0)},
        requests={"sglang": [0.04, 0.05, 0.06]},
        config={"concurrency": 8},
    )
    return a, b


def test_empty_history(db_url: str) -> None:
    at = runs_page()
    assert not at.exception
    assert "No runs match" in texts(at)


def test_history_lists_and_filters_from_the_address(db_url: str) -> None:
    a, b = two_runs()
    at = runs_page()
    assert not at.exception
    assert at.dataframe[0].value["Run"].tolist() == [f"#{b}", f"#{a}"]
    assert "2 runs match" in texts(at)
    filtered = runs_page(tag="nightly")
    assert filtered.dataframe[0].value["Run"].tolist() == [f"#{a}"]
    assert runs_page(engine="sglang").dataframe[0].value["Run"].tolist() == [f"#{b}"]


def test_history_sorts_by_a_result_shown_as_text(db_url: str) -> None:
    a, b = two_runs()
    # The newest run has no figures: it comes last, and reads "–", not "None".
    empty = make_run(name="no figures", kind="playground", engines={"llamacpp": {}})
    at = runs_page()
    assert at.dataframe[0].value["Run"].tolist() == [f"#{empty}", f"#{b}", f"#{a}"]
    at.selectbox(key="sort").set_value("Best TTFT p50").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert table["Run"].tolist() == [f"#{b}", f"#{a}", f"#{empty}"]
    assert table["Best TTFT p50"].tolist() == ["50.0 ms", "100 ms", "–"]
    assert "best TTFT p50 first, runs without it last" in texts(at)
    by_rate = runs_page(sort="Best output tok/s").dataframe[0].value
    assert by_rate["Best output tok/s"].tolist() == ["700.0 tok/s", "500.0 tok/s", "–"]


def test_select_and_compare_writes_the_address(db_url: str) -> None:
    a, b = two_runs()
    at = runs_page()
    at.multiselect(key="runs_selected").set_value([a, b]).run()
    at.button(key="runs_compare").click().run()
    assert not at.exception
    assert param(at, "compare") == f"{a},{b}"
    assert at.title[0].value == f"Compare #{a}, #{b}"
    verdicts = " ".join(m.value for m in at.markdown)
    assert f"#{b} sglang is fastest, 2.0× faster than #{a} vllm" in verdicts
    table = at.dataframe[0].value
    assert table.columns.tolist() == [
        "Metric",
        f"#{a} vllm (baseline)",
        f"#{b} sglang",
        f"Δ #{b} sglang",
    ]
    row = table[table["Metric"] == "TTFT p50"].iloc[0]
    assert row[f"Δ #{b} sglang"] == "-50.0% better"


def test_comparison_address_opens_the_same_view_and_switches_baseline(db_url: str) -> None:
    a, b = two_runs()
    at = runs_page(compare=f"{a},{b}", baseline=f"{b}:sglang")
    assert not at.exception
    assert at.selectbox(key="runs_baseline").value == f"{b}:sglang"
    assert at.dataframe[0].value.columns[1] == f"#{a} vllm"
    at.selectbox(key="runs_baseline").set_value(f"{a}:vllm").run()
    assert param(at, "baseline") == f"{a}:vllm"
    assert not at.exception


def test_bad_comparison_addresses_are_clear(db_url: str) -> None:
    at = runs_page(compare="1,abc")
    assert not at.exception and "not a run number" in texts(at)
    at = runs_page(compare="41,42")
    assert not at.exception and "do not exist" in texts(at)
    at = runs_page(run="nope")
    assert not at.exception and "is not a run number" in texts(at)


def test_run_view_saves_notes_and_tags(db_url: str) -> None:
    a, _ = two_runs()
    at = runs_page(run=str(a))
    assert not at.exception
    assert at.title[0].value == f"Run #{a}: before"
    assert "Someone else started this run" not in texts(at)  # the operator's to change
    at.text_area(key="runs_meta_notes").set_value("driver 560")
    at.multiselect(key="runs_meta_tags").set_value(["nightly", "h200"])
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception
    detail = runs.get_run(a)
    assert detail.notes == "driver 560" and detail.tags == ("nightly", "h200")


def test_delete_asks_first(db_url: str) -> None:
    a, b = two_runs()
    at = runs_page()
    at.multiselect(key="runs_selected").set_value([a]).run()
    at.button(key="runs_delete").click().run()
    assert "cannot be undone" in " ".join(w.value for w in at.warning)
    assert runs.list_runs().total == 2  # nothing deleted on the first click
    at.button(key="runs_delete_yes").click().run()
    assert not at.exception
    assert [i.id for i in runs.list_runs().items] == [b]


def test_archive_hides_from_the_list(db_url: str) -> None:
    a, b = two_runs()
    at = runs_page()
    at.multiselect(key="runs_selected").set_value([a]).run()
    at.button(key="runs_archive").click().run()
    assert not at.exception
    assert at.dataframe[0].value["Run"].tolist() == [f"#{b}"]
    assert runs_page(archived="only").dataframe[0].value["Run"].tolist() == [f"#{a}"]


def test_a_runs_window_from_the_real_prometheus(db_url: str, prometheus: str) -> None:
    from datetime import datetime, timedelta

    from db.models import Run
    from db.session import session_scope
    from services.engines import endpoints

    endpoints.add_engine(
        "resetting", SAMPLES_ORIGIN, kind="vllm", metrics_url=SAMPLES_ORIGIN + "/resetting"
    )
    now = datetime.now(UTC)
    with session_scope() as session:
        run = Run(
            kind="import",
            name="benchmarked elsewhere",
            status="done",
            engine_names="resetting,gone",
            started_at=now - timedelta(seconds=20),
            finished_at=now,
        )
        session.add(run)
        session.flush()
        run_id = run.id
    at = runs_page(run=str(run_id))
    assert not at.exception
    at.text_input(key="runs_prometheus_url").set_value(prometheus).run()
    at.button(key="runs_prometheus_go").click().run()
    assert not at.exception, at.exception
    charts = at.get("plotly_chart")
    assert len(charts) >= 7, len(charts)  # GPU memory and utilisation, engine charts, percentiles
    assert any("gone of this run is not registered" in w.value for w in at.warning)
    at.text_input(key="runs_prometheus_url").set_value("http://127.0.0.1:9").run()
    assert any("connection refused" in e.value for e in at.error)


def test_a_viewer_cannot_change_anothers_run_and_is_told_why(db_url: str) -> None:
    """Issue 31: the services refuse; the page shows their message, never a traceback, and the
    run stays as it was."""
    from services.team import access

    a, b = two_runs()  # imported-like runs: no requested_by, the operator's

    def as_viewer(**query: str) -> AppTest:
        at = AppTest.from_file(str(REPO_ROOT / "app_pages" / "runs.py"), default_timeout=60)
        at.session_state["viewer"] = access.Viewer(role="viewer", identity="ip:10.0.0.9")
        for key, value in query.items():
            at.query_params[key] = value
        return at.run()

    at = as_viewer(run=str(a))
    assert "Someone else started this run" in texts(at)
    at.text_input(key="runs_meta_name").set_value("mine now")
    at.text_area(key="runs_meta_notes").set_value("defaced")
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception
    assert f"Run #{a} was imported or started on the server; a viewer may rename" in texts(at)
    at.button(key="runs_run_archive").click().run()
    assert not at.exception and texts(at).count(f"Run #{a} was imported") == 1
    detail = runs.get_run(a)
    assert (detail.name, detail.notes, detail.archived) == ("before", "", False)

    at = as_viewer()
    at.multiselect(key="runs_selected").set_value([a, b]).run()
    at.button(key="runs_archive").click().run()
    assert not at.exception
    assert "a viewer may rename, annotate, tag or archive only the runs they started" in texts(at)
    assert runs.list_runs().total == 2  # neither archived


def test_enter_in_an_import_field_does_not_import(db_url: str) -> None:
    """Only the "Import" button stores a run: Enter in the engine name or tags field does not."""
    at = runs_page()
    assert not at.exception
    assert enter_submits(at)["runs_import"] is False


def test_compare_shows_not_comparable_and_the_override_stays_in_the_address(db_url: str) -> None:
    """Issue 32: one engine honoured the fixed output length, the other stopped early: no winner
    is named until the user compares anyway, and the address keeps that choice."""
    honoured = engine_summary(0.100, 0.02, 1.0, 500.0)
    honoured.update(output_tokens=12_800, input_tokens=14_000, honoured_output_len=True)
    short = engine_summary(0.050, 0.02, 1.0, 700.0)
    short.update(output_tokens=7_000, input_tokens=14_000, honoured_output_len=False)
    both = make_run(name="one run, two engines", engines={"vllm": honoured, "llamacpp": short})
    at = runs_page(run=str(both))  # one run's engines are judged the same way
    assert not at.exception and "Not comparable" in as_read(at.error[0].value)
    a = make_run(name="vllm", engines={"vllm": honoured})
    b = make_run(name="llama.cpp", engines={"llamacpp": short})
    at = runs_page(compare=f"{a},{b}")
    assert not at.exception
    assert [as_read(e.value) for e in at.error] == ["Not comparable: no winner is named. What differs:"]
    shown = texts(at)
    assert f"Fixed output length honoured: #{a} vllm yes, #{b} llamacpp no" in shown
    assert "Verdicts" not in [s.value for s in at.subheader]
    at.checkbox(key="runs_allow_incomparable").check().run()
    assert param(at, "allow_incomparable") == "1" and not at.exception
    assert as_read(at.warning[0].value).startswith("Not comparable, compared anyway (override)")
    assert "Verdicts" in [s.value for s in at.subheader]
    assert "is fastest" in texts(at)


def test_a_run_and_a_comparison_show_where_the_time_went(db_url: str) -> None:
    """Issue 32: the Benchmarks page's split on the Runs page, "not reported by" included."""
    from tests.services.runs.test_comparison_split import split_run, timed

    a = split_run("timed", "vllm-cpu", "vllm", timed())
    b = split_run("silent", "sglang-cpu", "sglang", {"requests": 4, "reported": 0})
    at = runs_page(run=str(a))
    assert not at.exception
    assert "Where the time went" in [s.value for s in at.subheader]
    assert f"#{a} vllm-cpu: mean E2E 300.0 ms = queue 1.0 + prefill 20.0" in texts(at)
    assert len(at.get("plotly_chart")) >= 1
    at = runs_page(compare=f"{a},{b}")
    assert not at.exception
    assert f"#{b} sglang-cpu: where the time went: not reported by SGLang" in texts(at)
    table = at.dataframe[0].value
    row = table[table["Metric"] == "Queue (engine) p50"].iloc[0]
    assert row[f"#{b} sglang-cpu"] == "not reported by SGLang"


def test_the_history_shows_the_ranking_from_blind_votes(db_url: str) -> None:
    from services.playground import votes
    from services.votes.participants import participant_key
    from tests.services.playground.test_votes import reveal_all, stored_exchange

    assert not any(e.label.startswith("Engine ranking") for e in runs_page().expander)
    for who, winner in enumerate("aab"):
        votes.vote_best(
            stored_exchange(["a", "b"]), winner, participant=participant_key(browser=str(who))
        )
    reveal_all()  # issue 45: a hidden exchange's votes are named by engine only after its reveal
    at = runs_page()
    assert not at.exception
    assert any(e.label == "Engine ranking from blind votes" for e in at.expander)
    # Under the history's table: the ranking, then each pair's votes and win rate (issue 56).
    _, table, pairs = (d.value for d in at.dataframe)
    assert table["Engine"].tolist() == ["a", "b"] and table["Votes"].tolist() == [3, 3]
    assert pairs[["Pair", "Votes", "95% interval"]].values.tolist() == [["a vs b", 3, "21–94%"]]
    assert "bootstrap" in texts(at)


def test_a_benchmark_offers_its_steps_csv_and_a_playground_exchange_does_not(db_url: str) -> None:
    """Issue 33: the steps CSV (each step's cost and energy) is offered where a run has steps."""
    bench = make_run(engines={"vllm": engine_summary(0.100, 0.02, 1.0, 500.0)})
    at = runs_page(run=str(bench))
    assert not at.exception
    links = {b.proto.label: b.proto.url for b in at.get("link_button")}
    assert links["Steps CSV (cost, energy)"] == f"export/runs/{bench}.steps"
    played = make_run(kind="playground", engines={})
    at = runs_page(run=str(played))
    assert not at.exception
    assert [b.proto.url for b in at.get("link_button")] == [
        f"export/runs/{played}.{fmt}" for fmt in ("csv", "json", "html")
    ]
