"""Join codes: short enough to read off a projector and type on a phone, of characters that
cannot be mistaken for one another (no 0/O, 1/I/L, 2/Z, 5/S, 8/B, 6/G, U/V)."""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

ALPHABET = "ACDEFHJKMNPRTWXY3479"
LENGTH = 5


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))


def normalise(typed: str) -> str:
    """What someone typed, as a code: case and spaces and dashes do not matter."""
    return "".join(ch for ch in typed.upper() if ch.isalnum())


def well_formed(code: str) -> bool:
    return len(code) == LENGTH and all(ch in ALPHABET for ch in code)


def join_link(page_url: str | None, code: str) -> str:
    """`/session?join=<code>` on the scheme and host the presenter's browser uses (what a phone
    scanning the projector must open); a bare path when that address is unknown."""
    here = urlsplit(page_url or "")
    base = f"{here.scheme}://{here.netloc}" if here.scheme in ("http", "https") and here.netloc else ""
    return f"{base}/session?join={code}"
