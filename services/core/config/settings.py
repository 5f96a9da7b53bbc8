"""`Settings`: every SHOOTOUT_* variable the product reads, as a typed attribute.

docs/configuration.md is the table of them for people; tests/services/core/config/ holds the two in
step. The limits' defaults live here too: services/team/limits.py reads them from these fields.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from services.core.config import fields as f
from services.core.errors import SettingError

PROJECT_ROOT = Path(__file__).resolve().parents[3]

#: The API key variables an engine may name when SHOOTOUT_KEY_ENVS lists none.
DEFAULT_KEY_ENVS = ("*KEY*", "*TOKEN*")
_LIMIT = f.whole(1)
_PORT = f.whole(1, 65535)


def _optional_limit(raw: str) -> int | None:
    return _LIMIT(raw)


def _database_url(settings: Settings) -> str:
    return f"sqlite:///{settings.data_dir / 'shootout.db'}"


def _wheelhouse(settings: Settings) -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "shootout" / "wheels"


class Settings:
    """Read-only; each attribute reads its variable when it is read (see fields.Setting)."""

    # ------------------------------------------------------------ the app and its data
    data_dir = f.Setting(
        "SHOOTOUT_DATA_DIR",
        "the SQLite database, worker logs, uploads, planner presets",
        f.path,
        (PROJECT_ROOT / "data").resolve(),
        cache=False,
    )
    database_url = f.Setting(
        "SHOOTOUT_DATABASE_URL", "any SQLAlchemy URL (PostgreSQL for a team)", f.text, _database_url
    )
    address = f.Setting("SHOOTOUT_ADDRESS", "where `./run.sh` serves the app", f.text, "127.0.0.1")
    port = f.Setting("SHOOTOUT_PORT", "the app's port under `./run.sh`", _PORT, 8501)
    no_autorefresh = f.Setting(
        "SHOOTOUT_NO_AUTOREFRESH",
        "`1` stops timed page refreshes (for the browser tests)",
        f.flag(("1", "true", "yes"), ("0", "false", "no")),
        False,
    )
    key_envs = f.Setting(
        "SHOOTOUT_KEY_ENVS",
        "patterns of the variables an engine may name as its API key",
        f.words(upper=True),
        DEFAULT_KEY_ENVS,
    )

    # ------------------------------------------------------------ local engines
    local_engines = f.Setting(
        "SHOOTOUT_LOCAL_ENGINES",
        "which local backends install and start, comma-separated (`all`: every one, `none`: none)",
        f.backends,
        None,
    )
    engines_dir = f.Setting(
        "SHOOTOUT_ENGINES_DIR",
        "the local engines' environments, model, logs and PIDs",
        f.path,
        (PROJECT_ROOT / ".engines").resolve(),
        cache=False,
    )
    local_port_base = f.Setting(
        "SHOOTOUT_LOCAL_PORT_BASE", "first port of the local engines (the others follow)", _PORT, 8081
    )
    wheelhouse = f.Setting(
        "SHOOTOUT_WHEELHOUSE",
        "proven llama.cpp wheels (an installer override; its tests use a scratch folder)",
        f.path,
        _wheelhouse,
        cache=False,
    )
    llama_cpp_source = f.Setting(
        "SHOOTOUT_LLAMA_CPP_SOURCE",
        "what llama.cpp is built from: a version, source tree or sdist (an installer override, for its tests)",
        f.optional_text,
        None,
    )

    # ------------------------------------------------------------ Prometheus and remote GPUs
    prometheus_url = f.Setting("SHOOTOUT_PROMETHEUS_URL", "the team's Prometheus", f.optional_text, None)
    prometheus_selector = f.Setting(
        "SHOOTOUT_PROMETHEUS_SELECTOR", "label matchers every query carries", f.text, ""
    )
    prometheus_token_env = f.Setting(
        "SHOOTOUT_PROMETHEUS_TOKEN_ENV",
        "the variable holding Prometheus's bearer token",
        f.optional_text,
        None,
    )
    prometheus_engines = f.Setting(
        "SHOOTOUT_PROMETHEUS_ENGINES",
        "`name=selector; ...` for engines whose labels differ (parsed by services/telemetry)",
        f.text,
        "",
    )
    dcgm_urls = f.Setting(
        "SHOOTOUT_DCGM_URLS", "dcgm-exporter URLs offered as remote GPUs", f.words(), ()
    )

    # ------------------------------------------------------------ a team server
    operator_password = f.Setting(
        "SHOOTOUT_OPERATOR_PASSWORD", "the operator's password", f.verbatim, None, keep_blank=True
    )
    viewer_password = f.Setting(
        "SHOOTOUT_VIEWER_PASSWORD",
        "the viewers' password (SHOOTOUT_PASSWORD is its older name)",
        f.verbatim,
        None,
        aliases=("SHOOTOUT_PASSWORD",),
        keep_blank=True,
    )
    operator_group = f.Setting(
        "SHOOTOUT_OPERATOR_GROUP", "OIDC `groups` claim of operators", f.verbatim, None, keep_blank=True
    )
    viewer_group = f.Setting(
        "SHOOTOUT_VIEWER_GROUP", "OIDC `groups` claim of viewers", f.verbatim, None, keep_blank=True
    )
    allowed_hosts = f.Setting(
        "SHOOTOUT_ALLOWED_HOSTS",
        "`Host` names the app answers besides loopback",
        f.words(lower=True),
        (),
    )
    allowed_origins = f.Setting(
        "SHOOTOUT_ALLOWED_ORIGINS", "origins a proxy serves the app at", f.words(), ()
    )
    trusted_proxies = f.Setting(
        "SHOOTOUT_TRUSTED_PROXIES", "proxies whose forwarded headers count", f.networks, ()
    )
    allow_commands = f.Setting(
        "SHOOTOUT_ALLOW_COMMANDS",
        "`1`: operators may run command templates from the app",
        f.flag(("1",), ("0",)),
        False,
    )
    session_secret = f.Setting(
        "SHOOTOUT_SESSION_SECRET",
        "signs the login cookie (unset: a random one per server process)",
        f.verbatim,
        None,
        keep_blank=True,
    )
    session_hours = f.Setting(
        "SHOOTOUT_SESSION_HOURS", "how long a login lasts at most", f.positive("hours"), 12.0
    )
    session_presenters = f.Setting(
        "SHOOTOUT_SESSION_PRESENTERS",
        "viewers (login identities, `*` for every viewer) who may start a demo session",
        f.words(),
        (),
    )
    header_timeout_s = f.Setting(
        "SHOOTOUT_HEADER_TIMEOUT_S",
        "seconds a connection has to send its headers (at least 0.5 is used)",
        f.positive("seconds"),
        10.0,
    )
    body_timeout_s = f.Setting(
        "SHOOTOUT_BODY_TIMEOUT_S",
        "seconds a login or logout form has to arrive, and any request body may pause",
        f.positive("seconds"),
        10.0,
    )
    connections_per_client = f.Setting(
        "SHOOTOUT_CONNECTIONS_PER_CLIENT",
        "open connections of one client address (trusted proxies excepted)",
        _LIMIT,
        500,
    )
    login_sessions_per_client = f.Setting(
        "SHOOTOUT_LOGIN_SESSIONS_PER_CLIENT",
        "live password logins from one client address",
        _LIMIT,
        1000,
    )

    # ------------------------------------------------------------ limits of a shared server
    limit_n = f.Setting("SHOOTOUT_LIMIT_N", "`n` of one playground request", _LIMIT, 8)
    limit_max_tokens = f.Setting(
        "SHOOTOUT_LIMIT_MAX_TOKENS", "`max_tokens`, `min_tokens` as sent", _LIMIT, 32768
    )
    limit_prompt_chars = f.Setting(
        "SHOOTOUT_LIMIT_PROMPT_CHARS", "characters of one prompt and system prompt", _LIMIT, 200_000
    )
    limit_benchmarks = f.Setting(
        "SHOOTOUT_LIMIT_BENCHMARKS", "benchmarks pending or running on the server", _LIMIT, 2
    )
    limit_benchmarks_per_viewer = f.Setting(
        "SHOOTOUT_LIMIT_BENCHMARKS_PER_VIEWER", "benchmarks one viewer has pending or running", _LIMIT, 1
    )
    limit_benchmark_requests = f.Setting(
        "SHOOTOUT_LIMIT_BENCHMARK_REQUESTS",
        "requests of one benchmark step from the page",
        _LIMIT,
        20000,
    )
    limit_benchmark_minutes = f.Setting(
        "SHOOTOUT_LIMIT_BENCHMARK_MINUTES", "minutes of one benchmark step from the page", _LIMIT, 60
    )
    limit_run_requests_per_viewer = f.Setting(
        "SHOOTOUT_LIMIT_RUN_REQUESTS_PER_VIEWER",
        "requests of a viewer's whole benchmark",
        _LIMIT,
        100_000,
    )
    limit_run_minutes_per_viewer = f.Setting(
        "SHOOTOUT_LIMIT_RUN_MINUTES_PER_VIEWER", "minutes of a viewer's whole benchmark", _LIMIT, 180
    )
    limit_demos = f.Setting("SHOOTOUT_LIMIT_DEMOS", "demos running on the server", _LIMIT, 2)
    limit_demos_per_viewer = f.Setting(
        "SHOOTOUT_LIMIT_DEMOS_PER_VIEWER", "demos one viewer has running", _LIMIT, 1
    )
    limit_tunes = f.Setting("SHOOTOUT_LIMIT_TUNES", "tuning runs on the server", _LIMIT, 1)
    limit_tunes_per_viewer = f.Setting(
        "SHOOTOUT_LIMIT_TUNES_PER_VIEWER", "tuning runs one viewer has running", _LIMIT, 1
    )
    limit_parity = f.Setting(
        "SHOOTOUT_LIMIT_PARITY", "parity runs pending or running on the server", _LIMIT, 2
    )
    limit_parity_per_viewer = f.Setting(
        "SHOOTOUT_LIMIT_PARITY_PER_VIEWER", "parity runs one viewer has", _LIMIT, 1
    )
    limit_exchanges = f.Setting(
        "SHOOTOUT_LIMIT_EXCHANGES", "playground exchanges streaming on the server", _LIMIT, 8
    )
    limit_exchanges_per_viewer = f.Setting(
        "SHOOTOUT_LIMIT_EXCHANGES_PER_VIEWER", "playground exchanges one viewer has streaming", _LIMIT, 2
    )
    limit_answer_mb = f.Setting(
        "SHOOTOUT_LIMIT_ANSWER_MB", "MB of one engine's streamed answer in the Playground", _LIMIT, 4
    )
    limit_upload_mb_per_viewer = f.Setting(
        "SHOOTOUT_LIMIT_UPLOAD_MB_PER_VIEWER", "MB one viewer may upload in 10 minutes", _LIMIT, 400
    )
    limit_import_mb = f.Setting(
        "SHOOTOUT_LIMIT_IMPORT_MB", "MB of one imported results file", _LIMIT, 200
    )
    votes_per_address = f.Setting(
        "SHOOTOUT_VOTES_PER_ADDRESS",
        "blind votes one client address may cast on one exchange (unset: no cap)",
        _optional_limit,
        None,
    )

    @property
    def autorefresh(self) -> bool:
        return not self.no_autorefresh

    @classmethod
    def fields(cls) -> list[f.Setting[Any]]:
        """Every setting, in the order above."""
        return [value for value in vars(cls).values() if isinstance(value, f.Setting)]

    def check(self) -> None:
        """Read every setting now; one SettingError naming each bad one (a server checks at start,
        so a typo stops it there rather than failing the requests that read the setting)."""
        problems = []
        for setting in self.fields():
            try:
                getattr(self, setting.attr)
            except SettingError as error:
                problems.append(str(error))
        if problems:
            raise SettingError("\n".join(problems))

    def __repr__(self) -> str:
        return f"Settings(data_dir={self.data_dir!s}, ...)"


_SETTINGS = Settings()


def get_settings() -> Settings:
    """The settings; each attribute is read from the environment when it is read."""
    return _SETTINGS
