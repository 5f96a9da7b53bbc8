"""Session: a presenter drives, the room follows on its own screens, and the session keeps
the record.

`/session` starts one (an operator, or a viewer the operator allowed) or joins one by its
code; `/session?join=<code>` joins at once (the link and the QR code say that);
`/session?session=<id>` is the record of a session for those who missed it. Logic lives in
services.sessions; the follower's screen is drawn by app_pages/parts/session_follow.py and
the frame's hook (app_pages/parts/session_share.py) sends what the presenter opens.
"""

from __future__ import annotations

import streamlit as st

from app_pages import common
from app_pages.parts import session_follow as follow
from app_pages.parts import session_record as record
from app_pages.parts import session_share as share
from services.core.errors import ShootoutError
from services.core.safe_text import md_line, md_text
from services.sessions import view as sessions

state = st.session_state


def _seated(info: sessions.SessionInfo, seat: sessions.Seat) -> None:
    presenting = info.is_presenter(seat)
    share.seat_at(info, seat, presenting=presenting, following=not presenting)


def on_start() -> None:
    try:
        info, seat = sessions.start(
            common.viewer(), common.participant(), state.get("session_title", "")
        )
    except ShootoutError as error:
        state["session_error"] = str(error)
        return
    _seated(info, seat)


def join(code: str) -> bool:
    try:
        info, seat = sessions.join(code, common.participant())
    except ShootoutError as error:
        state["session_error"] = str(error)
        return False
    _seated(info, seat)
    return True


def on_follow(following: bool) -> None:
    seat = share.seat()
    if seat is not None:
        sessions.set_following(seat, following)
        state[share.FOLLOWING] = following


def on_leave() -> None:
    seat = share.seat()
    if seat is not None:
        # Not following any more: a reload of this browser does not seat it again (share.rejoin).
        sessions.set_following(seat, False)
    share.leave()
    st.query_params.pop("join", None)  # else the address would join again at once


def on_take_over(session_id: int) -> None:
    try:
        seat = sessions.take_over(session_id, common.viewer(), common.participant())
        _seated(sessions.get(session_id), seat)
    except ShootoutError as error:
        state["session_error"] = str(error)


def on_ask_end() -> None:
    state["session_confirm_end"] = True


def on_keep() -> None:
    state["session_confirm_end"] = False


def on_end() -> None:
    state["session_confirm_end"] = False
    seat = share.seat()
    if seat is None:
        return
    try:
        info = sessions.end(seat)
    except ShootoutError as error:
        state["session_error"] = str(error)
        return
    share.leave()
    st.query_params["session"] = str(info.id)


def on_note() -> None:
    seat = share.seat()
    if seat is None:
        return
    try:
        sessions.note(seat, state.get("session_note", ""))
    except ShootoutError as error:
        state["session_error"] = str(error)
        return
    state["session_note"] = ""


def start_or_join() -> None:
    viewer = common.viewer()
    left, right = st.columns(2, border=True)
    with left:
        st.subheader("Join a session")
        code = st.text_input("Join code", key="session_code_typed", placeholder="e.g. K7M3X")
        if st.button("Join", key="session_join", type="primary", disabled=not code.strip()):
            join(code)
            st.rerun()
    with right:
        st.subheader("Start a session")
        if sessions.may_present(viewer):
            st.text_input("Title (optional)", key="session_title", max_chars=200)
            st.button("Start session", key="session_start", on_click=on_start)
        else:
            st.caption(
                ":material/lock: Only an operator, or a viewer the operator named in "
                "SHOOTOUT_SESSION_PRESENTERS, may present on this server."
            )


@st.fragment(run_every=common.refresh_interval(2.0))
def room_count(session_id: int) -> None:
    presence = sessions.presence(session_id)
    st.metric("Following now", presence.following, help=f"{presence.joined} joined in all")


def on_reveal(run_id: int) -> None:
    try:
        sessions.reveal(run_id, common.viewer())
    except ShootoutError as error:
        st.session_state["session_error"] = str(error)


