"""The Parity page's setup: the new-run form (handed to services.parity.view as a ParityForm)
and the picker of stored runs."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from services.core.errors import ShootoutError
from services.core.safe_text import md_text
from services.parity import view as page


def show_run(run_id: int) -> None:
    st.session_state["parity_run_id"] = run_id
    st.query_params["run"] = str(run_id)
    st.rerun()


def setup_section(registered: list[str], default: list[str], stored: list[page.ParityListItem]) -> None:
    """Start a new run from the form (`default`: the engines it starts with, the reference
    first), or open a stored one."""
    start_tab, stored_tab = st.tabs(["New parity run", "Stored runs"])
    with start_tab:
        if len(registered) < 1:
            st.info(
                "No engines registered yet: add some on the Engines page (the local engines register themselves "
                "when started there or with `shootout local up`)."
            )
        else:
            # Enter in a field must not start a run (it did, twice): only the button starts one.
            with st.form("parity_form", enter_to_submit=False):
                chosen = st.multiselect(
                    "Engines",
                    registered,
                    default=default,
                    key="parity_engines",
                    help="2 to 6. They answer one after another, so they never share the machine.",
                )
                itself = st.toggle(
                    "Also compare the reference with itself (is it deterministic?)", key="parity_itself"
                )
                reference = st.selectbox(
                    "Reference",
                    registered,
                    index=registered.index(default[0]) if default else 0,
                    key="parity_reference",
                    help="The engine every other one is compared with.",
                )
                source = st.radio("Prompts", page.SOURCES, horizontal=True, key="parity_source")
                left, middle, right, last = st.columns(4)
                count = left.number_input(
                    "Task-set prompts", 1, page.TASK_SET_SIZE, 20, key="parity_count"
                )
                max_tokens = middle.number_input(
                    "Max tokens", 1, 4096, page.DEFAULT_MAX_TOKENS, key="parity_max_tokens"
                )
                seed = right.number_input("Seed", 0, 2**31 - 1, 0, key="parity_seed")
                top = last.number_input(
                    "top_logprobs",
                    0,
                    page.MAX_TOP_LOGPROBS,
                    page.DEFAULT_TOP_LOGPROBS,
                    key="parity_top",
                )
                upload = st.file_uploader(
                    'JSONL prompts ({"prompt": ...} or {"messages": [...]}, optional '
                    '"expected" and "check")',
                    type=["jsonl", "json", "txt"],
                    key="parity_upload",
                )
                start = st.form_submit_button("Run parity", type="primary", icon=":material/play_arrow:")
            if start:
                form = page.ParityForm(
                    engines=list(chosen),
                    reference=reference or "",
                    compare_with_itself=itself,
                    source=source,
                    count=int(count),
                    max_tokens=int(max_tokens),
                    seed=int(seed),
                    top_logprobs=int(top),
                    upload=(upload.name, upload.getvalue()) if upload is not None else None,
                )
                try:
                    show_run(page.start_from_form(form, common.viewer()))
                except ShootoutError as error:
                    st.error(md_text(str(error)))
    with stored_tab:
        if not stored:
            st.info("No parity runs yet. Every run is stored, and shows on the Runs page too.")
        else:
            by_id = {item.run_id: item for item in stored}
            picked = st.selectbox(
                "Stored run", list(by_id), format_func=lambda i: by_id[i].label, key="parity_pick"
            )
            if st.button("Show it", key="parity_show", icon=":material/history:"):
                show_run(int(picked))
