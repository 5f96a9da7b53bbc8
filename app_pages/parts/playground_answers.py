"""The Playground's answers: one pane per engine, the diff and blind vote, and the recent
exchanges. Everything untrusted goes through services.playground.text before markdown."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from services.core.units import TimeUnit, count, duration
from services.playground import view as playground

#: While an exchange streams, a change is drawn as soon as it is read; with nothing new the
#: presenter's screen is still touched this often, so a click (Stop) is taken within it.
QUIET_S = 0.05
#: The panel is drawn again this often while an exchange streams, even with no new status: a
#: worker gone silent is found out there (services.playground.reading marks it interrupted).
RECHECK_S = 10.0
#: How often a follower's screen asks whether the presenter still shows the exchange.
STILL_SHOWN_S = 1.0


@dataclass(frozen=True)
class Places:
    """Where a pane shows its status and its answer: `grow` draws them there while it streams
    (answer None: several choices, drawn by the page)."""

    status: DeltaGenerator
    answer: DeltaGenerator | None


def status_words(status: str) -> str:
    return playground.STATUS_WORDS.get(status, playground.md_line(status))


def _title(column: playground.Column, label: str, hidden: bool) -> str:
    if hidden:
        return f"**{label}**"
    model = f" · {playground.code_span(column.model)}" if column.model else ""
    return f"**{playground.md_line(column.engine)}**{model}"


def pane(
    view: playground.ExchangeView,
    column: playground.Column,
    label: str,
    hidden: bool,
    blind: bool,
    units: tuple[TimeUnit, TimeUnit],
) -> Places:
    """One engine's pane: title, status, timings (unless hidden), notes, answer, checks; returns
    the places of its status and answer, where `grow` draws them while it streams."""
    st.markdown(_title(column, label, hidden))
    status = st.empty()
    status.caption(status_words(column.status))
    if not hidden:
        if blind:
            st.caption(f"{label} in the blind vote")
        ttft, _ = units
        st.markdown(playground.figures(column, units))
        st.caption(
            playground.token_counts(column),
            help=playground.cached_tokens_help(column.kind, column.cached_tokens, column.status),
        )
        split = playground.engine_split(column, units)
        if split is not None:
            st.caption(split)
        if view.turn > 1 and column.first_turn_ttft_s is not None:
            st.caption(
                f"Prefix cache, turn {view.turn} vs turn 1: TTFT {duration(column.ttft_s, ttft)} vs "
                f"{duration(column.first_turn_ttft_s, ttft)}, cached tokens "
                f"{count(column.cached_tokens)} vs {count(column.first_turn_cached_tokens)}"
                + (f" ({playground.cached_zero_why(column.kind)})" if column.cached_tokens == 0 else "")
            )
    for note in column.notes:
        st.caption(f":material/info: {playground.md_line(note)}")
    # Answers keep their markdown, but safe_answer leaves no image to load.
    thinking = playground.thinking_title(column)
    if thinking is not None:
        with st.expander(thinking, expanded=False):
            st.markdown(playground.safe_answer(column.thinking))
    slot = None
    if column.choices:
        tabs = st.tabs([f"choice {i}" for i in range(len(column.choices))])
        for tab, text in zip(tabs, column.choices, strict=True):
            tab.markdown(playground.safe_answer(text) or "…")
    else:
        slot = st.empty()
        slot.markdown(
            playground.safe_answer(column.answer)
            or ("…" if column.status == "streaming" else "_no text_")
        )
    if column.error and column.status != "cancelled":
        st.error(playground.md_text(column.error))
    if column.schema_check is not None:
        if column.schema_check.valid:
            st.success("Valid against the schema.")
        elif column.schema_check.valid is None:
            st.warning(
                f"Not checked against the schema: {playground.md_line(column.schema_check.message)}"
            )
        else:
            st.error(
                f"Invalid at {playground.md_line(column.schema_check.path)}: "
                f"{playground.md_line(column.schema_check.message)}"
            )
    return Places(status, slot)


def grow(
    view: playground.ExchangeView,
    places: dict[str, Places],
    *,
    every_s: float = 0.0,
    quiet_s: float = QUIET_S,
    still_shown: Callable[[], bool] | None = None,
    scope: Literal["app", "fragment"] = "app",
) -> None:
    """Grow the answers in their places while the exchange streams, in a run of the fragment
    that drew them: each change as soon as it is read (services.playground.watching reads it
    once for every screen), at most every `every_s` (a follower). A column's new status is drawn
    in place too ("finished" under its own column when its engine ends), then the fragment runs
    again for its figures; so it does when the first words arrive and every RECHECK_S; the
    exchange's end reruns the page. With nothing new it touches the screen every `quiet_s` (a
    yield point, where a click is taken). `still_shown`, asked every STILL_SHOWN_S, says whether
    the screen should show this exchange still (a follower's presenter may show something else).
    Returns never: it ends in a rerun, of the page or (`scope`, a follower's screen) of the
    fragment when the exchange ends or is no longer shown."""
    drawn = {c.engine: (c.status, c.answer) for c in view.columns}
    seen = 0
    began = asked = time.monotonic()
    while True:
        now = playground.growing(view.run_id, seen, quiet_s)
        seen = now.version
        if not now.active:
            st.rerun(scope=scope)
        if still_shown is not None and time.monotonic() - asked > STILL_SHOWN_S:
            asked = time.monotonic()
            if not still_shown():
                st.rerun(scope=scope)
        rerun = time.monotonic() - began > RECHECK_S
        touched = False
        for engine, (status, text) in now.answers.items():
            status_then, text_then = drawn.get(engine, (status, text))
            # Only forward: a read older than the page's own draws nothing back.
            if len(text) < len(text_then) or status_then != "streaming":
                continue
            place = places.get(engine)
            if text != text_then:
                if place is None or place.answer is None:  # choices: the page draws them
                    time.sleep(0.4)  # at most twice a second
                    rerun = True
                else:
                    place.answer.markdown(playground.safe_answer(text))
                    touched = True
            if status != status_then and place is not None:
                place.status.caption(status_words(status))
                touched = True
            if status != status_then or (text and not text_then):
                rerun = True
            drawn[engine] = (status, text)
        if rerun:
            st.rerun(scope="fragment")
        if not touched and places:  # a yield point, so a click is taken now
            engine, place = next(iter(places.items()))
            place.status.caption(status_words(drawn[engine][0]))
        if every_s:
            time.sleep(every_s)


def copy_as_code(view: playground.ExchangeView, columns: list[playground.Column]) -> None:
    """Each engine's request as curl and Python, one tab per engine under the panes: inside a
    pane of six at 1400 px the code was cut off a third of the way along its lines."""
    with st.expander("Copy as code"):
        tabs = st.tabs([playground.md_line(column.engine) for column in columns])
        for tab, column in zip(tabs, columns, strict=True):
            curl, python = playground.request_code(view.run_id, column.engine)
            tab.code(curl, language="bash")
            tab.code(python, language="python")


@dataclass(frozen=True)
class VoteControls:
    """What the blind vote under the diff may offer this viewer, and the page's callbacks."""

    #: This voter's stored key (app_pages.common.participant).
    participant: str
    #: The answer picked and waiting for confirmation ("tie" for no clear winner), None if none.
    picked: str | None
    may_undo: bool
    may_reveal: bool
    on_pick: Callable[[int, str | None], None]
    on_vote: Callable[[int, str], None]
    on_undo: Callable[[int], None]
    on_reveal: Callable[[int], None]


def compare(view: playground.ExchangeView, controls: VoteControls) -> None:
    """The diff of two answers, then (a blind exchange) the vote, its confirmation and undo."""
    arrangement = playground.arrange(view, controls.participant)
    columns, labels, hidden, cast = (
        arrangement.columns,
        arrangement.labels,
        arrangement.hidden,
        arrangement.vote,
    )
    names = [c.engine for c in columns]
    shown = (lambda n: labels[n]) if hidden else (lambda n: n)
    st.subheader("Compare answers")
    left, right = st.columns(2)
    # The key changes at the reveal: with the same key the selectors kept showing "Answer A"
    # after the vote (Streamlit keeps a keyed widget's option labels).
    phase = "blind" if hidden else "named"
    first = left.selectbox("Left", names, format_func=shown, key=f"pg_diff_a_{phase}")
    second = right.selectbox(
        "Right", names, index=min(1, len(names) - 1), format_func=shown, key=f"pg_diff_b_{phase}"
    )
    texts = {c.engine: c.answer for c in columns}
    if first and second and first != second:
        # Inline words suit answers that differ here and there; answers that really differ
        # read better as two columns, line against line.
        layout = st.radio(
            "Show",
            ("Words", "Side by side"),
            horizontal=True,
            key="pg_diff_view",
            label_visibility="collapsed",
        )
        if layout == "Side by side":
            st.html(playground.side_by_side_html(texts[first], texts[second]))
            st.caption(
                f"left: {playground.md_line(shown(first))} · right: {playground.md_line(shown(second))} · "
                "changed lines tinted, their differing words marked"
            )
        else:
            st.html(playground.diff_html(texts[first], texts[second]))
            st.caption(
                f"red: only in {playground.md_line(shown(first))} · green: only in {playground.md_line(shown(second))}"
            )
    if not view.blind:
        return
    if hidden:
        _ballot(view.run_id, names, labels, controls)
    elif cast is not None:
        if cast.winner is None:
            st.success(
                "Vote recorded: no answer better than the others (a tie for every pair). Names are shown above."
            )
        else:
            st.success(
                f"Vote recorded: **{labels.get(cast.winner, 'the answer')}** is best, written by "
                f"**{playground.md_line(cast.winner)}**. Names are shown above; the tally below counts it."
            )
        if controls.may_undo:
            st.button(
                "Undo vote",
                key="pg_undo_vote",
                icon=":material/undo:",
                on_click=controls.on_undo,
                args=(view.run_id,),
                help="Takes your vote out of the tally. The names stay shown to you, so you take "
                "no new vote on this exchange. Possible until the next vote on this server.",
            )
    else:
        st.info(
            "The engines were revealed without a vote (or the vote was undone): this exchange takes no vote."
        )
    # The room's tally: to the presenter (an operator) at any time, to others once they voted.
    line = playground.live_tally_line(view.run_id) if controls.may_reveal or not hidden else None
    if line is not None:
        st.caption(line)
    if controls.may_reveal and not hidden and not view.revealed:
        st.button(
            "Reveal to everyone",
            key="pg_reveal_all",
            icon=":material/visibility:",
            on_click=controls.on_reveal,
            args=(view.run_id,),
            help="Ends the vote: shows the names on every screen, the Runs page and exports.",
        )


def _ballot(run_id: int, names: list[str], labels: dict[str, str], controls: VoteControls) -> None:
    """The vote buttons; a pick counts only once confirmed (the names show at once after)."""
    picked = controls.picked
    if picked is None:
        st.markdown("**Which answer is best?**")
        st.caption(playground.VOTER_WORDS)
        buttons = st.columns(len(names) + 1)
        for pane, name in zip(buttons, names, strict=False):
            pane.button(
                labels[name],
                key=f"pg_vote_{labels[name][-1]}",
                on_click=controls.on_pick,
                args=(run_id, name),
            )
        buttons[-1].button(
            "No clear winner", key="pg_vote_tie", on_click=controls.on_pick, args=(run_id, "tie")
        )
        st.caption("Names and timings appear once you vote.")
    else:
        choice = (
            "no clear winner (a tie)"
            if picked == "tie"
            else f"**{labels.get(picked, picked)}** as the best answer"
        )
        st.warning(
            f"Vote for {choice}? The names show once you confirm, and the vote counts in the tally."
        )
        yes, no, _ = st.columns([1, 1, 4])
        yes.button(
            "Confirm vote",
            key="pg_confirm_vote",
            type="primary",
            on_click=controls.on_vote,
            args=(run_id, picked),
        )
        no.button("Cancel", key="pg_cancel_vote", on_click=controls.on_pick, args=(run_id, None))
    if controls.may_reveal:
        st.button(
            "Reveal engines",
            key="pg_reveal",
            icon=":material/visibility:",
            on_click=controls.on_reveal,
            args=(run_id,),
            help="An operator's call: shows the names to everyone without a vote; this exchange then takes no vote.",
        )


def earlier_turns(conversation_id: str, turn: int, participant: str) -> None:
    with st.expander(f"Conversation so far ({turn - 1} earlier turn(s))"):
        for earlier in playground.conversation(conversation_id)[:-1]:
            st.markdown(f"**Turn {earlier.turn}:** {playground.md_line(earlier.prompt)}")
            for who, answer in playground.turn_answers(earlier, participant):
                st.caption(f"{playground.md_line(who)}: {playground.md_line(answer[:300])}")


def recent(
    busy: bool,
    participant: str,
    on_open: Callable[[int], None],
    on_send_again: Callable[[int], None],
) -> None:
    """The last ten exchanges, each with Open and Send again (a blind one still hidden from
    this participant without its engines)."""
    items = playground.history(10, participant)
    if not items:
        st.caption("Nothing sent yet.")
    for item in items:
        row_left, row_open, row_again = st.columns([6, 1, 1.3], vertical_alignment="center")
        stamp = item.created_at.strftime("%Y-%m-%d %H:%M") if item.created_at else ""
        engines = playground.HIDDEN_ENGINES if item.engines_hidden else ", ".join(item.engines)
        row_left.markdown(
            f"\\#{item.run_id} · {stamp} · turn {item.turn} · {playground.md_line(item.status)} · "
            f"{playground.md_line(engines)}  \n{playground.md_line(item.prompt[:120])}"
        )
        row_open.button(
            "Open", key=f"pg_open_{item.run_id}", on_click=on_open, args=(item.run_id,), disabled=busy
        )
        row_again.button(
            "Send again",
            key=f"pg_again_{item.run_id}",
            on_click=on_send_again,
            args=(item.run_id,),
            disabled=busy,
        )
