"""Demos page: one mechanism of LLM serving per scenario, shown live on the engines the
presenter picks, with a conclusion written from the measured numbers. Stored demos replay
from the database, without their engines. What a demo shows (engine names, what engines
report, errors) is untrusted: it reaches markdown and HTML only through services.safe_text."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from app_pages.common import refresh_interval
from services import endpoints
from services.demos import runner, scenarios
from services.demos.charts import step_figure
from services.demos.report import export_demo_html
from services.errors import ShootoutError
from services.figures import inert
from services.safe_text import html_text, md_line, md_text

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

catalog = {s.name: s for s in scenarios()}
try:
    registered = {e.name: e for e in endpoints.list_engines()}
    stored = runner.list_demos()
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()

# The demo on screen: ?run=ID (survives a reload and can be shared), else the one started here.
query_run = st.query_params.get("run")
if query_run and query_run.isdigit():
    st.session_state["demo_run_id"] = int(query_run)


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
                "when started there or with `python cli.py local up`)."
            )
        else:
            defaults = [n for n in scenario.default_engines if n in registered] or list(registered)[:3]
            with st.form(f"demo_form_{name}"):
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
                settings: dict[str, object] = {}
                with st.expander("Settings"):
                    for option in scenario.options:
                        key = f"demo_opt_{name}_{option.key}"
                        if option.kind == "int":
                            settings[option.key] = st.number_input(
                                option.label,
                                value=int(option.default),
                                step=1,
                                help=option.help or None,
                                key=key,
                            )
                        elif option.kind == "float":
                            settings[option.key] = st.number_input(
                                option.label,
                                value=float(option.default),
                                help=option.help or None,
                                key=key,
                            )
                        elif option.kind == "int_list":
                            settings[option.key] = st.text_input(
                                option.label,
                                ", ".join(str(v) for v in option.default),
                                help=option.help or None,
                                key=key,
                            )
                        else:
                            settings[option.key] = st.text_input(
                                option.label, str(option.default), help=option.help or None, key=key
                            )
                start = st.form_submit_button(
                    "Run the demo", type="primary", icon=":material/play_arrow:"
                )
            if start:
                try:
                    show_run(
                        runner.start_demo(
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
    first_view = runner.demo_view(int(run_id))
except ShootoutError as error:
    st.error(md_text(str(error)))
    setup_section()
    st.stop()


def render_step(step: runner.StepView) -> None:
    marker = {
        "running": " · measuring…",
        "pending": " · next",
        "failed": " · failed",
        "skipped": " · skipped",
        "cancelled": " · stopped",
    }
    st.subheader(f"{step.index + 1}. {md_line(step.title)}{marker.get(step.status, '')}")
    st.caption(md_text(step.explanation))
    if step.numbers:
        per_row = min(4, len(step.numbers))
        for start_at in range(0, len(step.numbers), per_row):
            columns = st.columns(per_row)
            for column, number in zip(columns, step.numbers[start_at : start_at + per_row]):
                unchanged = number.delta is None or number.delta.lstrip("+-") in ("0%", "×1.0")
                column.metric(
                    md_line(number.label),
                    md_line(number.text),
                    number.delta,
                    border=True,
                    help=md_text(number.help) if number.help else None,
                    delta_color="off" if unchanged else number.delta_color,
                )
    figure = step_figure(step)
    if figure is not None:
        st.plotly_chart(
            inert(figure),
            theme="streamlit",
            width="stretch",
            key=f"demo_chart_{step.index}_{step.status}",
        )
    if step.finding:
        st.markdown(f'<div class="demo-finding">{html_text(step.finding)}</div>', unsafe_allow_html=True)
    for error in step.errors:
        st.warning(md_text(error), icon=":material/warning:")


def render(view: runner.DemoView) -> None:
    status_text = {
        "pending": "starting",
        "running": "running",
        "finished": "finished",
        "finished_with_errors": "finished with errors",
        "failed": "failed",
        "cancelled": "stopped",
        "interrupted": "interrupted",
    }
    st.header(md_line(view.title))
    if view.explanation:
        st.markdown(
            f'<div class="demo-explanation">{html_text(view.explanation)}</div>', unsafe_allow_html=True
        )
    st.caption(
        f"{md_line(view.mechanism)} · demo #{view.run_id} · {md_line(status_text.get(view.status, view.status))} · "
        f"engines: {md_line(', '.join(view.engines))}"
        f" · {view.request_count} requests stored"
    )
    if view.live:
        st.progress(
            min(1.0, view.progress),
            text=f"Step {min(len(view.steps), int(view.progress * len(view.steps)) + 1)}"
            f" of {len(view.steps) or '…'}",
        )
        controls = st.container(horizontal=True, vertical_alignment="center")
        if view.awaiting is not None:
            if controls.button(
                "Next step",
                type="primary",
                key="demo_next",
                icon=":material/skip_next:",
                help=f"Next: {md_line(view.next_step_title)}",
            ):
                runner.advance(view.run_id)
                st.rerun(scope="fragment")
        paused = controls.toggle(
            "Pause between steps", value=view.paused, key=f"demo_pause_live_{view.run_id}"
        )
        if paused != view.paused:
            runner.set_pause(view.run_id, paused)
        if controls.button("Stop", key="demo_stop", icon=":material/stop:"):
            runner.stop_demo(view.run_id)
            st.rerun(scope="fragment")
    for engine, why in view.skipped_engines.items():
        st.warning(f"{md_line(engine)} was left out: {md_text(why)}", icon=":material/cloud_off:")
    for step in view.steps:
        if step.status == "pending" and view.awaiting is None:
            continue
        render_step(step)
        if view.awaiting == step.index + 1:
            st.info(
                f"Paused. Next: {md_line(view.next_step_title)}. Press “Next step” when ready.",
                icon=":material/pause:",
            )
    if view.conclusion:
        st.subheader("Conclusion, from the numbers above")
        lines = "".join(f"<li>{html_text(line)}</li>" for line in view.conclusion_lines)
        st.markdown(
            f'<div class="demo-headline">{html_text(view.conclusion_headline or view.conclusion)}</div>'
            f'<ul class="demo-lines">{lines}</ul>',
            unsafe_allow_html=True,
        )
    if view.error:
        st.error(md_text(view.error))
    if not view.live:
        st.download_button(
            "Export as HTML report",
            data=lambda: export_demo_html(view.run_id).data,
            file_name=f"shootout-demo-{view.run_id}.html",
            mime="text/html",
            on_click="ignore",
            icon=":material/download:",
            key=f"demo_export_{view.run_id}",
        )


@st.fragment(run_every=refresh_interval(1.0) if first_view.live else None)
def live_demo() -> None:
    try:
        view = runner.demo_view(int(run_id))
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    render(view)
    if first_view.live and not view.live:
        st.rerun()  # the demo ended: redraw once without the timed refresh


live_demo()
st.divider()
st.subheader("Another demo")
setup_section()
