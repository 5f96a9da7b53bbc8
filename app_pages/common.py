"""Pieces every page shares: who is looking (from the login gate), the sidebar frame, starting a run."""

from __future__ import annotations

import html
import secrets
import time
from collections.abc import Callable
from typing import NoReturn

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from services.core import ids
from services.core.config import get_settings
from services.core.errors import ShootoutError
from services.core.safe_text import md_text
from services.engines import endpoints
from services.local_engines import progress
from services.runstate.run_kinds import mark_interrupted_after_restart
from services.team import access, oidc_logins
from services.votes import participants
from web import oidc_cookie

#: Without a secrets file Streamlit looks for one again on every `st.secrets` access (under
#: one lock, with a config read, file checks and an exception): a room of thirty followers'
#: page runs queued there (issue 47). "No secrets file" is believed for this long; a secrets
#: file, once read, Streamlit keeps itself.
NO_SECRETS_S = 2.0
#: When "no secrets file" was last found (monotonic seconds).
_no_secrets_at = [float("-inf")]


def _oidc_configured() -> bool:
    if time.monotonic() - _no_secrets_at[0] < NO_SECRETS_S:
        return False
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file at all
        _no_secrets_at[0] = time.monotonic()
        return False


def _resolve_viewer() -> access.Viewer | None:
    if _oidc_configured():
        if not st.user.is_logged_in:
            return None
        role = access.role_for_groups(st.user.get("groups"))
        if role is None or oidc_logins.ended(oidc_cookie.login_key(st.context.cookies)):
            return None  # not in a group, or this login logged out (in any tab)
        return access.Viewer(
            role=role, identity=str(st.user.get("email") or st.user.get("sub") or "oidc-user")
        )
    if access.login_required():
        return access.read_session(st.context.cookies.get(access.SESSION_COOKIE))
    # AppTest has no connection, and is the operator on this machine.
    return access.anonymous_viewer(client_address() or "127.0.0.1")


def client_address() -> str | None:
    """This browser's network address as the gate resolved it (web/gate.py: the socket's peer,
    or the address a proxy named in SHOOTOUT_TRUSTED_PROXIES forwarded). Streamlit reports
    127.0.0.1 and ::1 as no address: a page with a connection (its handshake's headers) and no
    address is on loopback, a browser on this host or a reverse proxy on it that is not trusted.
    None without a connection (AppTest)."""
    address = st.context.ip_address
    if isinstance(address, str):
        return address
    return "127.0.0.1" if len(st.context.headers) else None


def viewer_gate() -> access.Viewer | None:
    """Who is looking, from what the gate in front of Streamlit (web/gate.py) let through; None
    (and a message) when nobody logged in. Logins happen there, before any websocket opens,
    so this never shows a password form of its own."""
    found = _resolve_viewer()
    if found is None:
        st.title("Shootout")
        if _oidc_configured() and not st.user.is_logged_in:
            st.button("Log in", on_click=st.login, type="primary")
        elif _oidc_configured() and access.role_for_groups(st.user.get("groups")) is None:
            st.error("Your account is in none of the groups that may use this server.")
        elif _oidc_configured() or access.session_id(st.context.cookies.get(access.SESSION_COOKIE)):
            _logged_out()  # a login this page had has ended
        else:
            st.error(
                "This server needs a login, and the login sits in front of Streamlit: serve the app with "
                "`streamlit run serve.py` (run.sh does) and log in at /login."
            )
        return None
    st.session_state["viewer"] = found
    return found


def viewer() -> access.Viewer:
    """The viewer of this session, for pages. With a login, looked up again on every call (a
    cheap lookup: `access.read_session` keeps a checked session for a second), so a fragment or
    a callback acts for the login as it is now, not as it was when the page was drawn (issue
    44); a login that has ended stops the run. Without one, the frame's value (a page run on its
    own, as in tests, resolves it the same way). Nobody known: the least a viewer may do."""
    if access.login_required() or _oidc_configured():
        found = _resolve_viewer()
        if found is None:
            _logged_out()
        st.session_state["viewer"] = found
        return found
    cached = st.session_state.get("viewer")
    if isinstance(cached, access.Viewer):
        return cached
    return _resolve_viewer() or access.Viewer(role="viewer", identity="unknown")


def _logged_out() -> NoReturn:
    """This page's login ended (a logout in this tab or another, log out everywhere, expiry):
    say so, offer the login, and stop."""
    if _oidc_configured():
        st.error("You were logged out. Your login has ended (here or in another tab).")
        st.button("Log in", on_click=st.login, type="primary", key="relogin")
    else:
        st.error(
            "You were logged out. Your login has ended (logged out, or expired): [log in again](/login)."
        )
    st.stop()


