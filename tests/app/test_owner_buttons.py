"""Cancel, Stop, "Next step" and Pause are offered only to whoever started the run and to
operators (issue 44, item 4: every viewer saw them on anyone's run). Each page is drawn for
the owner and for another viewer of the same live run."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from streamlit.testing.v1 import AppTest

from db.models import Run
from db.session import session_scope
from services import playground
from services.bench import jobs as bench_jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec, EngineTarget
from services.engines import endpoints
from services.parity import runner as parity_runner
from services.parity.tasks import task_set
from services.team.access import Viewer
from services.tune import jobs as tune_jobs
from services.tune.spec import TuneSpec
from tests.conftest import REPO_ROOT
from tests.support.scripted_server import ScriptedServer

ALICE = Viewer("viewer", "ip:10.0.0.1")
BOB = Viewer("viewer", "ip:10.0.0.2")
OPERATOR = Viewer("operator", "local")


@pytest.fixture(autouse=True)
def _no_timers(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOOTOUT_NO_AUTOREFRESH", "1")


def _page(name: str, viewer: Viewer, **query: str) -> AppTest:
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / f"{name}.py"), default_timeout=60)
    at.session_state["viewer"] = viewer
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def _keys(at: AppTest) -> set[str]:
    return {str(widget.key) for kind in ("button", "toggle") for widget in getattr(at, kind)}


def _offered(page: str, wanted: set[str], **query: str) -> None:
    """The owner and an operator get every control in `wanted`; another viewer none of them."""
    for viewer in (ALICE, OPERATOR):
        assert wanted <= _keys(_page(page, viewer, **query)), viewer
    assert not wanted & _keys(_page(page, BOB, **query))


def test_benchmark_cancel(scripted_server: ScriptedServer) -> None:
    spec = BenchSpec(
        engines=(EngineTarget("e", scripted_server.base_url, "vllm", "m"),), load=LoadSpec(requests=4)
    )
    run_id = bench_jobs.create_run(spec, requested_by=ALICE.identity)  # pending: a live run
    _offered("benchmarks", {f"bench_cancel_{run_id}"}, run=str(run_id))


def test_tuning_cancel() -> None:
    run_id = tune_jobs.create_run(
        TuneSpec(grid={"np": ("1", "2")}), trusted=False, requested_by=ALICE.identity
    )
    _offered("tune", {f"tune_cancel_{run_id}"}, run=str(run_id))


def test_demo_next_step_pause_and_stop() -> None:
    with session_scope() as session:
        run = Run(
            kind="demo",
            name="batching",
            status="running",
            requested_by=ALICE.identity,
            config={"scenario": "batching"},
            summary={"scenario": "batching", "steps": [], "awaiting": None},
            heartbeat_at=datetime.now(UTC),
        )
        session.add(run)
        session.flush()
        run_id = run.id
    _offered("demos", {"demo_stop", f"demo_pause_live_{run_id}"}, run=str(run_id))


@pytest.fixture
def slow_engines(scripted_server: ScriptedServer) -> Iterator[list[str]]:
    names = ["slow-a", "slow-b"]
    for name in names:
        endpoints.add_engine(
            name,
            scripted_server.base_url,
            kind="vllm",
            model=scripted_server.model(ttft=5, itl=50, tokens=400),
        )
    yield names


def test_parity_cancel(slow_engines: list[str]) -> None:
    run_id = parity_runner.start_parity(slow_engines, tasks=task_set(30), max_tokens=200, viewer=ALICE)
    try:
        _offered("parity", {"parity_cancel"}, run=str(run_id))
    finally:
        parity_runner.cancel_parity(run_id, ALICE)


def test_playground_stop(slow_engines: list[str]) -> None:
    request = playground.SendRequest(
        engines=tuple(playground.EngineChoice(n) for n in slow_engines), prompt="long"
    )
    handle = playground.send(request, ALICE)
    try:
        _offered("playground", {"pg_stop"}, exchange=str(handle.run_id))
    finally:
        playground.stop(handle.run_id, ALICE)
        playground.wait(handle.run_id, 10)
