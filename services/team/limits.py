"""Limits of a shared server, configurable by its operator, with messages that say which.

Each limit is a SHOOTOUT_LIMIT_* setting (services/core/config; defaults and meanings in
docs/configuration.md); `current()` reads them now.

Per-viewer limits bind viewers (services/team/access.py); operators are bound by the server's limits only.
A viewer is its OIDC login, else its password login's session, else (no login configured) its
client address: `access.Viewer.identity`. A room behind one NAT is many viewers; what bounds one
person who logs in many times is the login throttle and the server's own limits.
A benchmark's own bounds (its size, its workers) are checked in services/bench/limits.py.

Found trying the team server as an attacker: `extra_body {"n": 1000, "max_tokens": 1000000}`
reached the engine though the form caps n at 8, an 8.4 MB prompt was stored and took 34 s to
render, 12 benchmarks started from one session in 24 s, and a 190 MB import peaked at 4.3 GB.
Issue 31: the step bounds alone let a viewer start 64 sweep levels of 60 minutes each (64 hours)
with 64 workers on a 2-core server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from services.core.config import get_settings
from services.core.errors import ValidationError
from services.core.json_types import JsonOut
from services.runstate.run_kinds import count_active

if TYPE_CHECKING:
    from services.team.access import Viewer


@dataclass(frozen=True)
class Limits:
    n: int
    max_tokens: int
    prompt_chars: int
    benchmarks: int
    demos: int
    exchanges: int
    benchmarks_per_viewer: int
    demos_per_viewer: int
    exchanges_per_viewer: int
    answer_mb: int
    upload_mb_per_viewer: int
    import_mb: int
    benchmark_requests: int
    benchmark_minutes: int
    tunes: int
    tunes_per_viewer: int
    parity: int
    parity_per_viewer: int
    run_requests_per_viewer: int
    run_minutes_per_viewer: int


def current() -> Limits:
    settings = get_settings()
    return Limits(
        n=settings.limit_n,
        max_tokens=settings.limit_max_tokens,
        prompt_chars=settings.limit_prompt_chars,
        benchmarks=settings.limit_benchmarks,
        demos=settings.limit_demos,
        exchanges=settings.limit_exchanges,
        benchmarks_per_viewer=settings.limit_benchmarks_per_viewer,
        demos_per_viewer=settings.limit_demos_per_viewer,
        exchanges_per_viewer=settings.limit_exchanges_per_viewer,
        answer_mb=settings.limit_answer_mb,
        upload_mb_per_viewer=settings.limit_upload_mb_per_viewer,
        import_mb=settings.limit_import_mb,
        benchmark_requests=settings.limit_benchmark_requests,
        benchmark_minutes=settings.limit_benchmark_minutes,
        tunes=settings.limit_tunes,
        tunes_per_viewer=settings.limit_tunes_per_viewer,
        parity=settings.limit_parity,
        parity_per_viewer=settings.limit_parity_per_viewer,
        run_requests_per_viewer=settings.limit_run_requests_per_viewer,
        run_minutes_per_viewer=settings.limit_run_minutes_per_viewer,
    )


def answer_bytes() -> int:
    return current().answer_mb * 1024 * 1024


def check_prompt(*texts: str | None) -> None:
    limit = current().prompt_chars
    size = sum(len(t or "") for t in texts)
    if size > limit:
        raise ValidationError(
            f"The prompt has {size:,} characters; this server takes at most {limit:,} "
            "(SHOOTOUT_LIMIT_PROMPT_CHARS)."
        )


def check_body(body: JsonOut) -> None:
    """The request as it will be sent, extra_body merged in: n and token counts in bounds."""
    limits = current()
    n = body.get("n", 1)
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= limits.n:
        raise ValidationError(
            f"n = {n!r} is outside 1 to {limits.n}, this server's limit (SHOOTOUT_LIMIT_N)."
        )
    for field in ("max_tokens", "max_completion_tokens", "min_tokens"):
        value = body.get(field)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limits.max_tokens:
            raise ValidationError(
                f"{field} = {value!r} is outside 0 to {limits.max_tokens:,}, this server's limit "
                "(SHOOTOUT_LIMIT_MAX_TOKENS)."
            )


def check_import_size(size_bytes: int, name: str) -> None:
    """Refuse an imported file larger than SHOOTOUT_LIMIT_IMPORT_MB, before reading it."""
    limit = current().import_mb
    if size_bytes > limit * 1_000_000:
        raise ValidationError(
            f"{name} is {size_bytes / 1_000_000:,.1f} MB; this server imports files of at most "
            f"{limit:,} MB (SHOOTOUT_LIMIT_IMPORT_MB)."
        )


ActiveKind = Literal["benchmark", "demo", "playground", "tune", "parity"]
#: Per kind of run: what a message calls it, its server-wide variable (the per-viewer one adds
#: _PER_VIEWER), and the Limits fields of the server's and one viewer's share.
_ACTIVE: dict[str, tuple[str, str, str, str]] = {
    "benchmark": ("benchmarks", "SHOOTOUT_LIMIT_BENCHMARKS", "benchmarks", "benchmarks_per_viewer"),
    "demo": ("demos", "SHOOTOUT_LIMIT_DEMOS", "demos", "demos_per_viewer"),
    "playground": (
        "playground exchanges",
        "SHOOTOUT_LIMIT_EXCHANGES",
        "exchanges",
        "exchanges_per_viewer",
    ),
    "tune": ("tuning runs", "SHOOTOUT_LIMIT_TUNES", "tunes", "tunes_per_viewer"),
    "parity": ("parity runs", "SHOOTOUT_LIMIT_PARITY", "parity", "parity_per_viewer"),
}


def check_active(kind: ActiveKind, active: int, active_for_viewer: int | None = None) -> None:
    """Refuse one more benchmark, demo or exchange while `active` of them run on this server, or
    `active_for_viewer` of this viewer's own (None: an operator, bound by the server's limit only)."""
    limits = current()
    noun, variable, server_field, viewer_field = _ACTIVE[kind]
    server_limit = getattr(limits, server_field)
    if active >= server_limit:
        raise ValidationError(
            f"{active} {noun} are running on this server already (the limit is {server_limit}, "
            f"{variable}); wait for one to end or cancel one."
        )
    if active_for_viewer is None:
        return
    viewer_limit = getattr(limits, viewer_field)
    if active_for_viewer >= viewer_limit:
        raise ValidationError(
            f"You have {active_for_viewer} {noun} running already; a viewer may have {viewer_limit} "
            f"at once ({variable}_PER_VIEWER). Wait for one to end or cancel it."
        )


_admission = threading.Lock()

#: Before an operator's identity in Run.requested_by: password logins name both roles by the
#: client's address, and a viewer at the operator's address must not own the operator's runs.
OPERATOR_OWNER = "operator:"


def run_owner(viewer: Viewer | None) -> str | None:
    """What a run started by `viewer` stores as its `requested_by`: a viewer's identity (their
    per-viewer limits count it), an operator's after OPERATOR_OWNER, None from the CLI."""
    if viewer is None:
        return None
    return OPERATOR_OWNER + viewer.identity if viewer.is_operator else viewer.identity


