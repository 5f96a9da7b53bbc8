"""A follower's read-only screen: what the presenter shows, drawn with the pages' own pieces
(the Playground's answer panes, the Benchmarks live view, the Runs page's results, the
Planner's plan, a demo's steps). Nothing here starts, cancels or changes a run."""

from __future__ import annotations

import time
from dataclasses import dataclass

import streamlit as st

from app_pages import common
from app_pages.parts import demos_view, planner_plan
from app_pages.parts import playground_answers as answers
from app_pages.parts import session_share as share
from app_pages.parts.runs_results import results
from services.core.errors import ShootoutError
from services.core.figures import inert
from services.core.safe_text import md_line, md_text
from services.sessions import view as sessions

#: The follower's screen, in a fragment of its own: its first timed run comes this long after
#: the page drew it, then it waits in place for the presenter (a publish here wakes it at once)
#: and draws again only what changed. No page reruns while the room follows.
FOLLOW_START_S = 1.0
#: A follower's screen grows a streaming answer at most this often (the presenter's: at once);
#: the room sees what the presenter sees within it, at a fraction of the cost.
FOLLOW_EVERY_S = 0.25
#: With nothing new, a follower's screen is touched this often while an answer streams, and
#: FOLLOW_IDLE_S while nothing does (a click is taken there).
FOLLOW_QUIET_S = 0.5
FOLLOW_IDLE_S = 1.0
#: A newly shown exchange is drawn once its first words are there (at most this long after it
#: is shown), and AFTER_PRESENTER_S after them: the presenter's screen (the projector) draws its
#: first words before thirty screens draw the exchange, well within the room's second.
FIRST_WORDS_WAIT_S = 2.0
AFTER_PRESENTER_S = 0.25
#: A shown run, benchmark or demo that is still live is drawn again this often.
LIVE_EVERY_S = 1.0
#: Set while the follower's whole page draws: the screen waits in place only in a run of its own.
DRAWING_PAGE = "session_drawing_page"
#: The presenter's sequence number the screen shows.
DRAWN = "session_seen_seq"
LIVE_WORDS = ":material/sensors: Live: this screen follows the presenter."
#: The answer this follower picked and has yet to confirm: (run id, engine or TIE).
PICK = "session_vote_pick"
#: This follower's last vote: (run id, None when it counted, else why not).
VOTED = "session_vote_result"
#: Set by a ballot button's click, so the run it starts ends once drawn.
CLICKED = "session_vote_clicked"
#: "No clear winner" as a ballot says it.
TIE = "tie"
#: The screen's run lasts while it waits in place, so the header would say "Running…" with a
#: Stop button for as long as the room follows: hidden here (a lost connection still shows).
FOLLOWING_CSS = (
    '<style>[data-testid="stStatusWidget"]:has([data-testid="stStatusWidgetRunningIcon"])'
    "{visibility:hidden}</style>"
)


@dataclass(frozen=True)
class Drawn:
    """How a drawn thing goes on: still live (drawn again every LIVE_EVERY_S), or a streaming
    exchange's panes, which grow in place."""

    live: bool = False
    growing: tuple[answers.playground.ExchangeView, dict[str, answers.Places]] | None = None


def screen(seat: sessions.Seat) -> None:
    """The follower's screen: what the presenter shows, live."""
    st.html(FOLLOWING_CSS)
    st.session_state[DRAWING_PAGE] = True
    try:
        _screen(seat)
    finally:
        st.session_state[DRAWING_PAGE] = False


@st.fragment(run_every=common.refresh_interval(FOLLOW_START_S))
def _screen(seat: sessions.Seat) -> None:
    live = sessions.poll(seat)
    if live.ended:
        st.rerun()  # the page says so and shows the record
    page = bool(st.session_state.get(DRAWING_PAGE))
    st.session_state[DRAWN] = live.seq
    line = st.empty()
    line.caption(LIVE_WORDS)
    if live.shown is None:
        st.caption("The presenter has shown nothing yet: it appears here when they open it.")
        drawn = Drawn()
    else:
        drawn = shown(live.shown)
    # A page run: the fragment's first timed run waits in place. A ballot click's run ends
    # too: the buttons a run replaced stay on screen until it ends (Streamlit keeps a replaced
    # widget that long), and the next timed run waits in place instead.
    if page or st.session_state.pop(CLICKED, False):
        return
    if drawn.growing is not None:
        view, places = drawn.growing
        answers.grow(
            view,
            places,
            every_s=FOLLOW_EVERY_S,
            quiet_s=FOLLOW_QUIET_S,
            still_shown=_still_shown,
            scope="fragment",
        )
    began = time.monotonic()
    while not drawn.live or time.monotonic() - began < LIVE_EVERY_S:
        now = sessions.wait_for_change(seat, live.seq, FOLLOW_IDLE_S)
        if now.ended or now.seq != live.seq:
            _after_first_words(now.shown)
            break
        line.caption(LIVE_WORDS)  # a yield point: a click is taken here
    st.rerun(scope="fragment")


