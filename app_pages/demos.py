"""Demos page: one mechanism of LLM serving per scenario, shown live on the engines the
presenter picks, with a conclusion written from the measured numbers. Stored demos replay
from the database, without their engines. What a demo shows (engine names, what engines
report, errors) is untrusted: it reaches markdown and HTML only through services.core.safe_text."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from app_pages.common import refresh_interval
from app_pages.parts import demos_view
from services.core.errors import ShootoutError
from services.core.safe_text import html_text, md_text
from services.demos import view as demos

# Larger reading text for a projector; colours come from the theme (dark or light).
st.markdown(
    """<style>
.demo-explanation{font-size:1.3rem;line-height:1.55;max-width:70rem}
.demo-finding{font-size:1.25rem;line-height:1.5}
.demo-headline{font-size:1.7rem;font-weight:600;line-height:1.35;margin:0.2rem 0 0.6rem}
.demo-lines li{font-size:1.2rem;line-height:1.5;margin-bottom:0.35rem}
[data-testid="stMetricValue"]{font-size:2.6rem}
</style>""",
    unsafe_allow_html=True,
)

st.title("Demos")

catalog = {s.name: s for s in demos.scenarios()}
try:
    registered = {e.name: e for e in demos.list_engines()}
    stored = demos.list_demos()
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()

# The demo on screen: ?run=ID (survives a reload and can be shared), else the one started here.
query_run = common.address_run_id()
if query_run is not None:
    st.session_state["demo_run_id"] = query_run


def show_run(run_id: int) -> None:
    st.session_state["demo_run_id"] = run_id
    st.query_params["run"] = str(run_id)
    st.rerun()  # draw it at the top of the page


def setup_section() -> None:
    """Pick a scenario and engines and start it, or pick a stored demo to replay."""
    setup, replay = st.tabs(["Run a scenario", "Replay a stored demo"])

    with setup:
        name = st.selectbox(
            "Scenario", list(catalog), format_func=lambda n: catalog[n].title, key="demo_scenario"
        )
        scenario = catalog[name]
        st.caption(f"{scenario.mechanism} · {scenario.duration_hint}")
        st.markdown(
            f'<div class="demo-explanation">{html_text(scenario.explanation)}</div>',
            unsafe_allow_html=True,
        )
        if not registered:
            st.info(
                "No engines registered yet: add some on the Engines page (the local engines register themselves "
                "when started there or with `shootout local up`)."
            )
        else:
            defaults = [n for n in scenario.default_engines if n in registered] or list(registered)[:3]
            # A demo runs for minutes on shared engines: only the button starts one, not Enter.
            with st.form(f"demo_form_{name}", enter_to_submit=False):
                chosen = st.multiselect(
                    "Engines",
                    list(registered),
                    default=defaults,
                    key=f"demo_engines_{name}",
                    help="Each step runs them one after another, so they never share the machine.",
                )
                pause = st.toggle(
                    "Pause between steps (the presenter moves on with “Next step”)",
                    key=f"demo_pause_{name}",
                )
                with st.expander("Settings"):
                    settings = demos_view.settings(scenario, name)
                start = st.form_submit_button(
                    "Run the demo", type="primary", icon=":material/play_arrow:"
                )
            if start:
                try:
                    show_run(
                        demos.start_demo(
                            name,
                            chosen,
                            options=settings,
                            pause_between_steps=pause,
                            viewer=common.viewer(),
                        )
                    )
                except ShootoutError as error:
                    st.error(md_text(str(error)))

    with replay:
        if not stored:
            st.info(
                "No stored demos yet. Every demo that runs is stored, and replays here without its engines."
            )
        else:
            by_id = {item.run_id: item for item in stored}
            picked = st.selectbox(
                "Stored demo", list(by_id), format_func=lambda i: by_id[i].label, key="demo_replay_pick"
            )
            if st.button("Show it", key="demo_replay_show", icon=":material/history:"):
                show_run(int(picked))


run_id = st.session_state.get("demo_run_id")
if run_id is None:
    setup_section()
    st.stop()

try:
    first_view = demos.demo_view(int(run_id))
except ShootoutError as error:
    st.error(md_text(str(error)))
    setup_section()
    st.stop()


@st.fragment(run_every=refresh_interval(1.0) if first_view.live else None)
def live_demo() -> None:
    try:
        view = demos.demo_view(int(run_id))
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    demos_view.demo(view, may_steer=demos.may_control_run(view.run_id, common.viewer()))
    if first_view.live and not view.live:
        st.rerun()  # the demo ended: redraw once without the timed refresh


live_demo()
st.divider()
st.subheader("Another demo")
setup_section()
