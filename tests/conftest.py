"""Shared fixtures: a fresh database per test, the real local engines, repository paths."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = (REPO_ROOT.parent / "shared").resolve()


@pytest.fixture
def db_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh SQLite database (WAL file in tmp_path) that services use through get_settings()."""
    from db.session import dispose_all

    url = f"sqlite:///{tmp_path / 'shootout.db'}"
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", url)
    yield url
    dispose_all()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared beside the checkout (fixtures and guides). Missing is a failure, not a skip."""
    assert SHARED_DIR.is_dir(), f"{SHARED_DIR} is missing: tests need ../shared beside the repo"
    return SHARED_DIR


from tests.support.fixtures import scripted_server  # noqa: F401  (the scripted OpenAI-compatible server)


@pytest.fixture(scope="session")
def local_engines_running() -> Iterator[list]:
    """The real local engines, started once per test session (installing them when missing): in
    the background from the session's start (tests/support/engines_early.py), awaited here.
    Engines already running are reused and left running; those this session started are
    stopped at the end. A failure to start is a test failure, never a skip."""
    from services import local_engines
    from tests.support.engines_early import EARLY

    EARLY.claimed = True
    EARLY.wait()
    # Starts whatever the background start did not (a no-op for engines already running).
    statuses = local_engines.up(install_missing=True, log=lambda line: None)
    yield statuses
    EARLY.stop_what_the_session_started()


@pytest.fixture
def all_local_engines_up(local_engines_running: list) -> list:
    """Fails (never skips) the test that needs the local engines when one did not start,
    with that engine's reason; engines that did start still serve the tests that need only them."""
    down = [s for s in local_engines_running if s.status != "running"]
    if down:
        pytest.fail(
            "local engines not running: " + "; ".join(f"{s.id}: {s.message}" for s in down),
            pytrace=False,
        )
    return local_engines_running


@pytest.fixture
def local_engines(all_local_engines_up: list, db_url: str) -> list:
    """The chosen local engines (SHOOTOUT_LOCAL_ENGINES, default all), running and registered in
    this test's database. Returns their EngineRecords (names: llamacpp-4slot, vllm-cpu,
    llamacpp-1slot, sglang-cpu)."""
    from services import local_engines as service
    from services.engines import endpoints

    return [endpoints.register_local(spec) for spec in service.specs()]


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh database on the PostgreSQL server that test.sh starts
    (SHOOTOUT_TEST_POSTGRES_URL). Missing server: the test fails, it is not skipped."""
    import os
    import uuid

    import sqlalchemy as sa

    server_url = os.environ.get("SHOOTOUT_TEST_POSTGRES_URL")
    assert server_url, (
        "SHOOTOUT_TEST_POSTGRES_URL is not set: run the tests with ./test.sh (it starts PostgreSQL)"
    )
    name = f"shootout_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(server_url).set(database=name).render_as_string(hide_password=False)
    yield url
    from db.session import dispose_all

    dispose_all()
    with admin.connect() as connection:
        connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db_url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """The same test on SQLite and on PostgreSQL (services read it through get_settings())."""
    url = (
        request.getfixturevalue("db_url")
        if request.param == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", url)
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(tmp_path))
    return url


def _needs_engines(item: pytest.Item) -> bool:
    return "local_engines_running" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests that need the real local engines run after the others, so the engines start
    while those run; browser tests run last: Playwright's sync API leaves an event loop on the
    main thread, and later `asyncio.run` calls in the same session would refuse to start."""
    items.sort(key=lambda item: (item.get_closest_marker("e2e") is not None, _needs_engines(item)))


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly or not any(_needs_engines(i) for i in session.items):
        return
    from tests.support.engines_early import EARLY

    EARLY.begin()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from tests.support.engines_early import EARLY

    # The session ended before any engine test took the engines over (-x, an interrupt).
    if EARLY.log_path is not None and not EARLY.claimed:
        EARLY.stop_what_the_session_started()


@pytest.fixture(scope="session")
def prometheus() -> str:
    """The test Prometheus (scripts/prometheus.sh, started by test.sh) once it holds 25
    scrapes of the sample targets. Missing: the test fails, it is not skipped."""
    from tests.support.prometheus import prometheus_url, wait_for_scrapes

    url = prometheus_url()
    for job in ("dcgm", "resetting"):
        wait_for_scrapes(url, job, at_least=25)
    return url