@st.fragment(run_every=common.refresh_interval(1.0))
def room_votes(session_id: int, run_id: int) -> None:
    """The room's blind vote on the shown exchange, live (the votes cast in this session, as
    its report counts them), and the reveal when the presenter chooses (an operator's call, as
    on the Playground)."""
    line = sessions.live_tally_line(run_id, session_id)
    st.markdown(line or "No votes yet on the shown exchange.")
    view = sessions.get_exchange(run_id)
    if view.blind and not view.revealed and common.viewer().is_operator:
        st.button(
            "Reveal the engines", key=f"session_reveal_{run_id}", on_click=on_reveal, args=(run_id,)
        )


def presenter(seat: sessions.Seat) -> None:
    info = sessions.get(seat.session_id)
    if not info.is_presenter(seat):
        st.warning("Someone else presents this session now; you follow it.")
        state[share.PRESENTING], state[share.FOLLOWING] = False, True
        return
    st.subheader(f"Presenting: {md_line(info.title) or 'untitled session'}")
    link = record.join_link(info.join_code)
    code_column, qr_column, count_column = st.columns([2, 1, 1])
    with code_column:
        st.markdown(f"Join code: **`{info.join_code}`**")
        st.code(link, language=None)
        st.caption(
            "Open a run, a Playground exchange, a demo, a parity run, a comparison or the Planner on "
            "any page: every follower's screen shows it within a second."
        )
    qr_column.image(sessions.qr_svg(link), width=200, caption="Scan to join")
    with count_column:
        room_count(info.id)
    current = sessions.state(info.id)
    if current.shown is not None:
        st.caption(f"The room sees now: {md_line(record.label(current.shown))}")
        if current.shown.kind == "exchange" and current.shown.run_ids:
            room_votes(info.id, current.shown.run_ids[0])
    with st.form("session_note_form", clear_on_submit=True, enter_to_submit=True):
        st.text_input("Note for the record", key="session_note")
        st.form_submit_button("Add note", on_click=on_note)
    if state.get("session_confirm_end"):
        # Ending loses the room at once: asked first, saying what goes (issue 45).
        st.warning(sessions.end_question(info.id))
        yes, no = st.columns(2)
        yes.button("End it now", key="session_end_confirm", type="primary", on_click=on_end)
        no.button("Keep presenting", key="session_end_cancel", on_click=on_keep)
    else:
        st.button("End session…", key="session_end", on_click=on_ask_end)
    record.timeline(info.id)


def follower(seat: sessions.Seat) -> None:
    live = sessions.poll(seat)
    if live.ended:
        share.leave()
        st.info("The session has ended. Its record:")
        record.record(seat.session_id)
        return
    st.subheader(
        f"Session {md_line(str(state.get(share.CODE, '')))}: {md_line(live.title) or 'untitled'}"
    )
    following = bool(state.get(share.FOLLOWING))
    buttons = st.container(horizontal=True)
    if following:
        buttons.button("Stop following", key="session_unfollow", on_click=on_follow, args=(False,))
    else:
        buttons.button(
            "Follow again", key="session_follow", type="primary", on_click=on_follow, args=(True,)
        )
    buttons.button("Leave", key="session_leave", on_click=on_leave)
    if sessions.may_present(common.viewer()):
        buttons.button(
            "Present from here", key="session_take_over", on_click=on_take_over, args=(seat.session_id,)
        )
    if not following:
        st.info("You stopped following: look around on any page, then come back here and follow again.")
        return
    follow.screen(seat)


st.title("Session")
wanted = st.query_params.get("join")
if wanted and sessions.normalise_code(wanted) != state.get(share.CODE) and join(wanted):
    st.rerun()  # once: the frame's sidebar, drawn before this page, names the session too
error = state.pop("session_error", None)
if error:
    st.error(md_text(str(error)))
record_id = st.query_params.get("session")
seat = share.seat()
try:
    if record_id is not None:
        record.record_page(record_id)
    elif seat is None:
        start_or_join()
    elif state.get(share.PRESENTING):
        presenter(seat)
    else:
        follower(seat)
except ShootoutError as failure:
    st.error(md_text(str(failure)))
