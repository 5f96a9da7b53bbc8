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
