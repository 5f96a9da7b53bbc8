"""The frame's hook of team sessions: what a presenter opens goes to the room, and the
sidebar says which session this tab presents or follows. Cheap when no session is open: one
look at this tab's state."""

from __future__ import annotations

import streamlit as st

from app_pages import common, registry
from services.core.errors import ShootoutError
from services.core.safe_text import md_line
from services.sessions import view as sessions

SEAT = "session_seat"
PRESENTING = "session_presenting"
FOLLOWING = "session_following"
CODE = "session_code"
LAST = "session_last_shown"
#: Set once this tab has looked for a seat its participant already holds.
LOOKED = "session_rejoin_looked"


def seat() -> sessions.Seat | None:
    found = st.session_state.get(SEAT)
    return found if isinstance(found, sessions.Seat) else None


def presenting() -> sessions.Seat | None:
    return seat() if st.session_state.get(PRESENTING) else None


def leave() -> None:
    for key in (SEAT, PRESENTING, FOLLOWING, CODE, LAST):
        st.session_state.pop(key, None)


def publish(shown: sessions.Shown | None) -> None:
    """Show `shown` to the room when this tab presents (once per change: pages rerun often)."""
    presenter = presenting()
    if presenter is None or shown is None or st.session_state.get(LAST) == shown:
        return
    try:
        sessions.publish(presenter, shown)
    except sessions.SessionEnded:
        leave()
        return
    except sessions.NotPresenter:
        # Someone took the session over: this tab follows it from now on.
        st.session_state[PRESENTING], st.session_state[FOLLOWING] = False, True
        return
    except ShootoutError as error:
        st.sidebar.warning(f"Not shown to the room: {md_line(str(error))}")
        return
    st.session_state[LAST] = shown


def seat_at(info: sessions.SessionInfo, seat: sessions.Seat, presenting: bool, following: bool) -> None:
    st.session_state[SEAT] = seat
    st.session_state[CODE] = info.join_code
    st.session_state[PRESENTING] = presenting
    st.session_state[FOLLOWING] = following
    st.session_state.pop(LAST, None)


def rejoin() -> None:
    """A fresh tab (a reload, a new tab) of someone who presents or joined a live session takes
    their seat back: a presenter's F5 must not leave the room looking at a frozen screen. Once
    per tab: a participant in no session costs two small reads when the tab opens."""
    if st.session_state.get(LOOKED) or seat() is not None:
        return
    st.session_state[LOOKED] = True
    try:
        found = sessions.rejoin(common.participant())
    except Exception as error:  # noqa: BLE001 - the database may be down: the page itself must still draw
        st.sidebar.warning(f"Could not look for your session: {md_line(str(error))}")
        return
    if found is not None:
        seat_at(found.info, found.seat, found.presenting, found.following)


def share_address(page: str) -> None:
    """Called by the frame before each page: what this page's address shows, to the room."""
    if presenting() is None or page == "session":
        return
    params = {key: st.query_params.get_all(key) for key in st.query_params}
    try:
        publish(sessions.shown_from_address(page, params))
    except Exception as error:  # noqa: BLE001 - the database may be down: the page itself must still draw
        st.sidebar.warning(f"Not shown to the room: {md_line(str(error))}")


def sidebar_line() -> None:
    """Which session this tab is in, with the way back to it."""
    if seat() is None:
        return
    code = md_line(str(st.session_state.get(CODE, "")))
    current = seat()
    if st.session_state.get(PRESENTING) and current is not None:
        try:
            following = sessions.presence(current.session_id).following
        except Exception:  # noqa: BLE001 - the database may be down: the page itself must still draw
            following = 0
        text = (
            f":material/co_present: Presenting session **{code}** to {following} following: what you "
            "open, the room sees."
        )
    elif st.session_state.get(FOLLOWING):
        text = f":material/group: Following session **{code}**."
    else:
        text = f":material/group: In session **{code}**, not following."
    with st.sidebar:
        st.caption(text)
        entry = registry.page("session")
        st.page_link(f"app_pages/{entry.file}", label=entry.title, icon=entry.icon)


def publish_planner(request: sessions.PlanRequest) -> None:
    """The Planner has no address: it passes its inputs itself."""
    if presenting() is not None:
        publish(sessions.planner_shown(request))
