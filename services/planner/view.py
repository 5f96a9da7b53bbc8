"""What the Planner page shows and does, as plain functions: its tables ready to draw, the
choices of the "Which engine?" form, the launch options from the launch form, and adding a model
or GPU of one's own from what the forms hold. No Streamlit here."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import cast, get_args

import pandas as pd
from sqlalchemy.exc import SQLAlchemyError

from services.errors import ShootoutError, ValidationError
from services.planner import catalog, engines_reference, importers, launch, runs
from services.planner.plan import gpu_rows, model_rows
from services.planner.specs import GIB, GpuSpec, ModelSpec

HARDWARE: tuple[str, ...] = get_args(engines_reference.Hardware)
TRAFFIC: tuple[str, ...] = get_args(engines_reference.Traffic)
PREFIX_SHARING: tuple[str, ...] = get_args(engines_reference.PrefixSharing)
OPERATIONS: tuple[str, ...] = get_args(engines_reference.Operations)
MODEL_FORMATS = {"hf": "Hugging Face checkpoint", "gguf": "GGUF"}


def rate(tok_s: float) -> str:
    """Tokens/s short enough for a quarter-width metric: 12,345,678 would be cut to "12,345,6…"."""
    return f"{tok_s / 1e6:,.1f}M tok/s" if tok_s >= 1e6 else f"{tok_s:,.0f} tok/s"


def feature_matrix() -> pd.DataFrame:
    """Engines as columns, features as rows."""
    return pd.DataFrame(engines_reference.feature_matrix()).T


def feature_sources() -> pd.DataFrame:
    return pd.DataFrame(engines_reference.feature_rows())


def model_table() -> pd.DataFrame:
    return pd.DataFrame(model_rows())


def gpu_table() -> pd.DataFrame:
    return pd.DataFrame(gpu_rows())


def _one_of(value: str, choices: tuple[str, ...], what: str) -> str:
    if value not in choices:
        raise ValidationError(f"Unknown {what} {value!r}; known: {', '.join(choices)}.")
    return value


def constraints(
    hardware: str,
    gpus: int,
    traffic: str,
    prefix_sharing: str,
    structured_output: bool,
    operations: str,
    model_format: str,
) -> engines_reference.Constraints:
    """The "Which engine?" form's answers as the constraints rank_engines takes."""
    return engines_reference.Constraints(
        hardware=cast(engines_reference.Hardware, _one_of(hardware, HARDWARE, "hardware")),
        gpus=int(gpus),
        traffic=cast(engines_reference.Traffic, _one_of(traffic, TRAFFIC, "traffic")),
        prefix_sharing=cast(
            engines_reference.PrefixSharing, _one_of(prefix_sharing, PREFIX_SHARING, "prefix sharing")
        ),
        structured_output=structured_output,
        operations=cast(engines_reference.Operations, _one_of(operations, OPERATIONS, "operations")),
        model_format=cast(
            engines_reference.ModelFormat, _one_of(model_format, tuple(MODEL_FORMATS), "model format")
        ),
    )


@dataclass(frozen=True)
class LaunchForm:
    """The launch form's fields as the user left them."""

    engine: str
    model: str
    gpus: int
    max_model_len: int
    gpu_memory_utilization: float
    parallel_slots: int
    prefix_caching: bool
    port: int  # 0: the engine's default
    bind_host: str
    served_model_name: str


def launch_command(planned: launch.LaunchOptions, form: LaunchForm) -> launch.LaunchCommand:
    """The command for the plan's options as the form overrides them."""
    return launch.build_launch(
        replace(
            planned,
            engine=form.engine,
            model=form.model,
            gpus=int(form.gpus),
            max_model_len=int(form.max_model_len),
            gpu_memory_utilization=float(form.gpu_memory_utilization),
            prefix_caching=form.prefix_caching,
            parallel_slots=int(form.parallel_slots),
            port=int(form.port) or None,
            bind_host=form.bind_host.strip(),
            served_model_name=form.served_model_name.strip() or None,
        )
    )


def suggested_engine_name(command: launch.LaunchCommand) -> str:
    return f"{command.engine}-{catalog.slugify(command.model_name.split('/')[-1])}"[:100]


def add_model(
    *,
    key: str,
    name: str,
    hf_id: str = "",
    upload_name: str | None = None,
    upload: bytes | None = None,
    gguf_path: str = "",
) -> ModelSpec:
    """Save a model of one's own from an uploaded config.json or GGUF file, or a GGUF path on
    this server (in that order of preference)."""
    key, name = key.strip(), name.strip()
    if upload is not None and upload_name is not None and upload_name.endswith(".json"):
        spec = importers.model_from_config_text(upload, key=key, name=name, hf_id=hf_id.strip() or None)
    elif upload is not None and upload_name is not None:
        spec, _ = importers.model_from_gguf_bytes(upload, upload_name, key=key, name=name)
    elif gguf_path.strip():
        spec, _ = importers.model_from_gguf(gguf_path.strip(), key=key, name=name)
    else:
        raise ValidationError("Upload a config.json or GGUF file, or give a GGUF path.")
    return catalog.save_custom_model(spec)


def add_gpu(
    *,
    key: str,
    name: str,
    memory_gib: float,
    bandwidth_gb_s: float,
    bf16_tflops: float,
    fp8_tflops: float,
) -> GpuSpec:
    """Save a GPU of one's own (FP8 0: it has no FP8 path)."""
    gpu = GpuSpec(
        key=key.strip(),
        name=name.strip() or key.strip(),
        memory_bytes=int(memory_gib * GIB),
        bandwidth_bytes_s=bandwidth_gb_s * 1e9,
        bf16_tflops=bf16_tflops,
        fp8_tflops=fp8_tflops or None,
        source="added by a user",
        custom=True,
    )
    return catalog.save_custom_gpu(gpu)


def removable() -> list[tuple[str, str]]:
    """(kind, key) of every model and GPU a user added."""
    return [("model", k) for k in catalog.custom_models()] + [("gpu", k) for k in catalog.custom_gpus()]


def stored_runs(model: str, gpu: str) -> runs.PlanRuns:
    """The stored runs to measure a plan against; an unreachable run database is a
    ShootoutError that says so (the page shows it and keeps the rest)."""
    try:
        return runs.runs_for_plan(model, gpu)
    except SQLAlchemyError as error:
        raise ShootoutError(f"Cannot read stored runs: {error}") from error
