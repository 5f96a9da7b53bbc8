"""Tune: sweep an engine's own settings, benchmark each configuration, read the Pareto front and
copy the winner's launch command.

Runs execute in a worker process (services.tune.jobs), so they go on when this page closes;
every viewer of `?run=ID` sees the same progress. Logic lives in services.tune.view.
"""

from __future__ import annotations

import streamlit as st

from app_pages import common
from services.core.errors import ShootoutError
from services.core.figures import inert
from services.core.safe_text import md_line, md_text
from services.tune import view as tune

st.title("Tune")
st.caption(
    "Restart an engine with each combination of its settings, run the same load on each, and read the "
    "trade-off: throughput against latency, the Pareto front, the best configuration under your SLOs."
)

viewer = common.viewer()


def new_tuning_form() -> None:
    if not common.operator_only("manage_engines"):
        return
    kinds = tune.kinds(viewer)
    left, middle, right = st.columns(3)
    with left:
        kind = st.selectbox("Engine kind", kinds, key="tune_kind")
        grid = st.text_area(
            "Settings to vary (one KEY=V1,V2 per line)",
            "np=1,2\nctk=f16,q8_0",
            key="tune_grid",
            help=tune.settings_help(kind),
        )
    with middle:
        concurrency = st.number_input("Concurrency", 1, 256, 2, key="tune_concurrency")
        requests = st.number_input("Requests per configuration", 1, 10_000, 8, key="tune_requests")
        input_len = st.number_input("Input tokens", 1, 100_000, 32, key="tune_input_len")
        output_len = st.number_input("Output tokens", 1, 100_000, 16, key="tune_output_len")
    with right:
        slo_ttft = st.number_input("SLO TTFT ms (0: none)", 0.0, 1e7, 0.0, key="tune_slo_ttft")
        slo_tpot = st.number_input("SLO TPOT ms (0: none)", 0.0, 1e7, 0.0, key="tune_slo_tpot")
        slo_ttfat = st.number_input(
            "SLO time to first answer token ms (0: none)", 0.0, 1e7, 0.0, key="tune_slo_ttfat"
        )
        usd_per_hour = st.text_input(
            "Price, $/hour of the GPUs (optional)",
            key="tune_usd_per_hour",
            placeholder="3.50",
            help="For cost per 1M tokens per configuration and the cheapest one meeting the SLOs.",
        )
        name = st.text_input("Name (optional)", key="tune_name")
    templates = tune.TuneForm()
    if tune.commands_allowed(viewer):
        with st.expander("Remote or containerised engine (command templates)"):
            templates = tune.TuneForm(
                start_command=st.text_input(
                    "Start command ({port}, {name}, {args})",
                    key="tune_start_cmd",
                    placeholder="docker run -d --name {name} -p {port}:8000 image {args}",
                ),
                stop_command=st.text_input(
                    "Stop command", key="tune_stop_cmd", placeholder="docker rm -f {name}"
                ),
                base_url=st.text_input("Base URL", "http://127.0.0.1:{port}", key="tune_base_url"),
            )
    else:
        st.caption(
            "Command templates (remote or containerised engines) are off on this server: start it with "
            "SHOOTOUT_ALLOW_COMMANDS=1 to let operators run them; `shootout tune` always may."
        )
    form = tune.TuneForm(
        kind=str(kind or ""),
        grid=grid,
        concurrency=int(concurrency),
        requests=int(requests),
        input_len=int(input_len),
        output_len=int(output_len),
        slo_ttft_ms=float(slo_ttft),
        slo_tpot_ms=float(slo_tpot),
        slo_ttfat_ms=float(slo_ttfat),
        usd_per_hour=usd_per_hour,
        name=name,
        start_command=templates.start_command,
        stop_command=templates.stop_command,
        base_url=templates.base_url,
    )
    if st.button("Start tuning", type="primary", key="tune_start"):
        common.start_and_show(lambda: tune.submit(form, viewer))


with st.expander("New tuning run", expanded="run" not in st.query_params):
    new_tuning_form()

try:
    recent = tune.list_runs()
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()
if not recent:
    st.caption("No tuning run yet.")
    st.stop()

