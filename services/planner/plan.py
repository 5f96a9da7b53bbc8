"""One planning question in, every number out: the page and `shootout plan` both call this.

`make_plan` validates the inputs (clear messages, never a traceback), then computes
KV cache, weights, fit, and the decode/prefill ceilings. `plan_to_dict` is the JSON
shape `shootout plan --json` prints (documented in docs/cli-formats.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from services.core.errors import ValidationError
from services.core.json_types import JsonOut
from services.planner import memory
from services.planner.catalog import (
    all_gpus,
    all_models,
    get_gpu,
    get_kv_format,
    get_model,
    get_weight_format,
)
from services.planner.presets import KV_FORMATS, WEIGHT_FORMATS
from services.planner.roofline import (
    BoundComparison,
    DecodePoint,
    PrefillPoint,
    Roofline,
    compare_to_bound,
)
from services.planner.specs import GB, GIB, GpuSpec, KvFormat, ModelSpec, WeightFormat

MAX_BATCH = 1_000_000
MAX_CONTEXT = 100_000_000
MAX_TP = 1024


@dataclass(frozen=True)
class PlanRequest:
    model: str
    gpu: str
    dtype: str | None = None  # None: the model's native format
    batch: int = 1
    context: int = 8192
    tp: int = 1
    kv_dtype: str = "auto"
    mem_util: float = 0.9
    block_size: int = 16
    reserve_gib: float = 0.0
    achieved_tok_s: float | None = None


@dataclass(frozen=True)
class PlanResult:
    request: PlanRequest
    model: ModelSpec
    gpu: GpuSpec
    fmt: WeightFormat
    kv: KvFormat
    params_total: int
    params_active: int
    weights: memory.WeightBytes
    kv_bytes_per_token: float
    kv_bytes_per_token_per_gpu: float
    kv_bytes_per_sequence: float
    kv_total_bytes: float
    fit: memory.FitReport
    decode: DecodePoint
    crossover_batch: int | None
    prefill: PrefillPoint
    roofline: Roofline
    measured: BoundComparison | None = None
    warnings: list[str] = field(default_factory=list)


def _check_int(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{name} must be a whole number, got {value!r}.")
    if not low <= value <= high:
        raise ValidationError(f"{name} must be between {low:,} and {high:,}, got {value:,}.")
    return value


def validate_request(request: PlanRequest) -> None:
    _check_int("Batch", request.batch, 1, MAX_BATCH)
    _check_int("Context length", request.context, 1, MAX_CONTEXT)
    _check_int("Tensor-parallel degree", request.tp, 1, MAX_TP)
    _check_int("Block size", request.block_size, 1, 1 << 20)
    if not 0 < request.mem_util <= 1:
        raise ValidationError(f"Memory utilisation is a fraction in (0, 1], got {request.mem_util}.")
    if request.reserve_gib < 0:
        raise ValidationError("Reserved memory cannot be negative.")
    if request.achieved_tok_s is not None and request.achieved_tok_s <= 0:
        raise ValidationError("Achieved tokens/s must be a positive number.")


def make_plan(request: PlanRequest) -> PlanResult:
    """Compute every figure for one model x GPU x format x batch x context x TP choice."""
    validate_request(request)
    model = get_model(request.model)
    gpu = get_gpu(request.gpu)
    fmt = get_weight_format(request.dtype or model.native_dtype)
    kv = get_kv_format(request.kv_dtype)
    memory.validate_parallelism(model, request.tp)

    warnings: list[str] = []
    if request.context > model.max_context:
        warnings.append(
            f"Context {request.context:,} is beyond {model.name}'s trained maximum of {model.max_context:,} tokens."
        )
    if fmt.compute == "fp8" and gpu.fp8_tflops is None:
        warnings.append(
            f"{gpu.name} has no FP8 tensor cores: FP8 weights run weight-only, at BF16 compute speed."
        )
    if fmt.compute == "int8" and gpu.int8_tops is None:
        warnings.append(f"{gpu.name} has no INT8 tensor path listed: compute assumed at BF16 speed.")
    if fmt.family == "gguf" and model.file_dtype != fmt.key:
        warnings.append(f"{fmt.label} size uses the whole-file average bits per weight ({fmt.note}).")

    params = memory.parameter_breakdown(model)
    weights = memory.weight_bytes(model, fmt)
    reserve = request.reserve_gib * GIB
    kv_seq = memory.kv_bytes_per_sequence(model, kv, request.context, block_size=request.block_size)
    fit = memory.fit_report(
        model,
        gpu,
        weights,
        kv,
        batch=request.batch,
        context=request.context,
        tp=request.tp,
        mem_util=request.mem_util,
        block_size=request.block_size,
        reserve_bytes=reserve,
    )
    if not fit.fits:
        warnings.append(
            f"Does not fit: needs {fit.needed_per_gpu / GIB:,.1f} GiB per GPU, "
            f"{fit.usable_per_gpu / GIB:,.1f} GiB usable at {request.mem_util:.0%}."
        )
    roofline = Roofline(model, gpu, fmt, kv, weights, request.tp, request.block_size)
    decode = roofline.decode(request.batch, request.context)
    measured = None
    if request.achieved_tok_s is not None:
        measured = compare_to_bound(
            roofline, request.achieved_tok_s, batch=request.batch, context=request.context
        )
        if measured.fraction > 1:
            warnings.append(
                f"The measured {measured.achieved_tok_s:,.1f} tok/s is above the {measured.bound_tok_s:,.1f} tok/s "
                "bound: check model, GPU, format, batch and context (speculative decoding can also beat it)."
            )
    return PlanResult(
        request=request,
        model=model,
        gpu=gpu,
        fmt=fmt,
        kv=kv,
        params_total=params.total,
        params_active=params.active,
        weights=weights,
        kv_bytes_per_token=memory.kv_bytes_per_token(model, kv),
        kv_bytes_per_token_per_gpu=memory.kv_bytes_per_token_per_gpu(model, kv, request.tp),
        kv_bytes_per_sequence=kv_seq,
        kv_total_bytes=request.batch * kv_seq,
        fit=fit,
        decode=decode,
        crossover_batch=roofline.crossover_batch(request.context),
        prefill=roofline.prefill(request.context),
        roofline=roofline,
        measured=measured,
        warnings=warnings,
    )


def _sizes(value: float) -> dict[str, float]:
    return {"bytes": value, "gb": value / GB, "gib": value / GIB}


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def plan_to_dict(plan: PlanResult) -> JsonOut:
    """The `shootout plan --json` document (see /work/notes/readme-planner.md for its fields)."""
    r = plan.request
    fit = plan.fit
    d = plan.decode
    p = plan.prefill
    result: JsonOut = {
        "inputs": {
            "model": plan.model.key,
            "gpu": plan.gpu.key,
            "dtype": plan.fmt.key,
            "kv_dtype": plan.kv.key,
            "batch": r.batch,
            "context": r.context,
            "tp": r.tp,
            "mem_util": r.mem_util,
            "block_size": r.block_size,
            "reserve_gib": r.reserve_gib,
        },
        "model": {
            "name": plan.model.name,
            "attention": plan.model.attention_kind,
            "params_total": plan.params_total,
            "params_active": plan.params_active,
            "max_context": plan.model.max_context,
            "source": plan.model.source,
        },
        "gpu": {
            "name": plan.gpu.name,
            "memory_bytes": plan.gpu.memory_bytes,
            "bandwidth_bytes_s": plan.gpu.bandwidth_bytes_s,
            "peak_tflops_used": plan.roofline.peak_flops_per_gpu / 1e12,
            "source": plan.gpu.source,
        },
        "kv_cache": {
            "bytes_per_token": _number(plan.kv_bytes_per_token),
            "bytes_per_token_per_gpu": _number(plan.kv_bytes_per_token_per_gpu),
            "bytes_per_sequence": _number(plan.kv_bytes_per_sequence),
            "total": {k: _number(v) for k, v in _sizes(plan.kv_total_bytes).items()},
            "blocks_per_sequence": fit.blocks_per_sequence,
        },
        "weights": {
            **{k: _number(v) for k, v in _sizes(plan.weights.total).items()},
            "bits_per_weight": plan.weights.bits_per_weight,
            "per_gpu_bytes": _number(fit.weights_per_gpu),
            "exact_from_file": plan.weights.exact_from_file,
        },
        "fit": {
            "fits": fit.fits,
            "gpus": fit.gpus,
            "usable_bytes_per_gpu": fit.usable_per_gpu,
            "needed_bytes_per_gpu": fit.needed_per_gpu,
            "headroom_bytes_per_gpu": fit.headroom_per_gpu,
            "kv_capacity_bytes_per_gpu": fit.kv_capacity_per_gpu,
            "kv_blocks_per_gpu": fit.blocks_per_gpu,
            "max_sequences_at_context": fit.max_sequences,
            "max_context_at_batch": fit.max_context_at_batch,
        },
        "decode": {
            "bound_tok_s": d.bound_tok_s,
            "memory_bound_tok_s": d.memory_bound_tok_s,
            "compute_bound_tok_s": d.compute_bound_tok_s,
            "per_sequence_tok_s": d.per_sequence_tok_s,
            "limited_by": d.limited_by,
            "bytes_per_step_per_gpu": d.bytes_per_step_per_gpu,
            "flops_per_step_per_gpu": d.flops_per_step_per_gpu,
            "arithmetic_intensity": d.arithmetic_intensity,
            "ridge_point": plan.roofline.ridge_point,
            "crossover_batch": plan.crossover_batch,
        },
        "prefill": {
            "bound_tok_s": p.bound_tok_s,
            "ttft_lower_bound_s": p.ttft_lower_bound_s,
            "flops_per_gpu": p.flops_per_gpu,
            "limited_by": p.limited_by,
        },
        "warnings": list(plan.warnings),
    }
    if plan.measured is not None:
        result["measured"] = asdict(plan.measured)
    return result


def list_presets() -> dict[str, dict[str, str]]:
    """Model and GPU names as `--model`/`--gpu` take them, plus the dtypes."""
    return {
        "models": {k: m.name + (" (custom)" if m.custom else "") for k, m in all_models().items()},
        "gpus": {k: g.name + (" (custom)" if g.custom else "") for k, g in all_gpus().items()},
        "dtypes": {k: f.label for k, f in WEIGHT_FORMATS.items()},
        "kv_dtypes": {
            "auto": "16-bit, as engines default",
            **{k: f.label for k, f in KV_FORMATS.items()},
        },
    }


def model_rows() -> list[JsonOut]:
    """The models table of the Presets tab: shape, derived parameters, BF16 KV bytes per token."""
    rows = []
    for key, model in all_models().items():
        params = memory.parameter_breakdown(model)
        rows.append(
            {
                "key": key,
                "name": model.name,
                "attention": model.attention_kind,
                "layers": model.layers,
                "hidden": model.hidden,
                "heads": model.heads,
                "kv_heads": model.kv_heads,
                "head_dim": model.head_dim,
                "experts": f"{model.experts_per_token}/{model.experts}" if model.is_moe else "",
                "params_b": params.total / 1e9,
                "active_b": params.active / 1e9,
                "kv_bytes_per_token_bf16": int(memory.kv_bytes_per_token(model, KV_FORMATS["bf16"])),
                "max_context": model.max_context,
                "custom": model.custom,
                "source": model.source,
            }
        )
    return rows


NO_VALUE = "—"


def _optional(value: float | None) -> str:
    """A figure the hardware may not have (an A100 has no FP8 path): a dash, never "None"/"nan"."""
    return NO_VALUE if value is None else f"{value:,.1f}"


def gpu_rows() -> list[JsonOut]:
    """The GPUs table of the Presets tab, in the units the "Add a GPU" form takes (GiB, GB/s)."""
    return [
        {
            "key": key,
            "name": gpu.name,
            "memory_gib": gpu.memory_bytes / GIB,
            "bandwidth_gb_s": gpu.bandwidth_bytes_s / 1e9,
            "bf16_tflops": gpu.bf16_tflops,
            "fp8_tflops": _optional(gpu.fp8_tflops),
            "int8_tops": _optional(gpu.int8_tops),
            "custom": gpu.custom,
            "note": gpu.note,
            "source": gpu.source,
        }
        for key, gpu in all_gpus().items()
    ]
