"""Memory maths: parameters, weight bytes, KV-cache bytes, and whether it all fits.

KV bytes per token = 2 (K and V) x layers x KV heads x head dim x bytes per element
for MHA/GQA/MQA. MLA (DeepSeek-V2/V3) caches one latent of `kv_lora_rank` plus the
decoupled RoPE key of `qk_rope_head_dim` per layer, with no separate V. Sliding-window
layers keep at most `sliding_window` tokens.

Tensor parallelism splits weights and KV heads across GPUs; when there are fewer KV
heads than GPUs each GPU keeps a copy of one head, and an MLA latent is kept whole on
every GPU (the way vLLM and SGLang place them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from services.core.errors import ValidationError
from services.planner.specs import GIB, GpuSpec, KvFormat, ModelSpec, ParamBreakdown, WeightFormat

SIXTEEN_BIT = 2.0


def parameter_breakdown(model: ModelSpec) -> ParamBreakdown:
    """Parameter counts from the architecture (gated MLPs, RMSNorm, as in every preset)."""
    h = model.hidden
    if model.is_mla:
        qk_head = model.qk_nope_head_dim + model.qk_rope_head_dim
        q_proj = (
            (h * model.q_lora_rank + model.q_lora_rank * model.heads * qk_head)
            if model.q_lora_rank
            else (h * model.heads * qk_head)
        )
        kv_proj = h * (
            model.kv_lora_rank + model.qk_rope_head_dim
        ) + model.kv_lora_rank * model.heads * (model.qk_nope_head_dim + model.v_head_dim)
        attention_per_layer = q_proj + kv_proj + model.heads * model.v_head_dim * h
        extra_norms_per_layer = model.q_lora_rank + model.kv_lora_rank
    else:
        q_size = model.heads * model.head_dim
        kv_size = model.kv_heads * model.head_dim
        attention_per_layer = h * q_size + 2 * h * kv_size + q_size * h
        if model.qkv_bias:
            attention_per_layer += q_size + 2 * kv_size
        extra_norms_per_layer = 0

    dense_layers = model.dense_layers if model.is_moe else model.layers
    moe_layers = model.moe_layers
    expert_inter = model.moe_intermediate or model.intermediate
    shared_inter = model.shared_expert_intermediate or expert_inter
    routed_each = 3 * h * expert_inter

    b = ParamBreakdown()
    b.embedding = model.vocab * h
    b.lm_head = 0 if model.tied_embeddings else model.vocab * h
    b.norms = model.layers * (2 * h + extra_norms_per_layer) + h
    b.attention = model.layers * attention_per_layer
    b.dense_mlp = dense_layers * 3 * h * model.intermediate
    b.router = moe_layers * model.experts * h
    b.routed_expert_each = routed_each
    b.routed_experts = moe_layers * model.experts * routed_each
    b.shared_experts = moe_layers * model.shared_experts * 3 * h * shared_inter
    b.total = (
        b.embedding
        + b.lm_head
        + b.norms
        + b.attention
        + b.dense_mlp
        + b.router
        + b.routed_experts
        + b.shared_experts
    )
    b.active = b.total - moe_layers * (model.experts - model.experts_per_token) * routed_each
    b.groups = {
        "embedding": b.embedding,
        "lm_head": b.lm_head,
        "norms": b.norms,
        "attention": b.attention,
        "dense_mlp": b.dense_mlp,
        "router": b.router,
        "routed_experts": b.routed_experts,
        "shared_experts": b.shared_experts,
    }
    return b


# Groups a "linear"-scope format quantises; the rest stay 16-bit.
QUANTISED_GROUPS = {"attention", "dense_mlp", "routed_experts", "shared_experts"}


def _bytes_per_param(group: str, fmt: WeightFormat) -> float:
    if fmt.scope == "all" or group in QUANTISED_GROUPS:
        return fmt.bits_per_weight / 8
    return SIXTEEN_BIT


@dataclass(frozen=True)
class WeightBytes:
    """Weight memory of the whole model, and what one decode step must read."""

    total: float
    embedding: float
    routed_expert_each_layer: float  # one routed expert in one layer
    non_expert: float  # everything that is not a routed expert
    bits_per_weight: float  # the effective average over all parameters
    exact_from_file: bool = False


def weight_bytes(model: ModelSpec, fmt: WeightFormat) -> WeightBytes:
    """Bytes of weights in `fmt`; exact when the model came from a GGUF file of that format."""
    params = parameter_breakdown(model)
    by_group = {g: n * _bytes_per_param(g, fmt) for g, n in params.groups.items()}
    total = sum(by_group.values())
    expert_each = params.routed_expert_each * _bytes_per_param("routed_experts", fmt)
    exact = False
    if model.file_weight_bytes and model.file_dtype == fmt.key:
        scale = model.file_weight_bytes / total if total else 1.0
        by_group = {g: v * scale for g, v in by_group.items()}
        expert_each *= scale
        total = float(model.file_weight_bytes)
        exact = True
    return WeightBytes(
        total=total,
        embedding=by_group["embedding"],
        routed_expert_each_layer=expert_each,
        non_expert=total - by_group["routed_experts"],
        bits_per_weight=total * 8 / params.total if params.total else 0.0,
        exact_from_file=exact,
    )


def expected_experts_touched(model: ModelSpec, tokens: int) -> float:
    """Distinct routed experts a layer reads for `tokens` tokens, if routing were uniform."""
    if not model.is_moe:
        return 0.0
    miss = (1 - model.experts_per_token / model.experts) ** max(tokens, 0)
    return model.experts * (1 - miss)


def weight_bytes_read(model: ModelSpec, weights: WeightBytes, tokens: int) -> float:
    """Weight bytes one forward pass over `tokens` tokens must stream from memory.

    The embedding table is only gathered row by row, so it is not streamed unless it
    doubles as the output head (tied embeddings). MoE layers read only the experts
    the tokens were routed to.
    """
    read = weights.non_expert - (0.0 if model.tied_embeddings else weights.embedding)
    read += model.moe_layers * expected_experts_touched(model, tokens) * weights.routed_expert_each_layer
    return read


def kv_elements_per_token_per_layer(model: ModelSpec) -> int:
    if model.is_mla:
        return model.kv_lora_rank + model.qk_rope_head_dim
    return 2 * model.kv_heads * model.head_dim


def kv_heads_per_gpu(model: ModelSpec, tp: int) -> float:
    """KV heads each tensor-parallel rank holds (MLA: the whole latent, so 'all')."""
    if model.is_mla:
        return float(model.kv_heads)
    return model.kv_heads / tp if tp <= model.kv_heads else 1.0


def kv_bytes_per_token(model: ModelSpec, kv: KvFormat) -> float:
    """KV-cache bytes one token occupies across all layers (the model-level figure)."""
    return model.layers * kv_elements_per_token_per_layer(model) * kv.bytes_per_element


def kv_bytes_per_token_per_gpu(model: ModelSpec, kv: KvFormat, tp: int) -> float:
    if model.is_mla:
        return kv_bytes_per_token(model, kv)
    return kv_bytes_per_token(model, kv) * kv_heads_per_gpu(model, tp) / model.kv_heads


def tokens_in_blocks(context: int, block_size: int) -> int:
    """Tokens a sequence occupies once rounded up to whole blocks (pages)."""
    return math.ceil(context / block_size) * block_size


def kv_bytes_per_sequence(
    model: ModelSpec,
    kv: KvFormat,
    context: int,
    *,
    block_size: int = 1,
    tp: int = 1,
    per_gpu: bool = False,
) -> float:
    """KV bytes of one sequence of `context` tokens, rounded up to whole blocks.

    Sliding-window layers keep at most the window (itself rounded up to blocks).
    """
    tokens = tokens_in_blocks(context, block_size)
    windowed_layers = min(model.sliding_window_layers, model.layers) if model.sliding_window else 0
    window_tokens = min(tokens, tokens_in_blocks(model.sliding_window or context, block_size))
    layer_tokens = (model.layers - windowed_layers) * tokens + windowed_layers * window_tokens
    per_token_per_layer = kv_elements_per_token_per_layer(model) * kv.bytes_per_element
    if per_gpu and not model.is_mla:
        per_token_per_layer *= kv_heads_per_gpu(model, tp) / model.kv_heads
    return layer_tokens * per_token_per_layer


@dataclass(frozen=True)
class FitReport:
    """Per-GPU memory budget for a batch of sequences at one context length."""

    fits: bool
    gpus: int
    memory_per_gpu: int
    usable_per_gpu: float
    weights_per_gpu: float
    kv_per_gpu: float
    reserve_per_gpu: float
    needed_per_gpu: float
    headroom_per_gpu: float
    kv_capacity_per_gpu: float
    max_sequences: int
    max_context_at_batch: int
    blocks_per_gpu: int
    blocks_per_sequence: int


def fit_report(
    model: ModelSpec,
    gpu: GpuSpec,
    weights: WeightBytes,
    kv: KvFormat,
    *,
    batch: int,
    context: int,
    tp: int,
    mem_util: float,
    block_size: int,
    reserve_bytes: float,
) -> FitReport:
    usable = gpu.memory_bytes * mem_util
    weights_per_gpu = weights.total / tp
    kv_seq = kv_bytes_per_sequence(model, kv, context, block_size=block_size, tp=tp, per_gpu=True)
    kv_per_gpu = batch * kv_seq
    needed = weights_per_gpu + kv_per_gpu + reserve_bytes
    capacity = max(usable - weights_per_gpu - reserve_bytes, 0.0)
    block_bytes = block_size * kv_bytes_per_token_per_gpu(model, kv, tp)
    return FitReport(
        fits=needed <= usable,
        gpus=tp,
        memory_per_gpu=gpu.memory_bytes,
        usable_per_gpu=usable,
        weights_per_gpu=weights_per_gpu,
        kv_per_gpu=kv_per_gpu,
        reserve_per_gpu=reserve_bytes,
        needed_per_gpu=needed,
        headroom_per_gpu=usable - needed,
        kv_capacity_per_gpu=capacity,
        max_sequences=int(capacity // kv_seq) if kv_seq else 0,
        max_context_at_batch=max_context(model, kv, capacity, batch=batch, block_size=block_size, tp=tp),
        blocks_per_gpu=int(capacity // block_bytes) if block_bytes else 0,
        blocks_per_sequence=math.ceil(context / block_size),
    )


def max_context(
    model: ModelSpec, kv: KvFormat, capacity: float, *, batch: int, block_size: int, tp: int
) -> int:
    """The longest context (whole blocks) at which `batch` sequences fit in `capacity` bytes."""

    def fits(tokens: int) -> bool:
        return (
            batch * kv_bytes_per_sequence(model, kv, tokens, block_size=block_size, tp=tp, per_gpu=True)
            <= capacity
        )

    if not fits(block_size):
        return 0
    low, high = 1, 2
    while fits(high * block_size):
        low, high = high, high * 2
        if high > 1 << 40:  # sliding-window-only models never run out: say so with a huge number
            return high * block_size
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle * block_size) else (low, middle)
    return low * block_size


def validate_parallelism(model: ModelSpec, tp: int) -> None:
    """The engines' own rule: TP must split attention heads evenly, and KV heads or copies of them."""
    if tp < 1:
        raise ValidationError("Tensor-parallel degree must be at least 1.")
    if model.heads % tp:
        raise ValidationError(
            f"Tensor-parallel degree {tp} does not divide the {model.heads} attention heads of {model.name}; "
            f"pick a divisor of {model.heads}."
        )
    if not model.is_mla and model.kv_heads % tp and tp % model.kv_heads:
        raise ValidationError(
            f"Tensor-parallel degree {tp} and the {model.kv_heads} KV heads of {model.name} do not divide "
            "one another; engines refuse that split."
        )


def gib(value: float) -> float:
    return value / GIB
