"""Pieces every page shares: the sidebar frame, the password gate, error display."""

from __future__ import annotations

import hmac

import streamlit as st

from services import endpoints
from services.recovery import recover_interrupted_runs
from services.config import get_settings


def _oidc_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all
        return False


def password_gate() -> bool:
    """Team servers: Streamlit's OIDC login when `[auth]` is in .streamlit/secrets.toml,
    else SHOOTOUT_PASSWORD when set; nothing renders until the viewer passes."""
    if _oidc_configured():
        if st.user.is_logged_in:
            return True
        st.title("Shootout")
        st.button("Log in", on_click=st.login, type="primary")
        return False
    password = get_settings().password
    if not password or st.session_state.get("auth_ok"):
        return True
    st.title("Shootout")
    typed = st.text_input("Password", type="password", key="auth_password")
    if typed:
        if hmac.compare_digest(typed.encode(), password.encode()):
            st.session_state["auth_ok"] = True
            st.rerun()
        st.error("Wrong password.")
    return False


@st.cache_resource(show_spinner=False)
def _recovered(database_url: str) -> list[int]:
    return recover_interrupted_runs()


def recover_once() -> None:
    """Once per server process and database: runs whose worker died with the previous
    process are marked interrupted (never left "running" forever)."""
    try:
        _recovered(get_settings().database_url)
    except Exception as error:  # a broken database is shown by the sidebar; never block the app
        st.warning(f"Could not check for interrupted runs: {error}")


def sidebar() -> None:
    with st.sidebar:
        st.caption("Shootout: compare, load-test and watch LLM serving engines.")
        try:
            count = len(endpoints.list_engines())
        except Exception as error:  # the database itself is unreachable: say so, keep rendering
            st.error(f"Run database unavailable: {error}")
            return
        st.caption(f"{count} engine(s) registered · database: {get_settings().database_url.split('://')[0]}")


def refresh_interval(seconds: float) -> float | None:
    """The `run_every` for live fragments, or None where timed refresh is off (browser tests)."""
    return seconds if get_settings().autorefresh else None
