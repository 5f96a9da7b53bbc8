"""One bounded read of an engine's Prometheus metrics page, with its API key when it names one:
the settings read when a run starts (services/engines/reported.py) and a benchmark step's edge
counts (services/bench/window_counts.py) ask for the page alike and fail alike."""

from __future__ import annotations

from services.core import http
from services.core.errors import EngineError
from services.engines.probe import auth_headers

#: A metrics page past this is refused, not read into memory (services/core/http.py).
MAX_BYTES = 8 * 1024 * 1024


class MetricsReadError(EngineError):
    """The page could not be read; `reason` says why in a few words ("HTTP 503", or the bounded
    read's own: unreachable, past its deadline, over the limit)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_metrics_text(metrics_url: str, api_key_env: str | None, deadline_s: float) -> str:
    """The page's text, read within `deadline_s` and `MAX_BYTES`; MetricsReadError otherwise."""
    try:
        reply = http.fetch(
            "GET",
            metrics_url,
            headers={"Accept": "text/plain", **auth_headers(api_key_env)},
            deadline_s=deadline_s,
            max_bytes=MAX_BYTES,
        )
    except http.HttpError as error:
        raise MetricsReadError(error.detail) from error
    if reply.status != 200:
        raise MetricsReadError(f"HTTP {reply.status}")
    return reply.text
