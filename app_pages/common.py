"""Pieces every page shares: the sidebar frame, the password gate, error display."""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

import streamlit as st

from services import endpoints
from services.auth import throttle
from services.recovery import recover_interrupted_runs
from services.config import get_settings
from services.safe_text import md_text


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
    # The address asked for (a deep link such as /runs?run=12) is taken up again after login.
    st.session_state.setdefault("auth_return", {"path": urlsplit(st.context.url or "").path.strip("/"),
                                                "query": st.query_params.to_dict()})
    client = st.context.ip_address or "unknown"
    st.title("Shootout")
    typed = st.text_input("Password", type="password", key="auth_password")
    wait = throttle.wait_s(client)
    if wait:
        st.error(f"Too many wrong passwords from this address: try again in {wait:.0f} s.")
        return False
    if typed:
        if hmac.compare_digest(typed.encode(), password.encode()):
            throttle.succeeded(client)
            st.session_state["auth_ok"] = True
            st.rerun()
        lockout = throttle.failed(client)
        st.error("Wrong password." + (f" Locked out for {lockout:.0f} s." if lockout else ""))
    return False


def return_after_login(pages: dict[str, st.Page]) -> None:
    """After a login, go to the address first asked for, with its query (once)."""
    wanted = st.session_state.pop("auth_return", None)
    if not wanted or not st.session_state.get("auth_ok"):
        return
    page = pages.get(wanted["path"])
    if page is not None and wanted["path"]:
        st.switch_page(page, query_params=wanted["query"] or None)
    elif wanted["query"]:
        st.query_params.from_dict(wanted["query"])


@st.cache_resource(show_spinner=False)
def _recovered(database_url: str) -> list[int]:
    return recover_interrupted_runs()


def recover_once() -> None:
    """Once per server process and database: runs whose worker died with the previous
    process are marked interrupted (never left "running" forever)."""
    try:
        _recovered(get_settings().database_url)
    except Exception as error:  # a broken database is shown by the sidebar; never block the app
        st.warning(f"Could not check for interrupted runs: {md_text(str(error))}")


def sidebar() -> None:
    with st.sidebar:
        st.caption("Shootout: compare, load-test and watch LLM serving engines.")
        try:
            count = len(endpoints.list_engines())
        except Exception as error:  # the database itself is unreachable: say so, keep rendering
            st.error(f"Run database unavailable: {md_text(str(error))}")
            return
        st.caption(f"{count} engine(s) registered · database: {get_settings().database_url.split('://')[0]}")


def refresh_interval(seconds: float) -> float | None:
    """The `run_every` for live fragments, or None where timed refresh is off (browser tests)."""
    return seconds if get_settings().autorefresh else None
