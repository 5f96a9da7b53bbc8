"""The Benchmarks page in AppTest: the form, validation messages, a run started from the page
(in its worker process), the live view and the results of a finished run."""

from __future__ import annotations

import time

from streamlit.testing.v1 import AppTest

from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec, EngineTarget, SweepSpec
from services.bench.workloads import WorkloadSpec
from services.engines.endpoints import add_engine
from tests.conftest import REPO_ROOT
from tests.support.markdown import as_read
from tests.support.scripted_server import ScriptedServer


def page(**query: str) -> AppTest:
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / "benchmarks.py"), default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def texts(at: AppTest) -> str:
    return " ".join(
        as_read(e.value)
        for kind in ("markdown", "caption", "info", "error", "warning", "success", "title", "subheader")
        for e in getattr(at, kind)
    )


def test_no_engines_no_runs(db_url: str) -> None:
    at = page()
    assert not at.exception
    assert "No engines registered yet" in texts(at)
    assert "No benchmark has run yet" in texts(at)


def test_bad_form_input_shows_one_clear_error(db_url: str, scripted_server: ScriptedServer) -> None:
    add_engine(
        "scripted", scripted_server.base_url, kind="vllm", model=scripted_server.model(ttft=2, itl=1)
    )
    at = page()
    # The form starts with the default pick (issue 47); emptied, it says what is missing.
    assert at.multiselect(key="bench_engines").value == ["scripted"]
    at.multiselect(key="bench_engines").set_value([]).run()
    at.button(key="bench_start").click().run()
    assert "Choose at least one engine" in texts(at)
    at.multiselect(key="bench_engines").set_value(["scripted"]).run()
    at.selectbox(key="bench_sweep").set_value("concurrency").run()
    at.text_input(key="bench_levels").set_value("1, two").run()
    at.button(key="bench_start").click().run()
    assert not at.exception
    assert "Sweep levels must be numbers" in texts(at)
    assert jobs.list_runs() == []


def test_start_from_the_page_then_read_the_results(db_url: str, scripted_server: ScriptedServer) -> None:
    add_engine(
        "scripted",
        scripted_server.base_url,
        kind="vllm",
        model=scripted_server.model(ttft=5, itl=2, tokens=16),
        usd_per_hour=3.6,
    )
    at = page()
    at.multiselect(key="bench_engines").set_value(["scripted"]).run()
    at.number_input(key="bench_output_len").set_value(16).run()
    at.number_input(key="bench_requests").set_value(20).run()
    at.number_input(key="bench_concurrency").set_value(4).run()
    at.button(key="bench_start").click().run()
    assert not at.exception, at.exception
    run_id = int(
        at.query_params["run"][-1]
        if isinstance(at.query_params["run"], list)
        else at.query_params["run"]
    )
    deadline = time.monotonic() + 60
    while jobs.get_run(run_id).active and time.monotonic() < deadline:
        time.sleep(0.2)
    assert jobs.get_run(run_id).status == "finished"
    at = page(run=str(run_id))
    assert not at.exception
    assert "Status: finished" in texts(at)
    table = at.dataframe[0].value
    assert set(table["metric"]) == {"TTFT", "TPOT", "ITL", "E2E latency"}
    counts = at.dataframe[1].value
    assert counts["completed"].tolist() == [20]
    # Issue 33: the engine's price, stored with the run, and what 1M tokens cost at it.
    cost = at.dataframe[2].value
    assert cost["price ($/h)"].tolist() == ["3.6"] and cost["$/1M output tok"].iloc[0].startswith("$")
    # The step's energy, or why this machine cannot measure it (never 0 joules).
    from services.telemetry.energy.meter import EnergyMeter

    plan = EnergyMeter({"scripted": scripted_server.base_url}).plan("scripted")
    if plan.source is None:
        # Issue 47: no engine measured: no column repeating the reason, one note instead.
        assert "energy (J)" not in counts and "energy measured by" not in counts
        assert f"Energy: not measured here: {plan.reason}." in texts(at)
        assert "scripted: energy: not measured" not in texts(at)
    else:
        (measured_by,) = counts["energy measured by"].tolist()
        assert "energy counter" in measured_by or "power samples" in measured_by
    charts = [e for e in at.get("plotly_chart")]
    assert len(charts) >= 3  # TTFT and ITL CDFs, timeline (and engine metrics)


