"""Issue 47: without a secrets file, Streamlit looks for one again on every `st.secrets` access
(under one lock); the frame asks on every run and fragment run, so a room of thirty queued
there. "No secrets file" is now believed for NO_SECRETS_S; a secrets file counts at once."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from app_pages import common


class Secrets:
    def __init__(self, found: dict[str, object] | None) -> None:
        self.found = found
        self.looks = 0

    def __contains__(self, key: str) -> bool:
        self.looks += 1
        if self.found is None:
            raise FileNotFoundError("No secrets found.")
        return key in self.found


def test_no_secrets_file_is_looked_for_once_per_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    secrets = Secrets(None)
    monkeypatch.setattr(common, "st", SimpleNamespace(secrets=secrets))
    monkeypatch.setattr(common, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(common, "_no_secrets_at", [float("-inf")])
    for _ in range(100):
        assert common._oidc_configured() is False
    assert secrets.looks == 1
    clock[0] += common.NO_SECRETS_S
    secrets.found = {"auth": {"client_id": "x"}}  # a secrets file appeared: seen after the interval
    assert common._oidc_configured() is True
    assert common._oidc_configured() is True
    assert secrets.looks == 3  # a file once found is Streamlit's to keep, asked every time
