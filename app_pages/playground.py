"""Playground: one prompt to 2-6 engines side by side, streamed and measured live.

The page only reads widgets and calls services.playground; the streams run in a background
worker that stores partial answers, and the answer panel (a fragment) polls them while a send
is active. The exchange on screen has an address, /playground?exchange=<run id>, so a reload
shows it again. Everything untrusted (answers, errors, names) goes through
services.playground_text before Streamlit renders it as markdown.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from app_pages import common
from services import endpoints, playground
from services import playground_text as ptext
from services.engines import SamplingParams
from services.errors import ShootoutError
from services.playground import Column, EngineChoice, ExchangeView, SendRequest

LIVE_INTERVAL_S = 0.5
DEFAULT_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
    },
    indent=2,
)
LABELS = "ABCDEF"
#: The query parameter that gives the exchange on screen an address of its own (a reload while
#: it streams, or a shared link, shows it again).
ADDRESS = "exchange"

state = st.session_state
state.setdefault("pg_run_id", None)
state.setdefault("pg_conversation_id", None)
state.setdefault("pg_error", None)


def _optional_int(key: str) -> int | None:
    value = state.get(key)
    return None if value in (None, 0) else int(value)


def _extra_body(engine: str) -> dict[str, Any] | None:
    text = (state.get(f"pg_extra_{engine}") or "").strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ShootoutError(f"extra_body of {engine} is not JSON: {error.msg}.") from None
    if not isinstance(value, dict):
        raise ShootoutError(f"extra_body of {engine} must be a JSON object.")
    return value


def _sampling_params() -> SamplingParams:
    stop = tuple(s for s in (part.strip() for part in (state.get("pg_stop_text") or "").split(",")) if s)
    return SamplingParams(
        temperature=state.get("pg_temperature"),
        top_p=state.get("pg_top_p"),
        max_tokens=_optional_int("pg_max_tokens"),
        seed=state.get("pg_seed"),
        stop=stop,
        n=int(state.get("pg_n") or 1),
        top_k=_optional_int("pg_top_k"),
        min_tokens=_optional_int("pg_min_tokens"),
        ignore_eos=bool(state.get("pg_ignore_eos")),
    )


def _build_request() -> SendRequest:
    schema = playground.parse_schema(state.get("pg_schema") or "") if state.get("pg_schema_on") else None
    engines = tuple(
        EngineChoice(name, (state.get(f"pg_model_{name}") or "").strip() or None, _extra_body(name))
        for name in state.get("pg_engines") or []
    )
    return SendRequest(
        engines=engines,
        prompt=state.get("pg_prompt") or "",
        system=state.get("pg_system") or "",
        params=_sampling_params(),
        schema=schema,
        conversation_id=state.get("pg_conversation_id"),
    )


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
        handle = playground.send(_build_request(), common.viewer())
    except ShootoutError as error:
        state.pg_error = str(error)
        return
    _on_screen(handle.run_id, handle.conversation_id)
    state.pg_prompt = ""


def on_stop() -> None:
    if state.pg_run_id is not None:
        playground.stop(state.pg_run_id)


def on_new_conversation() -> None:
    _on_screen(None, None)
    state.pg_error = None


def _fill_form(request: SendRequest) -> None:
    state.pg_engines = [c.engine for c in request.engines]
    state.pg_prompt = request.prompt
    state.pg_system = request.system
    p = request.params
    state.pg_temperature, state.pg_top_p, state.pg_max_tokens, state.pg_seed = (
        p.temperature,
        p.top_p,
        p.max_tokens,
        p.seed,
    )
    state.pg_stop_text = ", ".join(p.stop)
    state.pg_n, state.pg_top_k, state.pg_min_tokens, state.pg_ignore_eos = (
        p.n,
        p.top_k,
        p.min_tokens,
        p.ignore_eos,
    )
    state.pg_schema_on = request.schema is not None
    if request.schema is not None:
        state.pg_schema = json.dumps(request.schema, indent=2)
    for choice in request.engines:
        state[f"pg_model_{choice.engine}"] = choice.model or ""
        state[f"pg_extra_{choice.engine}"] = json.dumps(choice.extra_body) if choice.extra_body else ""


def _show(run_id: int) -> None:
    """Put a stored exchange on screen, its settings in the form (the next prompt continues it)."""
    view = playground.get_exchange(run_id)
    request = playground.reopen(run_id)
    known = {e.name for e in endpoints.list_engines()}
    _fill_form(
        SendRequest(
            engines=tuple(c for c in request.engines if c.engine in known),
            prompt="",
            system=request.system,
            params=request.params,
            schema=request.schema,
        )
    )
    _on_screen(run_id, view.conversation_id)


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
        handle = playground.resend(run_id)
    except ShootoutError as error:
        state.pg_error = str(error)
        return
    _on_screen(handle.run_id, handle.conversation_id)


def on_vote(run_id: int, winner: str) -> None:
    try:
        playground.vote_best(run_id, winner)
    except ShootoutError as error:
        state.pg_error = str(error)


# ---------------------------------------------------------------------------------------- page

st.title("Playground")
st.caption(
    "One prompt to several engines at once: answers stream side by side, each with its own "
    "live measurements from the engine's own usage. Every exchange is stored (Runs page)."
)

try:
    engines = endpoints.list_engines()
    _follow_address()
    current = playground.get_exchange(state.pg_run_id) if state.pg_run_id is not None else None
except ShootoutError as error:
    st.error(ptext.md_text(str(error)))
    st.stop()

busy = bool(current and current.active)
engine_names = [e.name for e in engines]
if len(engines) < 2:
    st.info(
        "Register at least two engines to compare them: the Engines page, or `python cli.py local up` "
        "for the three local engines (llama.cpp twice and vLLM on CPU)."
    )
    st.stop()

state.setdefault("pg_engines", engine_names[:3])
state.pg_engines = [name for name in state.pg_engines if name in engine_names]

# Defaults live in session state (not in value=) so reopening an exchange can refill the form.
for key, default in (("pg_temperature", 0.7), ("pg_max_tokens", 256), ("pg_n", 1)):
    state.setdefault(key, default)

with st.container(border=True):
    st.multiselect(
        "Engines (2 to 6)",
        engine_names,
        key="pg_engines",
        max_selections=6,
        disabled=busy,
        help="Each column is one engine; the model is the engine's own unless set below.",
    )
    # A fixed label and a key: a label that changes with the values makes a new expander on
    # every change, which collapses under the user's hands; the values go in the caption.
    with st.expander("Parameters", key="pg_params_open", on_change="rerun"):
        st.text_area("System prompt", key="pg_system", height=68, disabled=busy, placeholder="optional")
        c1, c2, c3, c4, c5 = st.columns(5)
        c1.number_input(
            "Temperature",
            0.0,
            2.0,
            value=None,
            step=0.1,
            key="pg_temperature",
            disabled=busy,
            placeholder="engine default",
        )
        c2.number_input(
            "top_p",
            0.01,
            1.0,
            value=None,
            step=0.05,
            key="pg_top_p",
            disabled=busy,
            placeholder="engine default",
        )
        c3.number_input(
            "Max tokens",
            1,
            32768,
            value=None,
            key="pg_max_tokens",
            disabled=busy,
            placeholder="engine default",
        )
        c4.number_input(
            "Seed", 0, 2**31 - 1, value=None, key="pg_seed", disabled=busy, placeholder="none"
        )
        c5.text_input("Stop (comma-separated)", key="pg_stop_text", disabled=busy)
        e1, e2, e3, e4 = st.columns(4)
        e1.number_input(
            "n (parallel samples)", 1, 8, value=None, key="pg_n", disabled=busy, placeholder="1"
        )
        e2.number_input(
            "top_k (extra)",
            0,
            1000,
            value=None,
            key="pg_top_k",
            disabled=busy,
            placeholder="off",
            help="Sent through extra_body to the engines that take it; the column says where it is ignored.",
        )
        e3.number_input(
            "min_tokens (extra)",
            0,
            32768,
            value=None,
            key="pg_min_tokens",
            disabled=busy,
            placeholder="off",
        )
        e4.checkbox("ignore_eos (extra)", key="pg_ignore_eos", disabled=busy)
        st.markdown("Per-engine model and `extra_body`")
        for name in state.pg_engines:
            left, right = st.columns(2)
            record = next(e for e in engines if e.name == name)
            left.text_input(
                f"Model for {ptext.md_line(name)}",
                key=f"pg_model_{name}",
                disabled=busy,
                placeholder=record.model or "the engine's model",
            )
            right.text_input(
                f"extra_body for {ptext.md_line(name)} (JSON)",
                key=f"pg_extra_{name}",
                disabled=busy,
                placeholder='{"repetition_penalty": 1.1}',
            )
        st.toggle(
            "Structured output (JSON schema)",
            key="pg_schema_on",
            disabled=busy,
            help="Sends response_format json_schema (each engine's adapter adapts it) and validates every answer.",
        )
        if state.get("pg_schema_on"):
            state.setdefault("pg_schema", DEFAULT_SCHEMA)
            st.text_area("JSON schema", key="pg_schema", height=150, disabled=busy)
    st.caption(
        ptext.md_line(
            ptext.params_summary(
                _sampling_params(), state.get("pg_system") or "", bool(state.get("pg_schema_on"))
            )
        )
    )
    turn_word = "Next prompt (continues the conversation)" if state.pg_conversation_id else "Prompt"
    st.text_area(
        turn_word,
        key="pg_prompt",
        height=80,
        disabled=busy,
        placeholder="Ask something; the next prompt continues the conversation with each engine's own answers.",
    )
    b1, b2, b3, _ = st.columns([1, 1, 1.4, 3])
    b1.button(
        "Send", key="pg_send", type="primary", icon=":material/send:", on_click=on_send, disabled=busy
    )
    b2.button("Stop all", key="pg_stop", icon=":material/stop:", on_click=on_stop, disabled=not busy)
    b3.button(
        "New conversation",
        key="pg_new",
        icon=":material/add_comment:",
        on_click=on_new_conversation,
        disabled=busy,
    )

if state.pg_error:
    st.error(ptext.md_text(state.pg_error))

if state.pg_conversation_id and current is not None and current.turn > 1:
    with st.expander(f"Conversation so far ({current.turn - 1} earlier turn(s))"):
        for turn in playground.conversation(state.pg_conversation_id)[:-1]:
            st.markdown(f"**Turn {turn.turn}:** {ptext.md_line(turn.prompt)}")
            for engine, answer in turn.answers.items():
                st.caption(f"{ptext.md_line(engine)}: {ptext.md_line(answer[:300])}")

blind = st.toggle("Blind mode: hide which engine wrote what until you vote", key="pg_blind")


def _arrangement(
    view: ExchangeView,
) -> tuple[list[Column], dict[str, str], bool, playground.BlindVote | None]:
    """(columns in screen order, engine -> "Answer X", names hidden?, the vote cast)."""
    cast = playground.blind_vote(view.run_id) if blind else None
    engines = [c.engine for c in view.columns]
    order = playground.blind_order(view.run_id, engines) if blind else engines
    columns = sorted(view.columns, key=lambda c: order.index(c.engine))
    labels = {c.engine: f"Answer {LABELS[i]}" for i, c in enumerate(columns)}
    return columns, labels, blind and cast is None, cast


def _column_title(column: Column, label: str, hidden: bool) -> str:
    if hidden:
        return f"**{label}**"
    model = f" · {ptext.code_span(column.model)}" if column.model else ""
    return f"**{ptext.md_line(column.engine)}**{model}"


def _render_column(
    view: ExchangeView, column: Column, label: str, hidden: bool, units: tuple[str, str]
) -> None:
    st.markdown(_column_title(column, label, hidden))
    status_words = {
        "streaming": ":blue[streaming…]",
        "finished": ":green[finished]",
        "failed": ":red[failed]",
        "cancelled": ":orange[stopped]",
        "interrupted": ":orange[interrupted]",
    }
    st.caption(status_words.get(column.status, ptext.md_line(column.status)))
    if not hidden:
        if blind:
            st.caption(f"{label} in the blind vote")
        ttft, itl = units
        # A compact table: st.metric's large figures do not fit six narrow columns.
        st.markdown(
            "| TTFT | ITL mean / p90 | tokens/s |\n|---|---|---|\n"
            f"| **{ptext.duration(column.ttft_s, ttft)}** | {ptext.duration(column.itl_mean_s, itl)} / "
            f"{ptext.duration(column.itl_p90_s, itl)} | {ptext.number(column.tokens_per_s)} |"
        )
        cached = (
            ptext.number(column.cached_tokens) if column.cached_tokens is not None else "not reported"
        )
        st.caption(
            f"prompt {ptext.number(column.prompt_tokens)} · completion {ptext.number(column.completion_tokens)}"
            f" · cached {cached} · finish {ptext.md_line(column.finish_reason) or '–'}"
        )
        if view.turn > 1 and column.first_turn_ttft_s is not None:
            st.caption(
                f"Prefix cache, turn {view.turn} vs turn 1: TTFT {ptext.duration(column.ttft_s, ttft)} vs "
                f"{ptext.duration(column.first_turn_ttft_s, ttft)}, cached tokens "
                f"{ptext.number(column.cached_tokens)} vs {ptext.number(column.first_turn_cached_tokens)}"
            )
    for note in column.notes:
        st.caption(f":material/info: {ptext.md_line(note)}")
    # Answers keep their markdown, but safe_answer leaves no image to load.
    if column.choices:
        tabs = st.tabs([f"choice {i}" for i in range(len(column.choices))])
        for tab, text in zip(tabs, column.choices, strict=True):
            tab.markdown(ptext.safe_answer(text) or "…")
    else:
        st.markdown(
            ptext.safe_answer(column.answer) or ("…" if column.status == "streaming" else "_no text_")
        )
    if column.error and column.status != "cancelled":
        st.error(ptext.md_text(column.error))
    if column.schema_check is not None:
        if column.schema_check.valid:
            st.success("Valid against the schema.")
        else:
            st.error(
                f"Invalid at {ptext.md_line(column.schema_check.path)}: "
                f"{ptext.md_line(column.schema_check.message)}"
            )
    if not hidden and not view.active:
        with st.expander("Copy as code"):
            curl, python = playground.request_code(view.run_id, column.engine)
            st.code(curl, language="bash")
            st.code(python, language="python")


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
        st.error(ptext.md_text(str(error)))
        return
    if busy and not view.active:
        st.rerun()  # streams done: rerun the page once so the inputs, diff and votes come back
    columns, labels, hidden, _ = _arrangement(view)
    st.markdown(f"**Turn {view.turn}:** {ptext.md_text(view.prompt)}")
    if not hidden and view.first_token_engine:
        fastest = (
            f" · fastest decode: **{ptext.md_line(view.fastest_engine)}**" if view.fastest_engine else ""
        )
        st.markdown(f"First token: **{ptext.md_line(view.first_token_engine)}**{fastest}")
    # One unit per quantity across the columns (and turn 1), so they compare at a glance.
    units = (
        ptext.duration_unit([v for c in columns for v in (c.ttft_s, c.first_turn_ttft_s)]),
        ptext.duration_unit([v for c in columns for v in (c.itl_mean_s, c.itl_p90_s)]),
    )
    panes = st.columns(len(columns), border=True)
    for pane, column in zip(panes, columns, strict=True):
        with pane:
            _render_column(view, column, labels[column.engine], hidden, units)


def _compare(view: ExchangeView) -> None:
    columns, labels, hidden, cast = _arrangement(view)
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
        st.html(ptext.diff_html(texts[first], texts[second]))
        st.caption(
            f"red: only in {ptext.md_line(shown(first))} · green: only in {ptext.md_line(shown(second))}"
        )
    if not blind:
        return
    if cast is None:
        st.markdown("**Which answer is best?**")
        buttons = st.columns(len(columns) + 1)
        for pane, name in zip(buttons, names, strict=False):
            pane.button(
                labels[name],
                key=f"pg_vote_{labels[name][-1]}",
                on_click=on_vote,
                args=(view.run_id, name),
            )
        buttons[-1].button(
            "No clear winner", key="pg_vote_tie", on_click=on_vote, args=(view.run_id, "tie")
        )
        st.caption("Names and timings appear once you vote.")
    elif cast.winner is None:
        st.success(
            "Vote recorded: no answer better than the others (a tie for every pair). Names are shown above."
        )
    else:
        st.success(
            f"Vote recorded: **{labels.get(cast.winner, 'the answer')}** is best, written by "
            f"**{ptext.md_line(cast.winner)}**. Names are shown above; the tally below counts it."
        )


answers_panel()
if current is not None and not busy:
    _compare(current)

tally = playground.tally()
if tally:
    with st.expander("Blind votes per engine pair"):
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "engine A": t.engine_a,
                        "engine B": t.engine_b,
                        "A wins": t.wins_a,
                        "B wins": t.wins_b,
                        "ties": t.ties,
                    }
                    for t in tally
                ]
            ),
            hide_index=True,
        )

with st.expander("Recent exchanges"):
    items = playground.history(10)
    if not items:
        st.caption("Nothing sent yet.")
    for item in items:
        row_left, row_open, row_again = st.columns([6, 1, 1.3], vertical_alignment="center")
        stamp = item.created_at.strftime("%Y-%m-%d %H:%M") if item.created_at else ""
        row_left.markdown(
            f"\\#{item.run_id} · {stamp} · turn {item.turn} · {ptext.md_line(item.status)} · "
            f"{ptext.md_line(', '.join(item.engines))}  \n{ptext.md_line(item.prompt[:120])}"
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