labels = {run_id: f"#{run_id} {name}" for run_id, name, _status in recent}
selected = common.address_run_id() or recent[0][0]
if selected not in labels:
    labels = {selected: f"#{selected}", **labels}
run_id = st.selectbox(
    "Run",
    list(labels),
    index=list(labels).index(selected),
    format_func=labels.get,
    key=f"tune_run_select_{selected}",
)
if run_id != selected:
    st.query_params["run"] = str(run_id)
    st.rerun()


def show(view: tune.TuneRunView) -> None:
    summary = view.results
    st.subheader(f"#{view.id} {md_line(view.name)}")
    status = {
        "finished": st.success,
        "finished_with_errors": st.warning,
        "cancelled": st.warning,
        "running": st.info,
        "pending": st.info,
    }.get(view.status, st.error)
    status(
        f"Status: {md_line(view.status.replace('_', ' '))} · load: {md_line(summary.load)} · "
        f"SLOs: {md_line(summary.slo or 'none')}"
    )
    if view.active:
        st.progress(
            min(1.0, view.progress),
            text=f"{sum(c['status'] not in ('not_run', 'starting', 'running') for c in view.configs)}"
            f" of {len(view.configs)} configurations done",
        )
        if tune.may_control_run(view.id, viewer) and st.button(
            "Cancel tuning", key=f"tune_cancel_{view.id}"
        ):
            try:
                tune.cancel_run(view.id, viewer)
            except ShootoutError as error:
                st.error(md_text(str(error)))
                return
            st.rerun()
    table, energy_note = tune.fold_not_measured(tune.config_table(summary), tune.ENERGY_COLUMN, "Energy")
    if not table.empty:
        st.dataframe(table, hide_index=True, key=f"tune_table_{view.id}")
    if energy_note:
        st.caption(md_text(energy_note))
    charts = st.columns(2)
    for column, metric in zip(charts, ("ttft_s", "itl_s"), strict=True):
        figure = tune.pareto_figure(summary, metric)
        if figure is not None:
            column.plotly_chart(inert(figure), key=f"tune_pareto_{metric}_{view.id}")
    frontier = tune.cost_frontier_figure(summary)
    if frontier is not None:
        st.plotly_chart(inert(frontier), key=f"tune_cost_frontier_{view.id}")
    best = tune.winner(summary)
    st.markdown("**Best configuration**")
    (st.success if best.label else st.warning)(md_text(best.reason))
    if best.caveat:
        st.caption(md_text(best.caveat))
    if best.plain:
        st.caption("Launch it (plain)")
        st.code(best.plain, language="bash")
        st.caption("Launch it (docker)")
        st.code(best.docker or "", language="bash")
        if not view.active and viewer.may("manage_engines"):
            name = st.text_input(
                "Engine name", f"tuned-{view.spec.kind}-{view.id}", key=f"tune_reg_name_{view.id}"
            )
            if st.button("Register as an engine", key=f"tune_register_{view.id}"):
                try:
                    st.success(f"Registered {md_line(tune.register_winner(view.id, name, viewer))}.")
                except ShootoutError as error:
                    st.error(md_text(str(error)))
    cheapest = tune.cheapest(summary)
    st.markdown("**Cheapest configuration meeting the SLOs**")
    (st.success if cheapest.label else st.info)(md_text(cheapest.reason))
    if cheapest.plain and cheapest.label != best.label:
        st.code(cheapest.plain, language="bash")
    failures = [c for c in view.configs if c.get("log_tail")]
    for config in failures:
        with st.expander(f"{md_line(config['label'])}: {md_line(config['status'].replace('_', ' '))}"):
            st.caption(md_text(config.get("reason") or ""))
            st.code(config["log_tail"], language="text")


@st.fragment(run_every=common.refresh_interval(1.0))
def live(run_id: int) -> None:
    try:
        view = tune.get_run(run_id)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    if not view.active:
        st.rerun()
    show(view)


try:
    current = tune.get_run(run_id)
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()
if current.active:
    live(run_id)
else:
    show(current)
