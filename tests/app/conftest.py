"""What every AppTest here shares."""

from __future__ import annotations

import pytest

from app_pages import common


@pytest.fixture(autouse=True)
def _secrets_looked_up_afresh() -> None:
    """Each AppTest brings its own secrets: the server's 2 s belief in "no secrets file"
    (common.NO_SECRETS_S, for a room of followers) must not carry over from the test before."""
    common._no_secrets_at[0] = float("-inf")
