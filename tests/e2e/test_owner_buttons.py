"""Issue 44, item 4, on a served team server in the browser: a viewer logged in with the viewer
password sees no Cancel on another viewer's live benchmark, and sees it on their own."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from services.team.access import login_identity
from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app
from tests.support.served import Served, start_served_app, stop

pytestmark = pytest.mark.e2e

OPERATOR, VIEWER = "op-owner-secret", "viewer-owner-secret"


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("owners")
    app = start_served_app(
        data, {"SHOOTOUT_OPERATOR_PASSWORD": OPERATOR, "SHOOTOUT_VIEWER_PASSWORD": VIEWER}
    )
    yield app
    stop(app)


class _ServerDatabase:
    """This test process's services pointed at the served app's database for a moment."""

    def __init__(self, data_dir: Path) -> None:
        self.url = f"sqlite:///{data_dir / 'shootout.db'}"

    def __enter__(self) -> None:
        self.old = os.environ.get("SHOOTOUT_DATABASE_URL")
        os.environ["SHOOTOUT_DATABASE_URL"] = self.url

    def __exit__(self, *_: object) -> None:
        from db.session import dispose_all

        dispose_all()
        if self.old is None:
            os.environ.pop("SHOOTOUT_DATABASE_URL")
        else:
            os.environ["SHOOTOUT_DATABASE_URL"] = self.old


def _live_benchmark(data_dir: Path, requested_by: str) -> int:
    from db.models import Run
    from db.session import session_scope
    from services.bench.arrivals import LoadSpec
    from services.bench.spec import BenchSpec, EngineTarget

    spec = BenchSpec(
        engines=(EngineTarget("e", "http://127.0.0.1:9", "vllm", "m"),), load=LoadSpec(requests=4)
    )
    with _ServerDatabase(data_dir), session_scope() as session:
        run = Run(
            kind="benchmark",
            name=f"started by {requested_by}",
            status="running",
            config=spec.to_dict(),
            requested_by=requested_by,
            # A worker that beats: the run stays live while the page is looked at.
            heartbeat_at=datetime.now(UTC) + timedelta(minutes=10),
        )
        session.add(run)
        session.flush()
        return run.id


def _viewer_identity(data_dir: Path) -> str:
    from db.models import LoginSession
    from db.session import session_scope

    with _ServerDatabase(data_dir), session_scope() as session:
        # A password login's viewer is its session (services/team/access.login_identity).
        login = session.execute(
            select(LoginSession.identity, LoginSession.id_hash)
            .where(LoginSession.role == "viewer")
            .order_by(LoginSession.created_at.desc())
        ).first()
    assert login is not None
    return login_identity(login.identity, login.id_hash)


def test_a_viewer_is_offered_cancel_on_their_own_benchmark_only(team_server: Served, page) -> None:  # type: ignore[no-untyped-def]
    data = team_server.log.parent
    page.set_default_timeout(60_000)
    others = _live_benchmark(data, "ip:10.9.9.9")
    page.goto(f"{team_server.url}/benchmarks?run={others}")
    page.fill("input[name=password]", VIEWER)
    page.click("button[type=submit]")
    wait_for_app(page)
    page.locator("[data-testid='stProgress']").first.wait_for()  # the live view is drawn
    assert page.get_by_role("button", name="Cancel run").count() == 0
    assert_no_exception(page)
    screenshot(page, "owners_viewer_others_benchmark")
    mine = _live_benchmark(data, _viewer_identity(data))
    page.goto(f"{team_server.url}/benchmarks?run={mine}")
    wait_for_app(page)
    page.get_by_role("button", name="Cancel run").wait_for()
    screenshot(page, "owners_viewer_own_benchmark")
