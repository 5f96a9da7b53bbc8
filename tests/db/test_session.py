"""The run database on SQLite (WAL, foreign keys, busy timeout) and on PostgreSQL, and
its upgrade path."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa
from sqlalchemy import select

from db.models import Engine, RequestResult, Run
from db.schema import current_revision, ensure_schema, head_revision
from db.session import get_session_factory, make_engine, session_scope

pytestmark = pytest.mark.postgres


def test_sqlite_pragmas(db_url: str) -> None:
    engine = get_session_factory(db_url).kw["bind"]
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10_000


def test_round_trip_and_cascade(any_db_url: str) -> None:
    with session_scope() as session:
        run = Run(kind="benchmark", name="r", config={"concurrency": 4}, tags=["a"])
        run.requests.append(RequestResult(engine_name="e", index=0, ttft_s=0.1, itl_s=[0.01, 0.02]))
        session.add(run)
        session.add(Engine(name="vllm", base_url="http://x:8000", kind="vllm", api_key_env="VLLM_KEY"))
    with session_scope() as session:
        run = session.scalars(select(Run)).one()
        assert run.config == {"concurrency": 4}
        assert run.requests[0].itl_s == [0.01, 0.02]
        session.delete(run)
    with session_scope() as session:
        assert session.scalar(select(sa.func.count(RequestResult.id))) == 0


def test_json_columns_keep_what_the_standard_library_kept(any_db_url: str) -> None:
    """JSON goes through orjson (fast for the gaps of every request); integer keys, big
    integers and rows an older version wrote with NaN still read back; NaN is stored as null,
    which PostgreSQL accepts."""
    config = {"levels": {1: "a"}, "nan": float("nan"), "nested": [{"x": 1.5}]}
    with session_scope() as session:
        session.add(Run(kind="benchmark", name="j", config=config, summary={"big": 2**70}))
    with session_scope() as session:
        run = session.scalars(select(Run).where(Run.name == "j")).one()
    assert run.config == {"levels": {"1": "a"}, "nan": None, "nested": [{"x": 1.5}]}
    assert run.summary == {"big": 2**70}
    if any_db_url.startswith("sqlite"):
        with session_scope() as session:
            session.execute(sa.text("UPDATE runs SET summary = '{\"p50\": NaN}' WHERE name = 'j'"))
        with session_scope() as session:
            summary = session.scalars(select(Run).where(Run.name == "j")).one().summary
        assert summary["p50"] != summary["p50"]  # NaN


def test_foreign_keys_enforced(any_db_url: str) -> None:
    with pytest.raises(sa.exc.IntegrityError), session_scope() as session:
        session.add(RequestResult(run_id=999_999, engine_name="e", index=0))


def test_duplicate_engine_name_rejected(any_db_url: str) -> None:
    with session_scope() as session:
        session.add(Engine(name="same", base_url="http://a"))
    with pytest.raises(sa.exc.IntegrityError), session_scope() as session:
        session.add(Engine(name="same", base_url="http://b"))


def test_new_database_is_stamped_at_head(any_db_url: str) -> None:
    factory = get_session_factory(any_db_url)
    assert head_revision() is not None
    assert current_revision(factory.kw["bind"]) == head_revision()


def test_old_database_is_upgraded_without_losing_rows(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A database made by the first schema revision gets every later revision applied and
    keeps its rows."""
    from alembic import command

    from db.schema import alembic_config

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    config = alembic_config(engine)
    command.upgrade(config, "0001")  # the initial revision only, as an old install had it
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO runs (kind, name, status, config, summary, engines, engine_names, "
                "progress, notes, tags, archived, created_at) VALUES ('benchmark', 'old run', "
                "'finished', '{}', '{}', '[]', '', 1.0, '', '[]', 0, '2026-01-01')"
            )
        )
    ensure_schema(engine)
    assert current_revision(engine) == head_revision()
    with engine.connect() as connection:
        assert connection.execute(sa.text("SELECT name FROM runs")).scalar() == "old run"
    engine.dispose()


def test_concurrent_writers_do_not_lock(db_url: str) -> None:
    """Several threads writing at once (a benchmark worker, a recorder, a page) on SQLite:
    no 'database is locked', no lost rows."""
    with session_scope() as session:
        run = Run(kind="benchmark")
        session.add(run)
        session.flush()
        run_id = run.id
    errors: list[Exception] = []

    def writer(worker: int) -> None:
        try:
            for i in range(50):
                with session_scope() as session:
                    session.add(RequestResult(run_id=run_id, engine_name=f"w{worker}", index=i))
        except Exception as error:  # noqa: BLE001 - collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with session_scope() as session:
        assert session.scalar(select(sa.func.count(RequestResult.id))) == 200


def test_a_new_sqlite_file_is_readable_by_its_owner_only(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 20: the SQLite file was created world-readable."""
    import stat

    from sqlalchemy import text

    from db.session import make_engine

    path = tmp_path / "private" / "shootout.db"
    engine = make_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        connection.execute(text("create table t (x int)"))
    engine.dispose()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
