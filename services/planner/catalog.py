"""Presets plus the user's own models and GPUs, looked up by key.

The user's additions live in one JSON file in the data directory
(`<SHOOTOUT_DATA_DIR>/planner_presets.json`), written atomically, so a half-written
file never loses what was there.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from services.core.config import get_settings
from services.core.errors import ConflictError, NotFoundError, ValidationError
from services.planner.presets import GPUS, KV_FORMATS, MODELS, WEIGHT_FORMATS
from services.planner.specs import GpuSpec, GpuSpecJson, KvFormat, ModelSpec, ModelSpecJson, WeightFormat

KEY_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_lock = threading.Lock()


def custom_presets_path() -> Path:
    return get_settings().data_dir / "planner_presets.json"


class CustomPresets(TypedDict):
    """The user's presets file: key -> the spec as stored (its key aside)."""

    models: dict[str, ModelSpecJson]
    gpus: dict[str, GpuSpecJson]


def _load() -> CustomPresets:
    path = custom_presets_path()
    if not path.exists():
        return {"models": {}, "gpus": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValidationError(f"Cannot read the saved planner presets at {path}: {error}") from error
    # The one boundary: the file as _save wrote it.
    return cast(
        CustomPresets,
        {"models": dict(data.get("models") or {}), "gpus": dict(data.get("gpus") or {})},
    )


def _save(data: CustomPresets) -> None:
    path = custom_presets_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".planner_presets.", dir=path.parent)
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        json.dump(data, file, indent=2, sort_keys=True)
    os.replace(temporary, path)


def slugify(text: str) -> str:
    slug = re.sub(r"[^a-z0-9._-]+", "-", (text or "").strip().lower()).strip("-.")
    return slug[:64]


def _check_key(key: str) -> None:
    if not KEY_PATTERN.match(key or ""):
        raise ValidationError(
            "A preset key is 1-64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit."
        )


def custom_models() -> dict[str, ModelSpec]:
    return {
        k: ModelSpec.from_dict({**v, "key": k, "custom": True}) for k, v in _load()["models"].items()
    }


def custom_gpus() -> dict[str, GpuSpec]:
    return {k: GpuSpec.from_dict({**v, "key": k, "custom": True}) for k, v in _load()["gpus"].items()}


def all_models() -> dict[str, ModelSpec]:
    """Presets first, then the user's own (which never shadow a preset)."""
    return {**MODELS, **{k: v for k, v in custom_models().items() if k not in MODELS}}


def all_gpus() -> dict[str, GpuSpec]:
    return {**GPUS, **{k: v for k, v in custom_gpus().items() if k not in GPUS}}


def get_model(key: str) -> ModelSpec:
    models = all_models()
    if key not in models:
        raise NotFoundError(
            f"Unknown model {key!r}. Known: {', '.join(models)} (see `shootout plan --list`)."
        )
    return models[key]


def get_gpu(key: str) -> GpuSpec:
    gpus = all_gpus()
    if key not in gpus:
        raise NotFoundError(
            f"Unknown GPU {key!r}. Known: {', '.join(gpus)} (see `shootout plan --list`)."
        )
    return gpus[key]


def get_weight_format(key: str) -> WeightFormat:
    if key not in WEIGHT_FORMATS:
        raise ValidationError(f"Unknown dtype {key!r}. Known: {', '.join(WEIGHT_FORMATS)}.")
    return WEIGHT_FORMATS[key]


def get_kv_format(key: str) -> KvFormat:
    """`auto` is what engines default to: a 16-bit cache whatever the weight format."""
    if key == "auto":
        return KV_FORMATS["bf16"]
    if key not in KV_FORMATS:
        raise ValidationError(f"Unknown KV-cache dtype {key!r}. Known: auto, {', '.join(KV_FORMATS)}.")
    return KV_FORMATS[key]


def validate_model(model: ModelSpec) -> None:
    positive = (
        "layers",
        "hidden",
        "heads",
        "kv_heads",
        "head_dim",
        "intermediate",
        "vocab",
        "max_context",
    )
    for name in positive:
        if int(getattr(model, name)) <= 0:
            raise ValidationError(f"{name.replace('_', ' ')} must be a positive whole number.")
    if model.kv_heads > model.heads:
        raise ValidationError("A model cannot have more KV heads than attention heads.")
    if model.heads % model.kv_heads and not model.is_mla:
        raise ValidationError(
            "Attention heads must be a multiple of KV heads (grouped-query attention)."
        )
    if model.experts and not 0 < model.experts_per_token <= model.experts:
        raise ValidationError("Experts per token must be between 1 and the number of experts.")
    if model.sliding_window is not None and model.sliding_window <= 0:
        raise ValidationError("The sliding window must be a positive number of tokens.")


def validate_gpu(gpu: GpuSpec) -> None:
    if gpu.memory_bytes <= 0:
        raise ValidationError("GPU memory must be positive.")
    if gpu.bandwidth_bytes_s <= 0:
        raise ValidationError("Memory bandwidth must be positive.")
    if gpu.bf16_tflops <= 0:
        raise ValidationError("BF16 TFLOPS must be positive.")
    for name in ("fp8_tflops", "int8_tops"):
        value = getattr(gpu, name)
        if value is not None and value <= 0:
            raise ValidationError(f"{name} must be positive or left empty.")


Section = Literal["models", "gpus"]


def _save_custom(
    section: Section, what: str, spec: Any, builtins: Any, validate: Any, overwrite: bool
) -> None:
    """Store a user's model or GPU (section "models" or "gpus") beside the built-in presets."""
    _check_key(spec.key)
    validate(spec)
    if spec.key in builtins:
        raise ConflictError(f"{spec.key!r} is a built-in preset; choose another key.")
    with _lock:
        data = _load()
        if spec.key in data[section] and not overwrite:
            raise ConflictError(f"A {what} named {spec.key!r} is saved already.")
        record = spec.to_dict()
        record.pop("key")
        record["custom"] = True
        data[section][spec.key] = record
        _save(data)


def save_custom_model(model: ModelSpec, *, overwrite: bool = False) -> ModelSpec:
    _save_custom("models", "model", model, MODELS, validate_model, overwrite)
    return get_model(model.key)


def save_custom_gpu(gpu: GpuSpec, *, overwrite: bool = False) -> GpuSpec:
    _save_custom("gpus", "GPU", gpu, GPUS, validate_gpu, overwrite)
    return get_gpu(gpu.key)


def delete_custom(kind: str, key: str) -> None:
    section: Section | None = "models" if kind == "model" else "gpus" if kind == "gpu" else None
    if section is None:
        raise ValidationError("Kind is 'model' or 'gpu'.")
    with _lock:
        data = _load()
        if key not in data[section]:
            raise NotFoundError(f"No saved {kind} named {key!r}.")
        del data[section][key]
        _save(data)
