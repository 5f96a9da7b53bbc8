"""Playground: one prompt to 2-6 engines side by side, streamed and measured live.

The page only reads widgets and calls services.playground; the streams run in the warm worker
process that stores partial answers as they grow. While a send is active the answer panel (a
fragment) reruns on its own and, in such a run, grows each answer in its place as the shared
reader sees it (parts/playground_answers.grow), drawing the panel again only when a column's
status changes, and the page when the exchange ends. The exchange on screen has an address, /playground?exchange=<run id>, so a reload
shows it again. Everything untrusted (answers, errors, names) goes through
services.playground.text before Streamlit renders it as markdown.
"""

from __future__ import annotations

import streamlit as st

from app_pages import common
from app_pages.parts import playground_answers as answers
from app_pages.parts import playground_form as form
from services.core.errors import ShootoutError
from services.playground import view as playground

#: The query parameter that gives the exchange on screen an address of its own (a reload while
#: it streams, or a shared link, shows it again).
ADDRESS = "exchange"

#: While a send streams, the panel's own reruns start this soon after the page is drawn (each
#: then grows the answers until something else than text changes).
LIVE_INTERVAL_S = 0.05
#: How often the page looks again while it waits for a second engine (each look: a health check
#: per local engine whose process runs).
WAITING_INTERVAL_S = 3.0
#: The waiting room the page itself just read, handed to the fragment's first draw.
ROOM_SEEN = "pg_room_seen"
#: Set while the whole page draws: the panel grows its answers only in a run of its own (a page
#: stuck in that loop would leave what follows the panel undrawn).
DRAWING_PAGE = "pg_drawing_page"

state = st.session_state
state.setdefault("pg_run_id", None)
state.setdefault("pg_conversation_id", None)
state.setdefault("pg_error", None)


def _on_screen(run_id: int | None, conversation_id: str | None) -> None:
    state.pg_run_id = run_id
    state.pg_conversation_id = conversation_id
    if run_id is None:
        st.query_params.pop(ADDRESS, None)
    else:
        st.query_params[ADDRESS] = str(run_id)


def on_send() -> None:
    state.pg_error = None
    try:
        request = playground.form_request(state, state.pg_conversation_id)
        handle = playground.send(request, common.viewer(), isolated=True)
    except ShootoutError as error:
        state.pg_error = str(error)
        return
    _on_screen(handle.run_id, handle.conversation_id)
    state.pg_prompt = ""


def on_stop() -> None:
    if state.pg_run_id is None:
        return
    try:
        playground.stop(state.pg_run_id, common.viewer())
    except ShootoutError as error:
        state.pg_error = str(error)
        return
    playground.wait_stopped(state.pg_run_id)


def on_new_conversation() -> None:
    _on_screen(None, None)
    state.pg_error = None


def _show(run_id: int) -> None:
    """Put a stored exchange on screen, its settings in the form (the next prompt continues it)."""
    reopened = playground.reopen_form(run_id, common.participant())
    state.update(reopened.form)
    _on_screen(run_id, reopened.conversation_id)


def on_open(run_id: int) -> None:
    """Show a stored exchange (and continue its conversation from there)."""
    state.pg_error = None
    try:
        _show(run_id)
    except ShootoutError as error:
        state.pg_error = str(error)


def _follow_address() -> None:
    """?exchange=<run id> names the exchange on screen: a new session (a reload) opens it."""
    wanted = st.query_params.get(ADDRESS)
    if wanted is None:
        if state.pg_run_id is not None:
            st.query_params[ADDRESS] = str(state.pg_run_id)
        return
    if wanted == str(state.pg_run_id):
        return
    try:
        _show(playground.exchange_id(wanted))
    except ShootoutError as error:
        state.pg_error = str(error)
        _on_screen(None, None)


def on_send_again(run_id: int) -> None:
    state.pg_error = None
    try:
        handle = playground.resend(run_id, common.viewer(), isolated=True)
    except ShootoutError as error:
        state.pg_error = str(error)
        return
    _on_screen(handle.run_id, handle.conversation_id)


def on_pick(run_id: int, winner: str | None) -> None:
    """A vote button only picks: the vote counts once confirmed (a misclick costs nothing)."""
    state.pg_vote_pick = (run_id, winner) if winner is not None else None


def on_vote(run_id: int, winner: str) -> None:
    state.pg_vote_pick = None
    try:
        playground.vote_best(
            run_id, winner, participant=common.participant(), client=common.client_key()
        )
    except ShootoutError as error:
        state.pg_error = str(error)


def on_undo(run_id: int) -> None:
    try:
        playground.undo_vote(run_id, common.viewer(), common.participant())
    except ShootoutError as error:
        state.pg_error = str(error)


def on_reveal(run_id: int) -> None:
    state.pg_vote_pick = None
    try:
        playground.reveal(run_id, common.viewer())
    except ShootoutError as error:
        state.pg_error = str(error)


