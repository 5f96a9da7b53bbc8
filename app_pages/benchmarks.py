"""Benchmarks: start a load benchmark over one or more engines, watch it live, read its results.

Runs execute in a worker process (services.bench.jobs), so they go on when this page
closes; every viewer of `?run=ID` sees the same live progress. Logic lives in
services.bench.views.
"""

from __future__ import annotations

import streamlit as st

from app_pages import common
from services.bench import views
from services.errors import ShootoutError
from services.figures import inert
from services.safe_text import md_line, md_text

st.title("Benchmarks")
TRACES = ["conversation", "code"]
ARRIVALS = ["poisson", "gamma", "constant"]
SEARCH_OVER = ["rate", "concurrency"]

try:
    options = views.form_options()
    recent = views.recent_runs()
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()


def new_benchmark_form() -> None:
    if not options.engines:
        st.info("No engines registered yet: add one on the Engines page first.")
        return
    default = options.defaults
    values: dict = {}
    values["engines"] = st.multiselect(
        "Engines (same workload, side by side)", options.engines, key="bench_engines"
    )
    left, middle, right = st.columns(3)
    with left:
        st.markdown("**Workload**")
        values["workload"] = st.selectbox(
            "Kind",
            list(options.workloads),
            index=list(options.workloads).index(default.workload),
            format_func=options.workloads.get,
            key="bench_workload",
        )
        values["input_len"] = st.number_input(
            "Input tokens (mean)", 1, 1_000_000, default.input_len, key="bench_input_len"
        )
        values["output_len"] = st.number_input(
            "Output tokens (mean)", 1, 1_000_000, default.output_len, key="bench_output_len"
        )
        values["length_dist"] = st.selectbox(
            "Length distribution",
            options.length_dists,
            index=options.length_dists.index(default.length_dist),
            key="bench_length_dist",
            help="conversation/code: real request lengths of the Azure 2023 traces",
        )
        if values["workload"] == "shared_prefix":
            values["prefix_groups"] = st.number_input(
                "Prefix groups", 1, 1000, default.prefix_groups, key="bench_prefix_groups"
            )
            values["prefix_len"] = st.number_input(
                "Prefix tokens", 1, 1_000_000, default.prefix_len, key="bench_prefix_len"
            )
        if values["workload"] == "multi_turn":
            values["turns"] = st.number_input(
                "Turns per conversation", 1, 100, default.turns, key="bench_turns"
            )
        if values["workload"] == "structured":
            values["schema_text"] = st.text_area(
                "JSON schema (empty: a small person object)", key="bench_schema"
            )
        if values["workload"] == "file":
            upload = st.file_uploader(
                'JSONL prompts ({"prompt": ...} or {"messages": [...]} per line)',
                type=["jsonl", "json", "txt"],
                key="bench_prompts_upload",
            )
            if common.viewer().may("read_server_paths"):
                values["prompts_file"] = st.text_input(
                    "or a JSONL file on the server", key="bench_prompts"
                )
            if upload is not None:
                try:
                    values["prompts_file"] = views.save_prompt_file(upload.name, upload.getvalue())
                except ShootoutError as error:
                    st.error(md_text(str(error)))
        if values["workload"] == "trace":
            values["trace"] = st.selectbox(
                "Trace", TRACES, index=TRACES.index(default.trace), key="bench_trace"
            )
            values["length_scale"] = st.number_input(
                "Length scale", 0.01, 100.0, default.length_scale, key="bench_length_scale"
            )
            st.caption(options.trace_attribution)
        values["fixed_output"] = st.checkbox(
            "Fixed output length (ignore_eos / min_tokens)",
            default.fixed_output,
            key="bench_fixed_output",
        )
    with middle:
        st.markdown("**Load**")
        values["mode"] = st.selectbox(
            "Shape",
            list(options.loads),
            index=list(options.loads).index(default.mode),
            format_func=options.loads.get,
            key="bench_mode",
        )
        if values["mode"] == "concurrency":
            values["concurrency"] = st.number_input(
                "Concurrency", 1, 4096, default.concurrency, key="bench_concurrency"
            )
        else:
            if values["mode"] == "rate":
                values["rate"] = st.number_input(
                    "Requests per second", 0.01, 100_000.0, default.rate, key="bench_rate"
                )
                values["arrival"] = st.selectbox(
                    "Arrivals", ARRIVALS, index=ARRIVALS.index(default.arrival), key="bench_arrival"
                )
                if values["arrival"] == "gamma":
                    values["burstiness"] = st.number_input(
                        "Burstiness (<1 burstier)",
                        0.01,
                        100.0,
                        default.burstiness,
                        key="bench_burstiness",
                    )
            else:
                values["trace_speed"] = st.number_input(
                    "Replay speed", 0.01, 1000.0, default.trace_speed, key="bench_trace_speed"
                )
            values["max_concurrency"] = st.number_input(
                "Concurrency cap (0: none)", 0, 4096, default.max_concurrency or 0, key="bench_cap"
            )
        values["bound"] = st.radio(
            "Bound",
            ["requests", "duration"],
            index=0 if default.requests else 1,
            horizontal=True,
            key="bench_bound",
        )
        if values["bound"] == "requests":
            values["requests"] = st.number_input(
                "Requests per engine", 1, 10_000_000, default.requests, key="bench_requests"
            )
        else:
            values["duration_s"] = st.number_input(
                "Seconds per engine", 1.0, 86_400.0, options.suggested_duration_s, key="bench_duration"
            )
        values["warmup"] = st.number_input(
            "Warm-up requests (not counted)", 0, 10_000, default.warmup, key="bench_warmup"
        )
        values["ramp_up_s"] = st.number_input(
            "Ramp-up (s)", 0.0, 3600.0, default.ramp_up_s, key="bench_ramp"
        )
    with right:
        st.markdown("**Sweep and SLOs**")
        values["sweep"] = st.selectbox(
            "Levels",
            list(options.sweeps),
            index=list(options.sweeps).index(default.sweep),
            format_func=options.sweeps.get,
            key="bench_sweep",
        )
        if values["sweep"] in ("concurrency", "rate"):
            values["sweep_values"] = st.text_input(
                "Levels (comma-separated)", options.sweep_levels_text, key="bench_levels"
            )
        if values["sweep"] == "slo_search":
            values["search_over"] = st.selectbox(
                "Search over",
                SEARCH_OVER,
                index=SEARCH_OVER.index(default.search_over),
                key="bench_search_over",
            )
            values["search_start"] = st.number_input(
                "Start", 0.01, 100_000.0, default.search_start, key="bench_search_start"
            )
            values["search_max"] = st.number_input(
                "Maximum", 0.01, 100_000.0, default.search_max, key="bench_search_max"
            )
        values["slo_ttft_ms"] = st.number_input(
            "SLO TTFT ms (0: none)", 0.0, 1e7, default.slo_ttft_ms or 0.0, key="bench_slo_ttft"
        )
        values["slo_tpot_ms"] = st.number_input(
            "SLO TPOT ms (0: none)", 0.0, 1e7, default.slo_tpot_ms or 0.0, key="bench_slo_tpot"
        )
        values["slo_e2e_ms"] = st.number_input(
            "SLO E2E ms (0: none)", 0.0, 1e7, default.slo_e2e_ms or 0.0, key="bench_slo_e2e"
        )
        values["slo_attainment"] = st.slider(
            "Share of requests within the SLOs", 0.5, 1.0, default.slo_attainment, key="bench_attain"
        )
        values["parallel"] = st.checkbox(
            "Engines at the same time (default: one after another, fair on shared hardware)",
            default.parallel,
            key="bench_parallel",
        )
        values["timeout_s"] = st.number_input(
            "Request timeout (s)", 1.0, 86_400.0, default.timeout_s, key="bench_timeout"
        )
        values["workers"] = st.text_input(
            "Load-generator workers (a number, or auto)",
            options.workers_text,
            key="bench_workers",
            help="Processes sending the load on this host; add them when the "
            "self-check says client-bound.",
        )
        if common.operator_only("fetch_urls"):  # a Ray address is a host this server connects to
            values["ray_address"] = st.text_input(
                "Ray cluster (optional, HOST:PORT)",
                default.ray_address,
                key="bench_ray",
                help="Run the workers as Ray actors over this cluster's nodes; "
                "workers 1 or auto: one per node.",
            )
        values["seed"] = st.number_input("Seed", 0, 2**31 - 1, default.seed, key="bench_seed")
    values["name"] = st.text_input("Name (optional)", default.name, key="bench_name")
    if st.button("Start benchmark", type="primary", key="bench_start"):
        common.start_and_show(lambda: views.submit(values, common.viewer()))