@contextmanager
def admitted(kind: ActiveKind, viewer: Viewer | None) -> Iterator[str | None]:
    """Check the server's and this viewer's limits for one more run of `kind`, and hold the check
    while the caller stores the run (two clicks at once cannot both pass); yields the identity to
    store as the run's `requested_by`. `viewer` None: the CLI on the server, no per-viewer limit."""
    with _admission:
        per_viewer = None
        if viewer is not None and not viewer.is_operator:
            per_viewer = count_active(kind, requested_by=viewer.identity)
        check_active(kind, count_active(kind), per_viewer)
        yield run_owner(viewer)


UPLOAD_WINDOW_S = 600.0


class UploadBudget:
    """Bytes each viewer uploaded in the last UPLOAD_WINDOW_S. Streamlit keeps every uploaded
    file in the server's memory until its session ends: one logged-in client PUT five 150 MB
    files and held 750 MB for minutes; the size of one file is Streamlit's server.maxUploadSize."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._taken: dict[str, list[tuple[float, int]]] = {}

    def take(self, identity: str, size: int) -> str | None:
        """Count `size` bytes against this viewer; a refusal message (nothing counted) past the limit."""
        limit = current().upload_mb_per_viewer * 1024 * 1024
        now = self._clock()
        with self._lock:
            recent = [(t, n) for t, n in self._taken.get(identity, []) if now - t < UPLOAD_WINDOW_S]
            used = sum(n for _, n in recent)
            if used + size > limit:
                self._taken[identity] = recent
                return (
                    f"You uploaded {used / 2**20:.0f} MB in the last {UPLOAD_WINDOW_S / 60:.0f} minutes; a viewer may "
                    f"upload {limit / 2**20:.0f} MB (SHOOTOUT_LIMIT_UPLOAD_MB_PER_VIEWER). Try again later."
                )
            recent.append((now, size))
            self._taken[identity] = recent
            return None


uploads = UploadBudget()