def vote_controls(run_id: int) -> answers.VoteControls:
    pick = state.get("pg_vote_pick")
    viewer = common.viewer()
    participant = common.participant()
    return answers.VoteControls(
        participant=participant,
        picked=pick[1] if pick and pick[0] == run_id else None,
        may_undo=playground.may_undo(run_id, viewer, participant),
        may_reveal=viewer.is_operator,
        on_pick=on_pick,
        on_vote=on_vote,
        on_undo=on_undo,
        on_reveal=on_reveal,
    )


# ---------------------------------------------------------------------------------------- page

st.title("Playground")
st.caption(
    "One prompt to several engines at once: answers stream side by side, each with its own "
    "live measurements from the engine's own usage. Every exchange is stored (Runs page)."
)

try:
    engines = playground.list_engines()
    playground.keep_worker_warm()
    _follow_address()
    current = playground.get_exchange(state.pg_run_id) if state.pg_run_id is not None else None
except ShootoutError as error:
    st.error(playground.md_text(str(error)))
    st.stop()

busy = bool(current and current.active)
engine_names = [e.name for e in engines]
# Until the form has its engines, it waits for two that answer: the first minutes after
# `./run.sh`, when the local engines are still installing (issue 58).
room = playground.waiting_room(engines) if "pg_engines" not in state or len(engines) < 2 else None


@st.fragment(run_every=common.refresh_interval(WAITING_INTERVAL_S))
def waiting() -> None:
    """Redrawn on its own until two engines answer, then the whole page, with them picked."""
    # The page's own look at its first draw (one health check per engine, not two), then anew.
    now = state.pop(ROOM_SEEN, None) or playground.waiting_room(playground.list_engines())
    if not now.waiting:
        st.rerun()
    form.waiting_room(now)


if room is not None and room.waiting:
    state[ROOM_SEEN] = room
    waiting()
    st.stop()
if len(engines) < 2:
    st.info(
        "Register at least two engines to compare them: the Engines page, or `shootout local up` "
        "for the local engines (llama.cpp, vLLM, SGLang, Triton and SGLang's router, on CPU)."
    )
    if room is not None and room.failed:
        form.failed_engines(room)
    st.stop()

form.set_defaults(engine_names, room)
with st.container(border=True):
    form.engines_and_parameters(engines, busy)
    # Stop is offered to whoever sent the exchange on screen, and to operators.
    may_stop = current is None or playground.may_control_run(current.run_id, common.viewer())
    form.prompt_and_buttons(
        busy, bool(state.pg_conversation_id), on_send, on_stop if may_stop else None, on_new_conversation
    )

if state.pg_error:
    st.error(playground.md_text(state.pg_error))

if state.pg_conversation_id and current is not None and current.turn > 1:
    answers.earlier_turns(state.pg_conversation_id, current.turn, common.participant())


@st.fragment(run_every=LIVE_INTERVAL_S if busy else None)
def answers_panel() -> None:
    """The live columns only: everything that a click changes (diff, votes, tally) is drawn
    by the whole page below, since a click inside a fragment reruns the fragment alone."""
    run_id = state.pg_run_id
    if run_id is None:
        st.caption("Answers appear here, one column per engine, as the tokens arrive.")
        return
    try:
        view = playground.get_exchange(run_id)
    except ShootoutError as error:
        st.error(playground.md_text(str(error)))
        return
    if busy and not view.active:
        st.rerun()  # streams done: rerun the page once so the inputs, diff and votes come back
    arrangement = playground.arrange(view, common.participant())
    st.markdown(f"**Turn {view.turn}:** {playground.md_text(view.prompt)}")
    if not arrangement.hidden and view.first_token_engine:
        fastest = (
            f" · fastest decode: **{playground.md_line(view.fastest_engine)}**"
            if view.fastest_engine
            else ""
        )
        st.markdown(f"First token: **{playground.md_line(view.first_token_engine)}**{fastest}")
    units = playground.units(arrangement.columns)
    panes = st.columns(len(arrangement.columns), border=True)
    places = {}
    for pane, column in zip(panes, arrangement.columns, strict=True):
        with pane:
            label = arrangement.labels[column.engine]
            places[column.engine] = answers.pane(
                view, column, label, arrangement.hidden, view.blind, units
            )
    if not arrangement.hidden and not view.active:
        answers.copy_as_code(view, arrangement.columns)
    if view.active and not state.get(DRAWING_PAGE):
        answers.grow(view, places)


state[DRAWING_PAGE] = True
answers_panel()
state[DRAWING_PAGE] = False
if current is not None and not busy:
    try:
        answers.compare(current, vote_controls(current.run_id))
    except ShootoutError as error:
        st.error(playground.md_text(str(error)))

tally = playground.tally_rows()
if tally:
    with st.expander("Blind votes per engine pair"):
        st.dataframe(tally, hide_index=True)

with st.expander("Recent exchanges"):
    answers.recent(busy, common.participant(), on_open, on_send_again)
