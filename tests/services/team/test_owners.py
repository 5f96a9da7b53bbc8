"""Only whoever started a run, or an operator, may cancel, stop or steer it; "Send again" is a
Send: admitted within the viewer's limit and owned by them (issue 44, items 4 and 8)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from db.models import Run
from db.session import session_scope
from services import playground
from services.bench import jobs as bench_jobs
from services.core.errors import ValidationError
from services.demos import control as demo_control
from services.engines import endpoints
from services.parity import runner as parity_runner
from services.team.access import Viewer
from services.team.owners import NotOwner, may_control, may_control_run
from services.tune import jobs as tune_jobs
from tests.support.scripted_server import ScriptedServer
from tests.support.waiting import wait_for

ALICE = Viewer("viewer", "ip:10.0.0.1")
BOB = Viewer("viewer", "ip:10.0.0.2")
OPERATOR = Viewer("operator", "ip:10.0.0.2")  # at Bob's address: a role, not an address, decides


def _running(kind: str, requested_by: str | None, **fields: object) -> int:
    now = datetime.now(UTC)
    with session_scope() as session:
        run = Run(
            kind=kind,
            name=kind,
            status="running",
            requested_by=requested_by,
            heartbeat_at=now,
            started_at=now,
            **fields,
        )
        session.add(run)
        session.flush()
        return run.id


def _status(run_id: int) -> str:
    with session_scope() as session:
        return session.get(Run, run_id).status


def _control(run_id: int) -> dict:
    with session_scope() as session:
        return dict((session.get(Run, run_id).config or {}).get("control") or {})


def test_the_rule() -> None:
    assert may_control(ALICE.identity, ALICE) and not may_control(ALICE.identity, BOB)
    assert may_control(ALICE.identity, OPERATOR) and may_control(ALICE.identity, None)  # None: the CLI
    assert not may_control(None, BOB)  # imported or started on the server: the operator's
    assert not may_control("operator:" + BOB.identity, BOB)  # the operator's, at Bob's address


@pytest.mark.parametrize(
    ("kind", "cancel"),
    [
        ("benchmark", bench_jobs.cancel_run),
        ("tune", tune_jobs.cancel_run),
        ("parity", parity_runner.cancel_parity),
        ("playground", playground.stop),
    ],
)
def test_another_viewer_cannot_cancel_a_run_its_owner_and_an_operator_can(
    db_url: str, kind: str, cancel: Callable[[int, Viewer | None], object]
) -> None:
    mine, theirs = _running(kind, ALICE.identity), _running(kind, ALICE.identity)
    with pytest.raises(NotOwner, match=f"Run #{mine} was started by another viewer; only whoever"):
        cancel(mine, BOB)
    assert _status(mine) == "running" and not may_control_run(mine, BOB)
    cancel(mine, ALICE)
    cancel(theirs, OPERATOR)
    assert _status(mine) == _status(theirs) == "cancelled"
    cli_run = _running(kind, None)
    with pytest.raises(NotOwner, match="was imported or started on the server"):
        cancel(cli_run, ALICE)


def test_another_viewer_cannot_steer_a_demo(db_url: str) -> None:
    run_id = _running(
        "demo",
        ALICE.identity,
        config={"scenario": "batching"},
        summary={"steps": [], "awaiting": 1},
    )
    for refused in (
        lambda: demo_control.advance(run_id, BOB),
        lambda: demo_control.set_pause(run_id, True, BOB),
        lambda: demo_control.stop_demo(run_id, BOB),
    ):
        with pytest.raises(NotOwner):
            refused()
    assert _control(run_id) == {}
    demo_control.set_pause(run_id, True, ALICE)
    demo_control.stop_demo(run_id, OPERATOR)
    assert _control(run_id) == {"pause": True, "stop": True}


def test_send_again_is_admitted_and_owned_like_a_send(
    db_url: str, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOOTOUT_LIMIT_EXCHANGES_PER_VIEWER", "1")
    for name in ("a", "b"):
        endpoints.add_engine(
            name, scripted_server.base_url, model=scripted_server.model(ttft=5, itl=20, tokens=400)
        )
    request = playground.SendRequest(
        engines=(playground.EngineChoice("a"), playground.EngineChoice("b")), prompt="long"
    )
    first = playground.send(request, ALICE)
    with pytest.raises(ValidationError, match="You have 1 playground exchanges running already"):
        playground.resend(first.run_id, ALICE)
    playground.stop(first.run_id, ALICE)
    wait_for(lambda: not playground.is_active(first.run_id), timeout_s=10)
    again = playground.resend(first.run_id, ALICE)
    with session_scope() as session:
        assert session.get(Run, again.run_id).requested_by == ALICE.identity
    with pytest.raises(NotOwner):
        playground.stop(again.run_id, BOB)
    playground.stop(again.run_id, ALICE)
    wait_for(lambda: not playground.is_active(again.run_id), timeout_s=10)
