"""Settings read from the environment, in one place.

| variable | default | meaning |
|---|---|---|
| SHOOTOUT_DATA_DIR | ./data | SQLite file, local-engine logs, exports |
| SHOOTOUT_DATABASE_URL | sqlite:///<data dir>/shootout.db | any SQLAlchemy URL (PostgreSQL for a team) |
| SHOOTOUT_ENGINES_DIR | ./.engines | virtual environments and the model of the local engines |
| SHOOTOUT_NO_AUTOREFRESH | unset | "1" stops timed page refreshes (browser tests) |
| SHOOTOUT_PASSWORD | unset | a shared password for the whole app (team servers) |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    database_url: str
    engines_dir: Path
    autorefresh: bool
    password: str | None


def get_settings() -> Settings:
    """Read the settings now (tests change the environment between calls)."""
    data_dir = Path(os.environ.get("SHOOTOUT_DATA_DIR") or PROJECT_ROOT / "data").resolve()
    url = os.environ.get("SHOOTOUT_DATABASE_URL") or f"sqlite:///{data_dir / 'shootout.db'}"
    engines_dir = Path(os.environ.get("SHOOTOUT_ENGINES_DIR") or PROJECT_ROOT / ".engines").resolve()
    return Settings(
        data_dir=data_dir,
        database_url=url,
        engines_dir=engines_dir,
        autorefresh=os.environ.get("SHOOTOUT_NO_AUTOREFRESH", "") not in ("1", "true", "yes"),
        password=os.environ.get("SHOOTOUT_PASSWORD") or None,
    )