def _logout_form(operator: bool) -> str:
    """The sidebar's "Log out": a form posting this session's logout token to the gate's
    /logout in this tab, which then shows the login page (a link opened the form in a new tab
    and left this one signed in). Operators also get a link to the /logout page, where "Log out
    everywhere" says what it does before it is pressed."""
    token = access.form_token(st.context.cookies.get(access.SESSION_COOKIE), "logout")
    everywhere = (
        '<p style="margin:.5rem 0 0;font-size:.875rem"><a href="/logout">Log out everywhere…</a></p>'
        if operator
        else ""
    )
    return (
        '<form method="post" action="/logout" class="shootout-logout">'
        f'<input type="hidden" name="token" value="{html.escape(token)}">'
        '<button type="submit" style="padding:.25rem .75rem;border-radius:.5rem;'
        "border:1px solid rgba(49,51,63,.2);background:transparent;cursor:pointer;color:inherit;"
        'font:inherit;font-size:.875rem">'
        f"Log out</button></form>{everywhere}"
    )


def participant() -> str:
    """Who this person is, for votes and session seats (services/votes/participants.py): the
    OIDC login, else the password login's session, else this browser (the gate's cookie), else
    this tab (an app run without the gate, as in AppTest)."""
    if _oidc_configured():
        return participants.participant_key(oidc_identity=viewer().identity)
    cookies = st.context.cookies
    login = access.session_id(cookies.get(access.SESSION_COOKIE))
    browser = access.browser_id(cookies.get(access.BROWSER_COOKIE)) or st.session_state.setdefault(
        "vote_browser_id", secrets.token_urlsafe(16)
    )
    return participants.participant_key(login_session=login, browser=browser)


def client_key() -> str | None:
    """This browser's network address as votes store it (a keyed hash, never the address), for
    the tally per address and SHOOTOUT_VOTES_PER_ADDRESS: all of loopback is one address (issue
    56: three logins through an untrusted proxy on this host all counted under a cap of 1)."""
    return participants.address_key(client_address())


def operator_only(action: access.Action) -> bool:
    """True when this viewer may do `action`; else a caption that says who may."""
    if viewer().may(action):
        return True
    st.caption(f":material/lock: Only an operator may {access.describe(action)} on this server.")
    return False


@st.cache_resource(show_spinner=False)
def _recovered(database_url: str) -> list[int]:
    return mark_interrupted_after_restart()


def recover_once() -> None:
    """Once per server process and database: runs whose worker died with the previous
    process are marked interrupted (never left "running" forever)."""
    try:
        _recovered(get_settings().database_url)
    except Exception as error:  # noqa: BLE001 - a broken database is shown by the sidebar; never block the app
        st.warning(f"Could not check for interrupted runs: {md_text(str(error))}")


def sidebar() -> DeltaGenerator:
    """The frame's sidebar, drawn before the page so that a page ending early (`st.stop()`)
    still has it. Returns the slot of the engine count, which `count_engines` fills again
    once a page has run to its end."""
    with st.sidebar:
        st.caption("Shootout: compare, load-test and watch LLM serving engines.")
        counted = st.empty()
        if not count_engines(counted):
            return counted
        who = viewer()
        if access.login_required() or _oidc_configured() or not who.is_operator:
            st.caption(
                f"Signed in as {who.role}"
                + (
                    ""
                    if who.is_operator
                    else " (watch, send prompts and benchmarks within the limits, vote, export)"
                )
            )
            if access.login_required() and not _oidc_configured():
                st.html(_logout_form(who.is_operator))
            elif _oidc_configured():
                st.button("Log out", on_click=st.logout)
    return counted


def count_engines(slot: DeltaGenerator) -> bool:
    """The registered engines' count in `slot` (replacing what it held), or why the database
    cannot say; False then."""
    try:
        count = len(endpoints.list_engines())
    except Exception as error:  # noqa: BLE001 - the database itself is unreachable: say so, keep rendering
        slot.error(f"Run database unavailable: {md_text(str(error))}")
        return False
    coming = progress.coming()
    still = f" · still installing: {', '.join(coming)} (Engines page)" if coming else ""
    slot.caption(
        f"{count} engine(s) registered{still} · database: {get_settings().database_url.split('://')[0]}"
    )
    return True


def start_and_show(start: Callable[[], int]) -> None:
    """Start a run from a form and open its address (`?run=N`), or show why it was refused."""
    try:
        run_id = start()
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    st.query_params["run"] = str(run_id)
    st.rerun()


def refresh_interval(seconds: float) -> float | None:
    """The `run_every` for live fragments, or None where timed refresh is off (browser tests)."""
    return seconds if get_settings().autorefresh else None


def address_run_id(key: str = "run") -> int | None:
    """The run the address names (`?run=12`), None when it names none; one that cannot be a
    run number (letters, 20 digits) is said in one line and ignored."""
    try:
        return ids.address_id(st.query_params.get(key))
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return None
