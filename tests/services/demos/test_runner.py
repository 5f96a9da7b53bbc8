"""Demo runs as stored runs: the worker process, pausing between steps, stopping, engines that
do not answer, a worker that died, and replaying a demo without its engines."""

from __future__ import annotations

import socket
import time
from datetime import UTC, datetime, timedelta

import pytest

from db.models import Run
from db.session import session_scope
from services.core.errors import NotFoundError, ValidationError
from services.demos import runner
from services.engines import endpoints
from tests.support.waiting import wait_for

FAST = {"prompt_tokens": 150, "turns": 2, "max_tokens": 4}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_pause_between_steps_then_next(db_url: str, demo_server) -> None:
    demo_server.register("paused-engine", "ttft=60,itl=5", cache=0.5)
    run_id = runner.start_demo("prefix-cache", ["paused-engine"], options=FAST, pause_between_steps=True)
    view = wait_for(lambda: (v := runner.demo_view(run_id)).awaiting == 1 and v)
    assert view.status == "running" and view.live
    assert [s.status for s in view.steps] == ["finished", "pending"]
    assert view.next_step_title == view.steps[1].title
    assert view.steps[0].numbers and view.steps[0].chart is not None and view.steps[0].finding
    time.sleep(0.8)  # still waiting: nothing moves without the presenter
    assert runner.demo_view(run_id).steps[1].status == "pending"
    runner.advance(run_id)
    done = runner.wait_until_done(run_id, timeout_s=60)
    assert done.status == "finished" and done.awaiting is None
    assert done.conclusion and done.verdicts["paused-engine"].verdict == "cache"
    with session_scope() as session:
        assert "control" not in session.get(Run, run_id).config  # repeated demos share a fingerprint


def test_page_demos_run_in_a_worker_process(db_url: str, demo_server) -> None:
    """Issue 13: a demo started for the page times its tokens in a process of its own, not in
    a thread of the Streamlit server."""
    import os

    from services.core.processes import pid_alive

    demo_server.register("worker-engine", "ttft=30,itl=5")
    run_id = runner.start_demo("prefix-cache", ["worker-engine"], options=FAST)
    with session_scope() as session:
        pid = session.get(Run, run_id).worker_pid
    assert pid and pid != os.getpid()
    done = runner.wait_until_done(run_id, timeout_s=60)
    assert done.status == "finished", done.error
    with session_scope() as session:
        assert session.get(Run, run_id).worker_pid == pid
    wait_for(lambda: not pid_alive(pid))


def test_stop_keeps_what_was_measured(db_url: str, demo_server) -> None:
    demo_server.register("stopped-engine", "ttft=60,itl=5")
    run_id = runner.start_demo(
        "prefix-cache", ["stopped-engine"], options=FAST, pause_between_steps=True
    )
    wait_for(lambda: runner.demo_view(run_id).awaiting == 1)
    runner.stop_demo(run_id)
    view = runner.wait_until_done(run_id, timeout_s=30)
    assert view.status == "cancelled" and "Stopped by the presenter" in (view.error or "")
    assert [s.status for s in view.steps] == ["finished", "skipped"]
    assert view.request_count >= 3


def test_engine_that_does_not_answer_is_left_out(db_url: str, demo_server) -> None:
    demo_server.register("alive", "ttft=50,itl=5")
    endpoints.add_engine("dead", f"http://127.0.0.1:{closed_port()}", kind="vllm", model="m")
    run_id = runner.start_demo("prefix-cache", ["alive", "dead"], options=FAST, background=False)
    view = runner.demo_view(run_id)
    assert view.status == "finished_with_errors"
    assert "dead" in view.skipped_engines and "dead was left out" in (view.conclusion or "")
    assert set(view.verdicts) == {"alive"}


def test_no_engine_answers(db_url: str) -> None:
    endpoints.add_engine("gone", f"http://127.0.0.1:{closed_port()}", kind="vllm", model="m")
    run_id = runner.start_demo("prefix-cache", ["gone"], options=FAST, background=False)
    view = runner.demo_view(run_id)
    assert view.status == "failed"
    assert view.error.startswith("No engine answered, nothing was measured (gone:")


