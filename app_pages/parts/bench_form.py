"""The Benchmarks page's "New benchmark" form: workload, load, sweep and SLOs in three columns,
then Start. Widget values go into one dict that services.bench.view.submit reads once and validates; the
initial values are services.bench.form's defaults (the same as `shootout bench`'s)."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from app_pages.parts.bench_workload import workload_column
from services.bench import view as views
from services.core.json_types import JsonOut


def new_benchmark_form(options: views.FormOptions) -> None:
    if not options.engines:
        st.info("No engines registered yet: add one on the Engines page first.")
        return
    values: JsonOut = {}
    engines = st.multiselect(
        "Engines (same workload, side by side)",
        options.engines,
        default=options.default_engines,
        key="bench_engines",
    )
    values["engines"] = engines
    left, middle, right = st.columns(3)
    with left:
        workload_column(options, values)
    with middle:
        load_column(options, values)
    with right:
        sweep_column(options, values)
    values["name"] = st.text_input("Name (optional)", options.defaults.name, key="bench_name")
    shared = views.shared_cores_note(engines, bool(values.get("parallel")))
    if shared:
        st.info(shared, icon=":material/memory:")
    if st.button("Start benchmark", type="primary", key="bench_start"):
        common.start_and_show(lambda: views.submit(values, common.viewer()))


def load_column(options: views.FormOptions, values: JsonOut) -> None:
    default = options.defaults
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
                "Arrivals",
                options.arrivals,
                index=options.arrivals.index(default.arrival),
                key="bench_arrival",
            )
            if values["arrival"] == "gamma":
                values["burstiness"] = st.number_input(
                    "Burstiness (<1 burstier)", 0.01, 100.0, default.burstiness, key="bench_burstiness"
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


def sweep_column(options: views.FormOptions, values: JsonOut) -> None:
    default = options.defaults
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
            options.search_over,
            index=options.search_over.index(default.search_over),
            key="bench_search_over",
        )
        values["search_start"] = st.number_input(
            "Start", 0.01, 100_000.0, default.search_start, key="bench_search_start"
        )
        values["search_max"] = st.number_input(
            "Maximum", 0.01, 100_000.0, default.search_max, key="bench_search_max"
        )
    for field, label, key in (
        ("slo_ttft_ms", "SLO TTFT ms (0: none)", "bench_slo_ttft"),
        ("slo_ttfat_ms", "SLO time to first answer token ms (0: none)", "bench_slo_ttfat"),
        ("slo_tpot_ms", "SLO TPOT ms (0: none)", "bench_slo_tpot"),
        ("slo_e2e_ms", "SLO E2E ms (0: none)", "bench_slo_e2e"),
    ):
        values[field] = st.number_input(label, 0.0, 1e7, getattr(default, field) or 0.0, key=key)
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
        help="Processes sending the load on this host; add them when the self-check says client-bound.",
    )
    if common.operator_only("fetch_urls"):  # a Ray address is a host this server connects to
        values["ray_address"] = st.text_input(
            "Ray cluster (optional, HOST:PORT)",
            default.ray_address,
            key="bench_ray",
            help="Run the workers as Ray actors over this cluster's nodes; workers 1 or auto: one per node.",
        )
    values["seed"] = st.number_input("Seed", 0, 2**31 - 1, default.seed, key="bench_seed")