with st.expander("New benchmark", expanded="run" not in st.query_params):
    new_benchmark_form()

if not recent:
    st.caption("No benchmark has run yet.")
    st.stop()

# No status in the labels: a label drawn while the run was pending stayed "(pending)" above
# "Status: finished"; the status is shown once, below, from the same read as the results.
labels = {item.id: f"#{item.id} {item.name}" for item in recent}
wanted = st.query_params.get("run")
selected = int(wanted) if wanted and wanted.isdigit() else recent[0].id
if selected not in labels:
    labels = {selected: f"#{selected}", **labels}
run_id = st.selectbox(
    "Run",
    list(labels),
    index=list(labels).index(selected),
    format_func=labels.get,
    key=f"bench_run_select_{selected}",
)
if run_id != selected:
    st.query_params["run"] = str(run_id)
    st.rerun()


@st.fragment(run_every=common.refresh_interval(1.0))
def live(run_id: int) -> None:
    try:
        view = views.run_view(run_id)
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    if not view.active:
        st.rerun()
    st.progress(
        min(1.0, view.run.progress),
        text=f"{md_line(view.run.status)}: {md_line(view.run.live.get('message'))}",
    )
    for name, counts in view.counts.items():
        stopped = f", {counts['cancelled']} cancelled" if counts.get("cancelled") else ""
        st.caption(
            f"{md_line(name)}: {counts['completed']} completed, {counts['failed']} failed{stopped}, "
            f"{counts['warmup']} warm-up"
        )
    if st.button("Cancel run", key=f"bench_cancel_{run_id}"):
        views.cancel(run_id)
        st.rerun()
    st.plotly_chart(inert(view.figures["live"]), key=f"bench_live_{run_id}")