def test_bad_input_is_refused_before_anything_is_stored(db_url: str, demo_server) -> None:
    demo_server.register("some-engine")
    with pytest.raises(NotFoundError, match="No demo scenario 'nope'"):
        runner.start_demo("nope", ["some-engine"])
    with pytest.raises(NotFoundError, match="No engine named 'ghost'"):
        runner.start_demo("batching", ["ghost"])
    with pytest.raises(ValidationError, match="Concurrency levels must be whole numbers"):
        runner.start_demo("batching", ["some-engine"], options={"levels": "1,two"})
    with pytest.raises(ValidationError, match="has no setting bogus"):
        runner.start_demo("batching", ["some-engine"], options={"bogus": 1})
    with pytest.raises(ValidationError, match="Pick the engines"):
        runner.start_demo("batching", [])
    assert runner.list_demos() == []


def test_worker_that_died_shows_as_interrupted(db_url: str) -> None:
    with session_scope() as session:
        run = Run(
            kind="demo",
            name="batching",
            status="running",
            config={"scenario": "batching"},
            summary={"steps": [], "awaiting": None},
            heartbeat_at=datetime.now(UTC) - timedelta(minutes=5),
        )
        session.add(run)
        session.flush()
        run_id = run.id
    view = runner.demo_view(run_id)
    assert view.status == "interrupted" and "worker stopped" in (view.error or "")


def test_replay_without_the_engines(db_url: str, demo_server) -> None:
    demo_server.register("replayed", "ttft=200,itl=5", cache=0.5)
    run_id = runner.start_demo("prefix-cache", ["replayed"], options=FAST, background=False)
    before = runner.demo_result(run_id)
    endpoints.remove_engine("replayed")
    after = runner.demo_result(run_id)
    assert after == before and after["verdicts"]["replayed"]["verdict"] == "cache"
    assert [item.run_id for item in runner.list_demos()] == [run_id]
    from services.demos.charts import step_figure

    view = runner.demo_view(run_id)
    assert all(step_figure(step) is not None for step in view.steps)


def test_html_report_carries_the_demo(db_url: str, demo_server) -> None:
    from services.runs.reports.demo import export_demo_html

    demo_server.register("reported", "ttft=200,itl=5", cache=0.5)
    run_id = runner.start_demo("prefix-cache", ["reported"], options=FAST, background=False)
    report = export_demo_html(run_id)
    page = report.data.decode()
    assert report.filename == f"shootout-run-{run_id}.html"
    assert "Demo: Prefix caching" in page and "reported: TTFT fell from" in page
    assert f"Shootout run #{run_id}" in page and page.count("<h1>") == 1
    assert "<script" in page  # the charts


def test_stop_during_a_step(db_url: str, demo_server) -> None:
    demo_server.register("slow-engine", "ttft=50,itl=50")
    run_id = runner.start_demo(
        "batching", ["slow-engine"], options={"levels": "1,2,4,8,16", "max_tokens": 16}
    )
    wait_for(lambda: runner.demo_view(run_id).request_count >= 3)
    runner.stop_demo(run_id)
    view = runner.wait_until_done(run_id, timeout_s=30)
    assert view.status == "cancelled"
    assert view.steps[0].status == "cancelled"
    assert view.steps[0].data["levels"]  # the levels measured before the stop are kept
    assert view.request_count < 1 + 1 + 2 + 4 + 8 + 16


def test_bad_stored_scenario_ends_failed_not_running(db_url: str) -> None:
    with session_scope() as session:
        run = Run(
            kind="demo",
            name="gone",
            status="pending",
            config={"scenario": "gone", "options": {}},
            summary={"steps": []},
            engines=[],
        )
        session.add(run)
        session.flush()
        run_id = run.id
    runner.run_demo(run_id)
    view = runner.demo_view(run_id)
    assert view.status == "failed" and "No demo scenario 'gone'" in (view.error or "")


def test_two_lines_at_the_same_value_put_their_labels_apart() -> None:
    """Issue 19: overlapping value labels in demo charts (both engines at 0.80 s on turn 1)."""
    from services.demos.charts import figure_from_spec
    from services.demos.readout import ChartSpec, Series

    spec = ChartSpec(
        title="TTFT per chat turn",
        x_title="",
        y_title="TTFT (s)",
        kind="line",
        x_category=True,
        series=[
            Series(name=n, x=["turn 1", "turn 2"], y=[0.8, y], text=["0.80 s", f"{y:.2f} s"])
            for n, y in (("cache-on", 0.4), ("cache-off", 0.8))
        ],
    )
    positions = [trace.textposition for trace in figure_from_spec(spec).data]
    assert len(set(positions)) == 2
