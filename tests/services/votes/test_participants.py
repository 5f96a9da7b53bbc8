"""A voter's stored key: a keyed hash (never the login), the same for one login, different for
two, for two kinds of identity and for another server secret."""

from __future__ import annotations

import pytest

from services.votes.participants import participant_key


def test_the_key_is_a_keyed_hash_never_the_login(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOOTOUT_SESSION_SECRET", "one secret")
    alice = participant_key(oidc_identity="alice@example.org")
    assert alice == participant_key(oidc_identity="alice@example.org")
    assert "alice" not in alice and len(alice) == 64
    assert alice != participant_key(oidc_identity="bob@example.org")
    # The login wins over the browser; the same text as another kind of identity is another voter.
    assert participant_key(oidc_identity="x", browser="y") == participant_key(oidc_identity="x")
    assert participant_key(login_session="x") != participant_key(browser="x")
    monkeypatch.setenv("SHOOTOUT_SESSION_SECRET", "another secret")
    assert participant_key(oidc_identity="alice@example.org") != alice
