"""The Benchmarks form's first column: what the requests are (kind, lengths, prompts). Each
widget writes its value into the form's `values` under the name services.bench.form reads."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from services.bench import view as views
from services.core.errors import ShootoutError
from services.core.json_types import JsonOut
from services.core.safe_text import md_text


def workload_column(options: views.FormOptions, values: JsonOut) -> None:
    default = options.defaults
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
        _prompt_file(values)
    if values["workload"] == "trace":
        values["trace"] = st.selectbox(
            "Trace", options.traces, index=options.traces.index(default.trace), key="bench_trace"
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


def _prompt_file(values: JsonOut) -> None:
    """An uploaded JSONL file, or (for an operator) a path on the server."""
    upload = st.file_uploader(
        'JSONL prompts ({"prompt": ...} or {"messages": [...]} per line)',
        type=["jsonl", "json", "txt"],
        key="bench_prompts_upload",
    )
    if common.viewer().may("read_server_paths"):
        values["prompts_file"] = st.text_input("or a JSONL file on the server", key="bench_prompts")
    if upload is not None:
        try:
            values["prompts_file"] = views.save_prompt_file(upload.name, upload.getvalue())
        except ShootoutError as error:
            st.error(md_text(str(error)))
