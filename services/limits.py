"""Limits of a shared server, configurable by its operator, with messages that say which.

| variable | default | what it bounds |
|---|---|---|
| SHOOTOUT_LIMIT_N | 8 | `n` of one request, as sent (extra_body included) |
| SHOOTOUT_LIMIT_MAX_TOKENS | 32768 | `max_tokens` / `max_completion_tokens` / `min_tokens` as sent |
| SHOOTOUT_LIMIT_PROMPT_CHARS | 200000 | characters of one prompt (system prompt included) |
| SHOOTOUT_LIMIT_BENCHMARKS | 2 | benchmarks pending or running at once, on the whole server |
| SHOOTOUT_LIMIT_DEMOS | 2 | demos running at once |
| SHOOTOUT_LIMIT_IMPORT_MB | 200 | size of one imported results file (page upload or `cli.py import`), in MB |

Found trying the team server as an attacker: `extra_body {"n": 1000, "max_tokens": 1000000}`
reached the engine though the form caps n at 8, an 8.4 MB prompt was stored and took 34 s to
render, 12 benchmarks started from one session in 24 s, and a 190 MB import peaked at 4.3 GB.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from services.errors import ValidationError


@dataclass(frozen=True)
class Limits:
    n: int = 8
    max_tokens: int = 32768
    prompt_chars: int = 200_000
    benchmarks: int = 2
    demos: int = 2
    import_mb: int = 200


def _int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return max(1, int(text))
    except ValueError:
        return default


def current() -> Limits:
    base = Limits()
    return Limits(n=_int("SHOOTOUT_LIMIT_N", base.n), max_tokens=_int("SHOOTOUT_LIMIT_MAX_TOKENS", base.max_tokens),
                  prompt_chars=_int("SHOOTOUT_LIMIT_PROMPT_CHARS", base.prompt_chars),
                  benchmarks=_int("SHOOTOUT_LIMIT_BENCHMARKS", base.benchmarks),
                  demos=_int("SHOOTOUT_LIMIT_DEMOS", base.demos),
                  import_mb=_int("SHOOTOUT_LIMIT_IMPORT_MB", base.import_mb))


def check_prompt(*texts: str | None) -> None:
    limit = current().prompt_chars
    size = sum(len(t or "") for t in texts)
    if size > limit:
        raise ValidationError(f"The prompt has {size:,} characters; this server takes at most {limit:,} "
                              "(SHOOTOUT_LIMIT_PROMPT_CHARS).")


def check_body(body: dict[str, Any]) -> None:
    """The request as it will be sent, extra_body merged in: n and token counts in bounds."""
    limits = current()
    n = body.get("n", 1)
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= limits.n:
        raise ValidationError(f"n = {n!r} is outside 1 to {limits.n}, this server's limit (SHOOTOUT_LIMIT_N).")
    for field in ("max_tokens", "max_completion_tokens", "min_tokens"):
        value = body.get(field)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limits.max_tokens:
            raise ValidationError(f"{field} = {value!r} is outside 0 to {limits.max_tokens:,}, this server's limit "
                                  "(SHOOTOUT_LIMIT_MAX_TOKENS).")


def check_active(kind: str, active: int) -> None:
    """Refuse one more benchmark or demo while `active` of them run on this server."""
    limit = {"benchmark": current().benchmarks, "demo": current().demos}[kind]
    if active >= limit:
        variable = "SHOOTOUT_LIMIT_BENCHMARKS" if kind == "benchmark" else "SHOOTOUT_LIMIT_DEMOS"
        raise ValidationError(f"{active} {kind}s are running on this server already (the limit is {limit}, "
                              f"{variable}); wait for one to end or cancel one.")


def check_import_size(size_bytes: int, name: str) -> None:
    """Refuse an imported file larger than SHOOTOUT_LIMIT_IMPORT_MB, before reading it."""
    limit = current().import_mb
    if size_bytes > limit * 1_000_000:
        raise ValidationError(f"{name} is {size_bytes / 1_000_000:,.1f} MB; this server imports files of at most "
                              f"{limit:,} MB (SHOOTOUT_LIMIT_IMPORT_MB).")
