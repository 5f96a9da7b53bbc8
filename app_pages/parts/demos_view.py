"""The Demos page's drawing: a scenario's settings, a demo's steps with their numbers and
charts, its conclusion and export. Untrusted text reaches markdown and HTML only through
services.core.safe_text."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app_pages import common
from services.core.errors import ShootoutError
from services.core.figures import inert
from services.core.safe_text import html_text, md_line, md_text
from services.demos import view as demos
from web.exports import export_path


def settings(scenario: demos.Scenario, name: str) -> dict[str, object]:
    """One widget per option of the scenario, by its kind; the values as the user left them."""
    settings: dict[str, object] = {}
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
    return settings


def step(step: demos.StepView) -> None:
    st.subheader(f"{step.index + 1}. {md_line(step.title)}{demos.STEP_MARKERS.get(step.status, '')}")
    st.caption(md_text(step.explanation))
    if step.numbers:
        per_row = min(4, len(step.numbers))
        for start_at in range(0, len(step.numbers), per_row):
            columns = st.columns(per_row)
            for column, number in zip(columns, step.numbers[start_at : start_at + per_row]):
                column.metric(
                    md_line(number.label),
                    md_line(number.text),
                    number.delta,
                    border=True,
                    help=md_text(number.help) if number.help else None,
                    delta_color=demos.delta_color(number),
                )
    figure = demos.step_figure(step)
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


def _steer(action: Callable[..., object], *args: object) -> None:
    try:
        action(*args, common.viewer())
    except ShootoutError as error:
        st.error(md_text(str(error)))


def demo(view: demos.DemoView, may_steer: bool = False) -> None:
    """A demo as it stands: header, the steps so far, conclusion, export; and the live
    controls (Next step, Pause, Stop) when `may_steer`: for whoever started the demo, or an
    operator (the services refuse anyone else too)."""
    st.header(md_line(view.title))
    if view.explanation:
        st.markdown(
            f'<div class="demo-explanation">{html_text(view.explanation)}</div>', unsafe_allow_html=True
        )
    st.caption(
        f"{md_line(view.mechanism)} · demo #{view.run_id} · {md_line(demos.status_text(view.status))} · "
        f"engines: {md_line(', '.join(view.engines))}"
        f" · {view.request_count} requests stored"
    )
    if view.live:
        st.progress(
            min(1.0, view.progress),
            text=demos.progress_text(view),
        )
    if view.live and may_steer:
        controls = st.container(horizontal=True, vertical_alignment="center")
        if view.awaiting is not None and controls.button(
            "Next step",
            type="primary",
            key="demo_next",
            icon=":material/skip_next:",
            help=f"Next: {md_line(view.next_step_title)}",
        ):
            _steer(demos.advance, view.run_id)
            st.rerun(scope="fragment")
        paused = controls.toggle(
            "Pause between steps", value=view.paused, key=f"demo_pause_live_{view.run_id}"
        )
        if paused != view.paused:
            _steer(demos.set_pause, view.run_id, paused)
        if controls.button("Stop", key="demo_stop", icon=":material/stop:"):
            _steer(demos.stop_demo, view.run_id)
            st.rerun(scope="fragment")
    for engine, why in view.skipped_engines.items():
        st.warning(f"{md_line(engine)} was left out: {md_text(why)}", icon=":material/cloud_off:")
    for item in view.steps:
        if item.status == "pending" and view.awaiting is None:
            continue
        step(item)
        if view.awaiting == item.index + 1:
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
        # The run's HTML report, the demo's story first, from the server's export route.
        st.link_button(
            "Export as HTML report",
            export_path(view.run_id, "html"),
            icon=":material/download:",
            key=f"demo_export_{view.run_id}",
        )
