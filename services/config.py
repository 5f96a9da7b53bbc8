"""Settings read from the environment, in one place.

| variable | default | meaning |
|---|---|---|
| SHOOTOUT_DATA_DIR | ./data | SQLite file, local-engine logs, exports |
| SHOOTOUT_DATABASE_URL | sqlite:///<data dir>/shootout.db | any SQLAlchemy URL (PostgreSQL for a team) |
| SHOOTOUT_ENGINES_DIR | ./.engines | virtual environments and the model of the local engines |
| SHOOTOUT_LOCAL_ENGINES | all | which local engines install and start: comma-separated backends (llamacpp, vllm, sglang, triton, router) |
| SHOOTOUT_NO_AUTOREFRESH | unset | "1" stops timed page refreshes (browser tests) |
| SHOOTOUT_PASSWORD | unset | the viewers' password (older name of SHOOTOUT_VIEWER_PASSWORD; roles and logins: services/access.py) |
| SHOOTOUT_KEY_ENVS | *KEY*,*TOKEN* | environment variables an engine may name as its API key (comma-separated patterns) |
"""

from __future__ import annotations

import fnmatch
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
    #: Local backends to install and start; None: all that this machine offers.
    local_engines: tuple[str, ...] | None = None


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
        local_engines=_names(os.environ.get("SHOOTOUT_LOCAL_ENGINES")),
    )


def _names(value: str | None) -> tuple[str, ...] | None:
    if value is None or not value.strip() or value.strip().lower() == "all":
        return None
    return tuple(n.strip().lower() for n in value.split(",") if n.strip())


#: Never an engine's key, whatever the allowlist: the app's own settings and the host's
#: well-known secrets. A viewer who could name SHOOTOUT_PASSWORD as "the key" of an engine at
#: their own URL received the password as a Bearer token.
NEVER_KEY_ENVS = (
    "SHOOTOUT_*",
    "*PASSWORD*",
    "*DATABASE_URL*",
    "*SECRET_ACCESS*",
    "*PRIVATE_KEY*",
    "*SESSION*",
)
#: Exceptions to the first rule: variables meant to hold engine keys in the app's namespace.
SHOOTOUT_KEY_NAMESPACE = ("SHOOTOUT_KEY_*", "SHOOTOUT_*_KEY")
DEFAULT_KEY_ENVS = ("*KEY*", "*TOKEN*")


def key_env_allowed(name: str) -> bool:
    """May an engine read its API key from the environment variable `name`? Only names on the
    operator's list (SHOOTOUT_KEY_ENVS, patterns; default *KEY* and *TOKEN*), never the app's
    own settings or the host's usual secrets."""
    upper = name.upper()
    patterns = [
        p.strip().upper() for p in os.environ.get("SHOOTOUT_KEY_ENVS", "").split(",") if p.strip()
    ]
    if not any(fnmatch.fnmatchcase(upper, p) for p in patterns or DEFAULT_KEY_ENVS):
        return False
    in_namespace = any(fnmatch.fnmatchcase(upper, p) for p in SHOOTOUT_KEY_NAMESPACE)
    denied = [p for p in NEVER_KEY_ENVS if not (p == "SHOOTOUT_*" and in_namespace)]
    return not any(fnmatch.fnmatchcase(upper, p) for p in denied)


def key_env_refusal(name: str) -> str:
    allowed = os.environ.get("SHOOTOUT_KEY_ENVS") or ",".join(DEFAULT_KEY_ENVS)
    return (
        f"The API key variable {name} is not one an engine may use here (allowed: {allowed}; never the app's "
        "own settings or passwords). The operator sets the list with SHOOTOUT_KEY_ENVS."
    )