def _after_first_words(what: sessions.Shown | None) -> None:
    """Before a screen draws what the presenter shows now: a streaming exchange once its first
    words are there (the screen waits here, not in a run of its own, so it costs nothing)."""
    if (
        what is not None
        and what.kind == "exchange"
        and what.run_id is not None
        and sessions.first_words(what.run_id, FIRST_WORDS_WAIT_S)
    ):
        time.sleep(AFTER_PRESENTER_S)


def shown(what: sessions.Shown) -> Drawn:
    """Draw `what` read-only; a run deleted since, or any other refusal, as a message."""
    try:
        if what.kind == "exchange" and what.run_id is not None:
            return exchange(what.run_id)
        if what.kind == "compare":
            compare(what)
        elif what.kind == "planner":
            planner(what)
        elif what.kind == "demo_step" and what.run_id is not None:
            return Drawn(live=_demo(what.run_id))
        elif what.run_id is not None:
            return run(what.run_id)
    except ShootoutError as error:
        st.error(md_text(str(error)))
    return Drawn()


def _still_shown() -> bool:
    """Whether the presenter still shows what this screen shows (the followers' shared poll)."""
    seat = share.seat()
    if seat is None:
        return True
    live = sessions.poll(seat)
    if live.ended:
        return False
    if live.seq == st.session_state.get(DRAWN):
        return True
    _after_first_words(live.shown)
    return False


def exchange(run_id: int) -> Drawn:
    """The presenter's Playground exchange as its panes show it, growing while it streams; a
    blind one stays blind here too (the arrangement comes from the stored exchange)."""
    return Drawn(growing=_exchange(run_id))


def _exchange(
    run_id: int,
) -> tuple[answers.playground.ExchangeView, dict[str, answers.Places]] | None:
    """The panes; while the exchange streams, it and the places of its answers."""
    view = sessions.shared_exchange(run_id)
    arrangement = sessions.arrange(view, common.participant())
    st.markdown(f"**Playground · turn {view.turn}:** {md_text(view.prompt)}")
    if not arrangement.columns:
        st.caption("Waiting for the engines' first answers…")
        return (view, {}) if view.active else None
    units = sessions.units(arrangement.columns)
    panes = st.columns(len(arrangement.columns), border=True)
    places = {}
    for pane, column in zip(panes, arrangement.columns, strict=True):
        with pane:
            places[column.engine] = answers.pane(
                view, column, arrangement.labels[column.engine], arrangement.hidden, view.blind, units
            )
    # One slot for the ballot: this screen's run waits in place, so what a redraw does not
    # overwrite stays on screen; the slot is the ballot, or empty once the names show.
    ballot = st.empty()
    if arrangement.hidden and not view.active:
        with ballot.container():
            _vote(run_id, arrangement)
    _voted(run_id)
    return (view, places) if view.active else None


def _on_pick(run_id: int, winner: str | None) -> None:
    """A ballot button only picks: the vote counts once confirmed (a misclick costs nothing)."""
    st.session_state[PICK] = (run_id, winner) if winner is not None else None
    st.session_state[CLICKED] = True


def _on_vote(run_id: int, winner: str) -> None:
    st.session_state[PICK] = None
    st.session_state[CLICKED] = True
    try:
        current = share.seat()
        sessions.vote_best(
            run_id,
            winner,
            participant=common.participant(),
            session_id=current.session_id if current is not None else None,
            client=common.client_key(),
        )
    except ShootoutError as error:
        st.session_state[VOTED] = (run_id, str(error))
    else:
        st.session_state[VOTED] = (run_id, None)


def _voted(run_id: int) -> None:
    """What this follower's vote on the shown exchange came to, said under its answers."""
    found = st.session_state.get(VOTED)
    if not found or found[0] != run_id:
        return
    if found[1] is None:
        st.success("Vote counted.")
    else:
        st.error(md_text(found[1]))


