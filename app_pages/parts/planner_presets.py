"""The Planner's "Models & GPUs" tab: the model and GPU presets as tables, adding one's own
from a config.json, a GGUF file or typed figures, and removing it again."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from services.core.errors import ShootoutError
from services.core.safe_text import md_line, md_text
from services.planner import view as planner


def presets_tab() -> None:
    st.subheader("Models")
    st.dataframe(
        planner.model_table(),
        hide_index=True,
        key="planner_models_table",
        column_config={
            "source": st.column_config.LinkColumn("source"),
            "kv_heads": "KV heads",
            "head_dim": "head dim",
            "experts": st.column_config.TextColumn("experts", help="active / routed"),
            "params_b": st.column_config.NumberColumn("params (B)", format="%.2f"),
            "active_b": st.column_config.NumberColumn("active (B)", format="%.2f"),
            "kv_bytes_per_token_bf16": st.column_config.NumberColumn(
                "KV bytes/token (BF16)", format="localized"
            ),
            "max_context": st.column_config.NumberColumn("max context (tokens)", format="localized"),
        },
    )
    st.subheader("GPUs")
    missing = "— : no such tensor path (runs at BF16 speed)"
    st.dataframe(
        planner.gpu_table(),
        hide_index=True,
        key="planner_gpus_table",
        column_config={
            "source": st.column_config.LinkColumn("source"),
            "memory_gib": st.column_config.NumberColumn("memory (GiB)", format="%.1f"),
            "bandwidth_gb_s": st.column_config.NumberColumn("bandwidth (GB/s)", format="localized"),
            "bf16_tflops": st.column_config.NumberColumn("BF16 TFLOPS", format="%.1f"),
            "fp8_tflops": st.column_config.TextColumn("FP8 TFLOPS", help=missing),
            "int8_tops": st.column_config.TextColumn("INT8 TOPS", help=missing),
        },
    )
    left, right = st.columns(2)
    with left.form("planner_add_model", clear_on_submit=True):
        st.markdown("**Add a model** from its `config.json` or a GGUF file's header")
        key = st.text_input("Key (as `--model` takes it)", key="planner_new_model_key")
        name = st.text_input("Display name", key="planner_new_model_name")
        hf_id = st.text_input("Hugging Face id (optional)", key="planner_new_model_hf")
        upload = st.file_uploader(
            "config.json or .gguf", type=["json", "gguf"], key="planner_new_model_file"
        )
        path = (
            st.text_input("…or a GGUF path on this server", key="planner_new_model_path")
            if common.viewer().may("read_server_paths")
            else ""
        )
        if st.form_submit_button("Add model"):
            try:
                saved = planner.add_model(
                    key=key,
                    name=name,
                    hf_id=hf_id,
                    upload_name=upload.name if upload is not None else None,
                    upload=upload.getvalue() if upload is not None else None,
                    gguf_path=path,
                )
                st.success(
                    f"Saved {md_line(saved.name)} as {md_line(repr(saved.key))}: {saved.layers} layers, "
                    f"{md_line(saved.attention_kind)}."
                )
            except ShootoutError as error:
                st.error(md_text(str(error)))
    with right.form("planner_add_gpu", clear_on_submit=True):
        st.markdown("**Add a GPU**")
        key = st.text_input("Key (as `--gpu` takes it)", key="planner_new_gpu_key")
        name = st.text_input("Display name", key="planner_new_gpu_name")
        c1, c2 = st.columns(2)
        memory_gib = c1.number_input("Memory (GiB)", 0.0, 100_000.0, 80.0, key="planner_new_gpu_mem")
        bandwidth = c2.number_input("Bandwidth (GB/s)", 0.0, 1e6, 2000.0, key="planner_new_gpu_bw")
        bf16 = c1.number_input("Dense BF16 TFLOPS", 0.0, 1e6, 300.0, key="planner_new_gpu_bf16")
        fp8 = c2.number_input("Dense FP8 TFLOPS (0 = none)", 0.0, 1e6, 0.0, key="planner_new_gpu_fp8")
        if st.form_submit_button("Add GPU"):
            try:
                saved_gpu = planner.add_gpu(
                    key=key,
                    name=name,
                    memory_gib=memory_gib,
                    bandwidth_gb_s=bandwidth,
                    bf16_tflops=bf16,
                    fp8_tflops=fp8,
                )
                st.success(f"Saved {md_line(saved_gpu.name)} as {md_line(repr(saved_gpu.key))}.")
            except ShootoutError as error:
                st.error(md_text(str(error)))
    custom = planner.removable()
    if custom:
        c1, c2 = st.columns([3, 1])
        chosen = c1.selectbox(
            "Remove one of your own",
            custom,
            format_func=lambda x: f"{x[0]}: {x[1]}",
            key="planner_remove",
        )
        if c2.button("Remove", key="planner_remove_button"):
            try:
                planner.delete_custom(*chosen)
                st.rerun()
            except ShootoutError as error:
                st.error(md_text(str(error)))