def test_live_view_of_a_running_benchmark_and_cancel(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    engine = EngineTarget(
        "slow", scripted_server.base_url, "vllm", scripted_server.model(ttft=5, itl=20, tokens=200)
    )
    run_id = jobs.start_benchmark(
        BenchSpec(
            engines=(engine,),
            workload=WorkloadSpec(output_len=200),
            load=LoadSpec(concurrency=2, requests=200),
        )
    )
    deadline = time.monotonic() + 30
    while jobs.get_run(run_id).status != "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    at = page(run=str(run_id))
    assert not at.exception
    assert at.get("progress")
    at.button(key=f"bench_cancel_{run_id}").click().run()
    assert not at.exception
    deadline = time.monotonic() + 30
    while "engines" not in jobs.get_run(run_id).summary and time.monotonic() < deadline:
        time.sleep(0.2)
    at = page(run=str(run_id))
    assert "Status: cancelled" in texts(at)


def test_sweep_results_have_the_latency_throughput_curve(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    engine = EngineTarget(
        "scripted", scripted_server.base_url, "vllm", scripted_server.model(ttft=10, itl=1, tokens=8)
    )
    spec = BenchSpec(
        engines=(engine,),
        workload=WorkloadSpec(output_len=8),
        load=LoadSpec(requests=8),
        sweep=SweepSpec(kind="concurrency", values=(1, 2), stop_on_plateau=False),
    )
    run_id = jobs.create_run(spec)
    jobs.execute_run(run_id)
    at = page(run=str(run_id))
    assert not at.exception
    assert len(at.get("plotly_chart")) >= 4


def test_workers_from_the_form_and_the_self_check_on_the_results(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    add_engine(
        "scripted",
        scripted_server.base_url,
        kind="vllm",
        model=scripted_server.model(ttft=5, itl=2, tokens=8),
    )
    at = page()
    at.multiselect(key="bench_engines").set_value(["scripted"]).run()
    at.text_input(key="bench_workers").set_value("lots").run()
    at.button(key="bench_start").click().run()
    assert "Workers: a number from 1 to 64, or auto (got 'lots')" in texts(at)
    at.text_input(key="bench_workers").set_value("2").run()
    at.number_input(key="bench_output_len").set_value(8).run()
    at.number_input(key="bench_requests").set_value(16).run()
    at.number_input(key="bench_concurrency").set_value(4).run()
    at.button(key="bench_start").click().run()
    assert not at.exception, at.exception
    run_id = int(
        at.query_params["run"][-1]
        if isinstance(at.query_params["run"], list)
        else at.query_params["run"]
    )
    deadline = time.monotonic() + 90
    while jobs.get_run(run_id).active and time.monotonic() < deadline:
        time.sleep(0.2)
    run = jobs.get_run(run_id)
    assert run.status == "finished" and run.spec.workers == 2
    assert run.summary["engines"]["scripted"]["generator"]["workers"] == 2
    at = page(run=str(run_id))
    assert not at.exception
    assert "loop lag p50/p99" in texts(at) and "CPU per worker" in texts(at)
    # A client-bound run says so above the tables, with its evidence.
    summary = dict(run.summary)
    block = summary["engines"]["scripted"]
    block["generator"] = {
        **block["generator"],
        "client_bound": True,
        "evidence": ["event-loop lag p99 9.00 ms > 2 ms"],
    }
    summary["generator"] = {"client_bound": True, "flagged": [], "checked_loads": 1}
    jobs.update_run(run_id, summary=summary)
    at = page(run=str(run_id))
    warning = " ".join(as_read(w.value) for w in at.warning)
    assert "Client-bound: the load generator, not the engine, limited some of these figures" in warning
    assert "event-loop lag p99 9.00 ms > 2 ms" in texts(at)  # the evidence, under the warning


def test_the_self_check_says_what_it_means_and_keeps_its_evidence_one_click_away(db_url: str) -> None:
    """Issue 36: which figures a client-bound verdict affects, by how much at most, and what to
    do, in the warning; the raw figures in an expander. Issue 31: an engine whose run was too
    short to check says so."""
    from services.bench.selfcheck import WorkerCheck, report
    from services.bench.stats import summarize_engine

    targets = tuple(EngineTarget(name, "http://127.0.0.1:9", "vllm", "m") for name in ("a", "b"))
    run_id = jobs.create_run(BenchSpec(engines=targets, workload=WorkloadSpec(output_len=8)))
    lagging = report(
        [WorkerCheck(loop_lag_s=[0.0002] * 95 + [0.01242] * 5, cpu_s=0.02, wall_s=1.0)], open_loop=False
    )
    short = report([WorkerCheck(loop_lag_s=[0.0002] * 12, cpu_s=0.01, wall_s=0.13)], open_loop=False)
    engines = {
        "a": {**summarize_engine([]), "generator": lagging},
        "b": {**summarize_engine([]), "generator": short},
    }
    jobs.update_run(run_id, status="finished", summary={"engines": engines})
    at = page(run=str(run_id))
    assert not at.exception, at.exception
    warning = " ".join(as_read(w.value) for w in at.warning)
    assert warning.startswith("Client-bound: the load generator, not the engine, limited some")
    assert "a: TTFT and ITL percentiles may be up to ~12.4 ms too high" in warning
    assert "throughput and token counts are unaffected. What to do: run it again on a quieter" in warning
    assert "b: The load generator could not check itself (the run lasted 0.13 s" in warning
    assert "loop lag p50/p99" not in warning  # the raw figures are one click away
    (evidence,) = [e for e in at.expander if e.label.startswith("Self-check evidence")]
    shown = " ".join(as_read(m.value) for m in evidence.markdown)
    assert (
        "a: CLIENT-BOUND (event-loop lag p99 12.4 ms > 2 ms)" in shown and "CPU per worker 2%" in shown
    )
    assert "b: could not check (the run lasted 0.13 s; the check needs at least 0.2 s)" in shown
    # Only the unchecked engine: a note, not a warning, and never "kept up".
    jobs.update_run(run_id, summary={"engines": {"b": engines["b"]}})
    at = page(run=str(run_id))
    assert not at.warning and not at.exception
    assert any(as_read(i.value).startswith("Could not check the load generator") for i in at.info)
    assert "kept up" not in texts(at)


def test_the_ray_field_is_an_operators_and_an_unreachable_cluster_is_one_clear_error(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    from services.team import access
    from tests.support.ray_cluster import free_port

    add_engine(
        "scripted",
        scripted_server.base_url,
        kind="vllm",
        model=scripted_server.model(ttft=5, itl=2, tokens=8),
    )
    viewer = AppTest.from_file(str(REPO_ROOT / "app_pages" / "benchmarks.py"), default_timeout=60)
    viewer.session_state["viewer"] = access.Viewer(role="viewer", identity="v@example.com")
    viewer.run()
    assert not viewer.exception
    assert "bench_ray" not in [element.key for element in viewer.text_input]
    assert "Only an operator may" in texts(viewer)
    at = page()
    at.multiselect(key="bench_engines").set_value(["scripted"]).run()
    at.text_input(key="bench_ray").set_value(f"127.0.0.1:{free_port()}").run()
    at.button(key="bench_start").click().run()
    assert not at.exception
    assert "is unreachable" in texts(at) and len(at.error) == 1
    at.text_input(key="bench_ray").set_value("a host with spaces").run()
    at.button(key="bench_start").click().run()
    assert "The Ray address is HOST:PORT" in texts(at)
    assert jobs.list_runs() == []