def _vote(run_id: int, arrangement: sessions.Arrangement) -> None:
    """The room's blind vote on the shown exchange: one per participant (the same key as the
    Playground's votes, so a vote here and there is one vote), tied to the session, and
    confirmed first as on the Playground. The buttons' keys say the answer's letter, never its
    engine: a key is in the page and in every websocket frame that draws it (issue 56)."""
    pick = st.session_state.get(PICK)
    picked = pick[1] if pick and pick[0] == run_id else None
    labels = arrangement.labels
    if picked is not None:
        choice = (
            "no clear winner (a tie)"
            if picked == TIE
            else f"**{labels.get(picked, 'that answer')}** as the best answer"
        )
        st.warning(f"Vote for {choice}? The names show once you confirm, and the vote counts.")
        yes, no, _ = st.columns([1, 1, 4])
        yes.button(
            "Confirm vote",
            key=f"session_vote_confirm_{run_id}",
            type="primary",
            on_click=_on_vote,
            args=(run_id, picked),
        )
        no.button("Cancel", key=f"session_vote_cancel_{run_id}", on_click=_on_pick, args=(run_id, None))
        return
    st.caption("Which answer is best? The engines stay hidden until the presenter reveals them.")
    st.caption(sessions.VOTER_WORDS)
    buttons = st.columns(len(arrangement.columns) + 1)
    choices = [(labels[c.engine], labels[c.engine][-1], c.engine) for c in arrangement.columns] + [
        ("No clear winner", TIE, TIE)
    ]
    for slot, (label, letter, winner) in zip(buttons, choices, strict=True):
        slot.button(
            label, key=f"session_vote_{run_id}_{letter}", on_click=_on_pick, args=(run_id, winner)
        )


def run(run_id: int) -> Drawn:
    """A shown run: a benchmark still running as the Benchmarks page's live view, any other as
    the Runs page shows its results; drawn again while it runs."""
    kind, active = sessions.is_running(run_id)
    if kind == "benchmark" and active:
        return Drawn(live=_benchmark_live(run_id))
    _run_view(run_id)
    return Drawn(live=active)


def _benchmark_live(run_id: int) -> bool:
    """The Benchmarks page's live view, without its Cancel button; whether it still runs."""
    view = sessions.benchmark_view(run_id)
    st.subheader(f"#{run_id} {md_line(view.run.name)}")
    st.progress(min(1.0, view.run.progress), text=view.progress_markdown)
    for line in view.count_lines:
        st.caption(line)
    st.plotly_chart(inert(view.figures["live"]), key=f"session_bench_live_{run_id}")
    return view.active


def _run_view(run_id: int) -> None:
    """A stored run as the Runs page shows its results (no notes, tags or actions)."""
    page = sessions.run_page_view(run_id)
    st.subheader(page.title)
    st.caption(page.caption)
    if page.run.detail.error:
        st.error(md_text(page.run.detail.error))
    if page.run.view is not None:
        results(page.run.view, f"session_run_{run_id}")
    if page.run.exchanges is not None and page.run.detail.hidden:
        # A blind exchange before its reveal: each answer by its blind name, as the Runs page.
        for heading, text in sessions.blind_answers(page.run.exchanges):
            with st.container(border=True):
                st.markdown(heading)
                st.markdown(text)
    elif page.run.exchanges is not None:
        st.dataframe(page.run.exchanges, hide_index=True, key=f"session_exchanges_{run_id}")
    if page.demo_conclusion:
        st.success(page.demo_conclusion)
    if page.parity_headline:
        st.info(page.parity_headline)
    if not page.has_results:
        st.info("This run holds no results yet.")


def compare(what: sessions.Shown) -> None:
    page = sessions.compare_page_view(sessions.id_list(what.run_ids), what.baseline)
    st.subheader(page.title)
    results(page.view, "session_compare")


def _demo(run_id: int) -> bool:
    """A demo's steps so far, as the Demos page draws them, without its controls; whether it
    still runs."""
    view = sessions.demo_view(run_id)
    st.subheader(md_line(view.title))
    st.caption(f"{md_line(view.mechanism)} · demo #{view.run_id}")
    if view.live:
        st.progress(min(1.0, view.progress))
    for step in view.steps:
        demos_view.step(step)
    if view.conclusion:
        st.success(md_text(view.conclusion))
    return view.live


def planner(what: sessions.Shown) -> None:
    request = sessions.plan_request(what)
    if request is None:
        st.warning("The presenter's Planner inputs could not be read.")
        return
    st.subheader("Planner")
    st.caption(
        f"{md_line(request.model)} on {md_line(request.gpu)} · batch {request.batch} · context "
        f"{request.context} · TP {request.tp}"
    )
    planner_plan.show_plan(request)
