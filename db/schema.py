"""Schema version and upgrade path (Alembic, migrations in db/migrations/).

A new database is created from the models and stamped with the newest revision; an
existing one is upgraded to it. SQLite migrations run in batch mode (SQLite's
ALTER TABLE is limited), so a stored history survives every schema change.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect

from db.models import Base

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    return config


def head_revision() -> str | None:
    return ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def ensure_schema(engine: Engine) -> None:
    """Create or upgrade the schema so it matches the code."""
    config = alembic_config(engine)
    tables = set(inspect(engine).get_table_names())
    if not tables - {"alembic_version"}:
        Base.metadata.create_all(engine)
        if head_revision():
            command.stamp(config, "head")
        return
    if current_revision(engine) != head_revision():
        command.upgrade(config, "head")