def results(view: views.RunView) -> None:
    run = view.run
    st.subheader(f"#{run.id} {md_line(run.name)}")
    status = {"finished": st.success, "finished_with_errors": st.warning, "cancelled": st.warning}.get(
        run.status, st.error
    )
    status(
        f"Status: {md_line(run.status.replace('_', ' '))}"
        + (" (partial results: what ran before the cancel)" if run.status == "cancelled" else "")
    )
    for note in view.notes:
        st.caption(md_text(note))
    if view.client_bound:
        st.warning(
            "Client-bound: the load generator, not the engine, limited these figures (add workers, "
            "see the README).\n\n" + "\n\n".join(md_line(line) for line in view.generator)
        )
    elif view.generator:
        st.caption("Generator self-check: " + "; ".join(md_line(line) for line in view.generator))
    if not view.table.empty:
        st.markdown("**Latency percentiles**")
        st.dataframe(view.table, hide_index=True, key=f"bench_table_{run.id}")
        st.markdown("**Throughput and counts**")
        st.dataframe(view.throughput, hide_index=True, key=f"bench_throughput_{run.id}")
    order = [
        "latency_throughput",
        "ttft_cdf",
        "itl_cdf",
        "engine_metrics",
        "concurrency",
        "timeline",
        "live",
    ]
    for name in order:
        if name in view.figures:
            st.plotly_chart(inert(view.figures[name]), key=f"bench_{name}_{run.id}")


try:
    current = views.run_view(run_id)
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()
if current.active:
    live(run_id)
else:
    results(current)
