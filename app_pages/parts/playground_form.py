"""The Playground's form: engines, parameters, prompt and the send buttons. Every widget keeps
its value in session state under its ``pg_*`` key, which services.playground.view reads."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from services.playground import view as playground

state = st.session_state


def set_defaults(engine_names: list[str], room: playground.WaitingRoom | None = None) -> None:
    """The engines every comparing page starts with (among those that answer, given the
    waiting room), and the sampling defaults. Defaults live in session state (not in value=)
    so reopening an exchange can refill the form."""
    if "pg_engines" not in state:
        state.pg_engines = playground.default_engines(room)
    state.pg_engines = [name for name in state.pg_engines if name in engine_names]
    for key, default in (("pg_temperature", 0.7), ("pg_max_tokens", 256), ("pg_n", 1)):
        state.setdefault(key, default)


def engines_and_parameters(engines: list[playground.EngineRecord], busy: bool) -> None:
    """The engine picker, then the collapsed Parameters expander: sampling, per-engine model
    and extra_body, schema."""
    st.multiselect(
        "Engines (2 to 6)",
        [e.name for e in engines],
        key="pg_engines",
        max_selections=6,
        disabled=busy,
        help="Each column is one engine; the model is the engine's own unless set below.",
    )
    shared = playground.shared_cores_note(st.session_state.get("pg_engines") or [])
    if shared:
        st.caption(f":material/memory: {shared}")
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
                f"Model for {playground.md_line(name)}",
                key=f"pg_model_{name}",
                disabled=busy,
                placeholder=record.model or "the engine's model",
            )
            right.text_input(
                f"extra_body for {playground.md_line(name)} (JSON)",
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
            state.setdefault("pg_schema", playground.DEFAULT_SCHEMA)
            st.text_area("JSON schema", key="pg_schema", height=150, disabled=busy)


def prompt_and_buttons(
    busy: bool,
    continuing: bool,
    on_send: Callable[[], None],
    on_stop: Callable[[], None] | None,
    on_new: Callable[[], None],
) -> None:
    """The one-line summary of the parameters, the prompt, and Send / Stop all / New conversation
    (no Stop all where `on_stop` is None: the exchange on screen is someone else's)."""
    st.caption(
        playground.md_line(
            playground.params_summary(
                playground.sampling_params(state),
                state.get("pg_system") or "",
                bool(state.get("pg_schema_on")),
            )
        )
    )
    turn_word = "Next prompt (continues the conversation)" if continuing else "Prompt"
    st.text_area(
        turn_word,
        key="pg_prompt",
        height=80,
        disabled=busy,
        placeholder="Ask something; the next prompt continues the conversation with each engine's own answers.",
    )
    st.toggle(
        "Blind mode: hide which engine wrote what until a vote",
        key="pg_blind",
        disabled=busy,
        help="Stored with the exchange: its address shows it blind to everyone until someone votes "
        "(or an operator reveals the engines).",
    )
    b1, b2, b3, _ = st.columns([1, 1, 1.4, 3])
    b1.button(
        "Send", key="pg_send", type="primary", icon=":material/send:", on_click=on_send, disabled=busy
    )
    if on_stop is not None:
        b2.button("Stop all", key="pg_stop", icon=":material/stop:", on_click=on_stop, disabled=not busy)
    b3.button(
        "New conversation",
        key="pg_new",
        icon=":material/add_comment:",
        on_click=on_new,
        disabled=busy,
    )


def waiting_room(room: playground.WaitingRoom) -> None:
    """What the first minutes look like: the engines that answer, and each local engine still
    on its way with its phase and estimate (issue 58)."""
    st.info(
        f"Waiting for a second engine: {len(room.ready)} of the 2 a comparison needs answer now. "
        "The first two that answer are picked for you here, no reload needed."
    )
    lines = [_arrival_line(a) for a in (*room.coming, *room.failed)]
    if room.ready:
        lines.insert(0, f"- answering: {', '.join(f'`{name}`' for name in room.ready)}")
    st.markdown("\n".join(lines))
    st.caption("Each install's whole log and a Retry: the Engines page (Local engines).")


def failed_engines(room: playground.WaitingRoom) -> None:
    """The local engines that did not come, each with its reason."""
    st.markdown("\n".join(_arrival_line(a) for a in room.failed))
    st.caption("Each install's whole log and a Retry: the Engines page (Local engines).")


def _arrival_line(arrival: playground.Arrival) -> str:
    label = playground.md_line(arrival.label)
    return f"- **{label}** (`{arrival.engine_id}`): {playground.md_line(arrival.detail)}"
