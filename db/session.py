"""One SQLAlchemy engine per database URL per process, one session per operation.

SQLite gets WAL (readers never wait for the benchmark writer), foreign keys on and
a busy timeout; the schema is brought to the current version on first use.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from services.core.config import get_settings

_lock = threading.Lock()
_factories: dict[str, sessionmaker[Session]] = {}

SQLITE_BUSY_TIMEOUT_S = 30


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000}")
        cursor.close()


def dumps_json(value: object) -> str:
    """JSON columns through orjson: a benchmark stores every request's inter-token gaps, and
    the standard library spends 0.36 µs per number on them (orjson 0.02). NaN and infinity
    become null (valid JSON, which PostgreSQL requires); what orjson refuses (integers beyond
    64 bits) goes through the standard library."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value)


def loads_json(text: str | bytes) -> object:
    """The reverse; rows written before orjson may hold NaN, which only the standard library reads."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _create_private(path: Path) -> None:
    """The database holds prompts, answers and engine addresses: readable by its owner only.
    SQLite gives its -wal and -shm files the database file's permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


def make_engine(url: str) -> Engine:
    """Create an engine for `url`, creating the SQLite file's folder if needed."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            _create_private(Path(parsed.database))
        engine = create_engine(
            url,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False},
            json_serializer=dumps_json,
            json_deserializer=loads_json,
        )
        _configure_sqlite(engine)
    else:
        engine = create_engine(
            url, pool_pre_ping=True, json_serializer=dumps_json, json_deserializer=loads_json
        )
    return engine


def get_session_factory(url: str | None = None) -> sessionmaker[Session]:
    """The process-wide session factory for `url` (default: from settings), schema ready."""
    url = url or get_settings().database_url
    with _lock:
        factory = _factories.get(url)
        if factory is None:
            # Alembic (0.2 s) loads with the first session, not with every importer of this module.
            from db.schema import ensure_schema

            engine = make_engine(url)
            ensure_schema(engine)
            factory = sessionmaker(engine, expire_on_commit=False)
            _factories[url] = factory
        return factory


@contextmanager
def session_scope(url: str | None = None) -> Iterator[Session]:
    """One transaction: commits on success, rolls back on error, always closes."""
    with get_session_factory(url).begin() as session:
        yield session


def dispose_all() -> None:
    """Close every pooled connection (tests, and before a process forks)."""
    with _lock:
        for factory in _factories.values():
            bind = factory.kw.get("bind")
            if bind is not None:
                bind.dispose()
        _factories.clear()
