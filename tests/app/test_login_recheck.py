"""Issue 44, item 5 in the pages: a fragment or a callback acts for the login as it is now. The
viewer was read once per full rerun and cached in the Streamlit session, so an operator-only
button inside a fragment still worked after "log out everywhere"."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from services.team import access


def _page() -> None:
    import streamlit as st

    from app_pages import common

    def note() -> None:
        st.session_state["done"] = f"callback as {common.viewer().role}"

    @st.fragment
    def reveal() -> None:
        st.button("Note", on_click=note)
        if st.button("Reveal"):
            st.write(f"revealed as {common.viewer().role}")

    st.write(f"page as {common.viewer().role}")
    reveal()


@pytest.mark.parametrize("button", ["Reveal", "Note"])
def test_a_fragment_or_callback_after_the_login_ended_does_nothing(
    button: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOOTOUT_OPERATOR_PASSWORD", "op-recheck")
    live = {"viewer": access.Viewer("operator", "ip:10.0.0.1")}
    monkeypatch.setattr(access, "read_session", lambda token: live["viewer"])
    at = AppTest.from_function(_page, default_timeout=30)
    at.session_state["viewer"] = live["viewer"]  # what the frame (app.py) kept of the first run
    at.run()
    assert [m.value for m in at.markdown] == ["page as operator"]
    live["viewer"] = None  # logged out elsewhere, or expired
    next(b for b in at.button if b.label == button).click().run()
    texts = [m.value for m in at.markdown]
    assert not any("as operator" in t for t in texts if t != "page as operator"), texts
    assert "done" not in at.session_state
    assert any("Your login has ended" in e.value for e in at.error)


@pytest.mark.parametrize("button", ["Reveal", "Note"])
def test_an_oidc_login_that_logged_out_in_another_tab_does_nothing_here(
    button: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streamlit's `st.user` stays logged in for an open page after the login logged out in
    another tab; the page asks services/team/oidc_logins on every `common.viewer()`."""
    from services.team import oidc_logins
    from web import oidc_cookie

    monkeypatch.setenv("SHOOTOUT_OPERATOR_GROUP", "gpu-admins")
    logged_out: set[str] = set()
    monkeypatch.setattr(oidc_cookie, "login_key", lambda cookies: "ada-login")
    monkeypatch.setattr(oidc_logins, "ended", lambda key: key in logged_out)
    at = AppTest.from_function(_page, default_timeout=30)
    at.secrets["auth"] = {"redirect_uri": "http://localhost/oauth2callback", "cookie_secret": "s"}
    at.user = {"is_logged_in": True, "email": "ada@example.org", "groups": ["gpu-admins"]}
    at.run()
    assert [m.value for m in at.markdown] == ["page as operator"]
    logged_out.add("ada-login")  # "Log out" pressed in another tab
    next(b for b in at.button if b.label == button).click().run()
    texts = [m.value for m in at.markdown]
    assert not any("as operator" in t for t in texts if t != "page as operator"), texts
    assert "done" not in at.session_state
    assert any("You were logged out" in e.value for e in at.error)
    assert any(b.label == "Log in" for b in at.button)
