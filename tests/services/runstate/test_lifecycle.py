"""One staleness rule for every run kind: a worker silent for longer than STALE_AFTER_S is gone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from db.models import Run
from db.session import session_scope
from services.runstate.lifecycle import HEARTBEAT_INTERVAL_S, STALE_AFTER_S, RunKind, RunStatus, is_stale
from services.runstate.run_kinds import mark_interrupted_after_restart as recover_interrupted_runs


def test_is_stale_reads_naive_database_times_as_utc_and_falls_back_to_creation() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    just_fresh = (now - timedelta(seconds=STALE_AFTER_S - 1)).replace(
        tzinfo=None
    )  # SQLite's naive times
    just_stale = now - timedelta(seconds=STALE_AFTER_S + 1)
    assert not is_stale(just_fresh, None, now=now)
    assert is_stale(just_stale, None, now=now)
    assert not is_stale(None, just_fresh, now=now)  # no beat yet: the creation counts
    assert is_stale(None, None, now=now)
    assert STALE_AFTER_S >= 5 * HEARTBEAT_INTERVAL_S  # several missed beats, not one late one


def test_every_kind_is_interrupted_after_the_same_silence(db_url: str) -> None:
    now = datetime.now(UTC)
    fresh, stale = (
        now - timedelta(seconds=STALE_AFTER_S - 10),
        now - timedelta(seconds=STALE_AFTER_S + 10),
    )
    kinds = (RunKind.PLAYGROUND, RunKind.DEMO, RunKind.RECORDING)
    with session_scope() as session:
        runs = {
            (kind, age): Run(kind=kind, status=RunStatus.RUNNING, heartbeat_at=beat)
            for kind in kinds
            for age, beat in (("fresh", fresh), ("stale", stale))
        }
        session.add_all(runs.values())
        session.flush()
        ids = {key: run.id for key, run in runs.items()}
    changed = recover_interrupted_runs()
    assert sorted(changed) == sorted(ids[(kind, "stale")] for kind in kinds)
    with session_scope() as session:
        status = {run_id: value for run_id, value in session.execute(select(Run.id, Run.status))}
    for kind in kinds:
        assert (
            status[ids[(kind, "fresh")]] == "running" and status[ids[(kind, "stale")]] == "interrupted"
        )


def test_one_cancel_rule_for_every_worker_run_kind(db_url: str) -> None:
    import pytest

    from db.models import Run
    from db.session import session_scope
    from services.core.errors import NotFoundError
    from services.runstate.lifecycle import RunKind, RunStatus, request_cancel

    with session_scope() as session:
        running = Run(kind=RunKind.BENCHMARK, status=RunStatus.RUNNING)
        ended = Run(kind=RunKind.BENCHMARK, status=RunStatus.FINISHED)
        session.add_all([running, ended])
        session.flush()
        running_id, ended_id = running.id, ended.id
    assert request_cancel(running_id, RunKind.BENCHMARK, "benchmark run") is True
    assert (
        request_cancel(ended_id, RunKind.BENCHMARK, "benchmark run") is False
    )  # it had ended: nothing to do
    with pytest.raises(NotFoundError, match=f"No tuning run #{running_id}"):
        request_cancel(running_id, RunKind.TUNE, "tuning run")  # a run of another kind is not this one
    with session_scope() as session:
        assert session.get(Run, running_id).status == RunStatus.CANCELLED
        assert session.get(Run, ended_id).status == RunStatus.FINISHED


def _stored(run_id: int) -> Run:
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run


def test_a_run_is_claimed_once_and_its_end_keeps_what_the_caller_leaves_alone(db_url: str) -> None:
    from services.runstate import lifecycle

    with session_scope() as session:
        run = Run(kind=RunKind.BENCHMARK, status=RunStatus.PENDING, error="old", progress=0.4)
        session.add(run)
        session.flush()
        run_id = run.id
    assert lifecycle.claim(run_id, clear_error=True) is True
    assert lifecycle.claim(run_id) is False  # a second worker does not take it over
    claimed = _stored(run_id)
    assert claimed.status == RunStatus.RUNNING and claimed.error is None and claimed.heartbeat_at
    lifecycle.beat(run_id, progress=0.5)
    assert _stored(run_id).progress == 0.5 and not lifecycle.cancel_requested(run_id)
    lifecycle.finish(run_id, RunStatus.CANCELLED, summary={"engines": {}})
    ended = _stored(run_id)
    # Cancelled: the bar stays where the run stopped, the error is left as it was.
    assert (ended.status, ended.progress, ended.error) == (RunStatus.CANCELLED, 0.5, None)
    assert ended.finished_at is not None and ended.summary == {"engines": {}}
    assert lifecycle.cancel_requested(run_id)
    lifecycle.beat(run_id, only_running=True, progress=0.9)  # an ended run's row stays as it ended
    assert _stored(run_id).progress == 0.5
    lifecycle.finish(run_id, RunStatus.FAILED, error="x" * 3000)
    failed = _stored(run_id)
    assert failed.progress == 1.0 and len(failed.error or "") == lifecycle.MAX_ERROR_CHARS
    assert failed.summary == {"engines": {}}  # KEEP: the stored summary stays


def test_a_deleted_run_counts_as_cancelled_for_its_worker(db_url: str) -> None:
    from services.runstate import lifecycle

    assert lifecycle.status_of(987654) is None
    assert lifecycle.cancel_requested(987654)
    assert lifecycle.claim(987654) is False
