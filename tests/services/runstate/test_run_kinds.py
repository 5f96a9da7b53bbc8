"""The registry of run kinds: every kind declared once, found on disk; the one worker entry
point refuses what it cannot run; recovery iterates over the kinds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.runstate import run_kinds
from services.runstate import worker as run_worker
from services.runstate.lifecycle import RunKind, RunStatus


def test_every_kind_is_declared_once_in_its_feature() -> None:
    declared = {spec.kind for spec in run_kinds.specs()}
    assert declared == set(RunKind)
    workers = {spec.kind for spec in run_kinds.specs() if spec.execute is not None}
    assert workers == {
        RunKind.BENCHMARK,
        RunKind.TUNE,
        RunKind.PARITY,
        RunKind.DEMO,
        RunKind.PLAYGROUND,
    }
    # Recovery knows every kind that can be left running: a reason, or its own recovery.
    for spec in run_kinds.specs():
        if spec.execute is not None:
            assert spec.interrupted or spec.recover, spec.kind


def test_a_second_declaration_of_a_kind_is_refused() -> None:
    spec = run_kinds.get(RunKind.IMPORT)
    assert spec is not None
    assert run_kinds.register(spec) is spec  # the same declaration again is harmless
    with pytest.raises(ValueError, match="declared twice"):
        run_kinds.register(run_kinds.RunKindSpec(RunKind.IMPORT, "another"))


def test_an_unknown_kind_reads_as_none() -> None:
    assert run_kinds.get("teleport") is None


@pytest.mark.parametrize("argv", [[], ["teleport", "1"], ["import", "1"], ["benchmark"], ["tune", "x"]])
def test_the_worker_refuses_what_it_cannot_run_with_usage(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_worker.main(argv) == 2
    assert "usage: python -m services.runstate.worker" in capsys.readouterr().err


def test_recovery_calls_each_kinds_hook_and_stores_its_reason(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from db.models import Run
    from db.session import session_scope

    long_ago = datetime.now(UTC) - timedelta(hours=1)
    with session_scope() as session:
        parity = Run(kind=RunKind.PARITY, name="p", status=RunStatus.RUNNING, heartbeat_at=long_ago)
        finished = Run(kind=RunKind.PARITY, name="f", status=RunStatus.FINISHED, heartbeat_at=long_ago)
        fresh = Run(
            kind=RunKind.PARITY, name="n", status=RunStatus.RUNNING, heartbeat_at=datetime.now(UTC)
        )
        session.add_all([parity, finished, fresh])
        session.flush()
        ids = (parity.id, finished.id, fresh.id)
    seen: list[int] = []
    spec = run_kinds.get(RunKind.PARITY)
    assert spec is not None
    monkeypatch.setitem(
        run_kinds._SPECS,
        RunKind.PARITY,
        run_kinds.RunKindSpec(
            RunKind.PARITY,
            spec.noun,
            interrupted=spec.interrupted,
            on_interrupted=lambda run: seen.append(run.id),
        ),
    )
    assert run_kinds.mark_interrupted_after_restart() == [ids[0]]
    assert seen == [ids[0]]
    with session_scope() as session:
        stored = {run.id: (run.status, run.error) for run in session.query(Run).filter(Run.id.in_(ids))}
    assert stored[ids[0]] == (RunStatus.INTERRUPTED, spec.interrupted)
    assert stored[ids[1]][0] == RunStatus.FINISHED and stored[ids[2]][0] == RunStatus.RUNNING
