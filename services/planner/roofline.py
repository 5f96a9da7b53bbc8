"""Speed limits from first principles: how fast decode and prefill can possibly go.

Decode: every step streams the weights once (shared by the whole batch) plus each
sequence's KV cache, so the memory bound is bandwidth / bytes per step, times the
batch. Compute bound: peak FLOP/s / FLOPs per token. The achievable ceiling is the
lower of the two; the batch where they cross is where decode turns compute-bound.

Prefill: a prompt is one big matrix multiply, so the bound is FLOPs (2 x active
parameters per token plus attention over the prompt), not bandwidth.

With tensor parallelism each of the `tp` GPUs streams its share over its own memory
bus and computes its share of the FLOPs; communication is left out (a ceiling).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.planner.memory import (
    WeightBytes,
    kv_bytes_per_sequence,
    parameter_breakdown,
    weight_bytes_read,
)
from services.planner.specs import GpuSpec, KvFormat, ModelSpec, WeightFormat

MAX_BATCH_SEARCHED = 1 << 20


def linear_flops_per_token(model: ModelSpec) -> float:
    """2 FLOPs per active matmul weight; the embedding lookup is a gather, the head is a matmul."""
    params = parameter_breakdown(model)
    matmul_params = params.active - params.embedding - params.norms
    if model.tied_embeddings:
        matmul_params += params.embedding  # the output head reuses the table
    return 2.0 * matmul_params


def _attention_dims(model: ModelSpec) -> tuple[int, int]:
    """(query-key dim, value dim) per head as attention runs over the cache.

    MLA in its absorbed (decode) form scores against the latent plus RoPE key and
    reads values from the latent.
    """
    if model.is_mla:
        return model.kv_lora_rank + model.qk_rope_head_dim, model.kv_lora_rank
    return model.head_dim, model.head_dim


def attention_flops_per_token(model: ModelSpec, position: int) -> float:
    """FLOPs for one new token attending over `position` cached tokens (QK^T and AV)."""
    qk, v = _attention_dims(model)
    windowed = min(model.sliding_window_layers, model.layers) if model.sliding_window else 0
    span_full = position
    span_window = min(position, model.sliding_window or position)
    layer_span = (model.layers - windowed) * span_full + windowed * span_window
    return 2.0 * model.heads * (qk + v) * layer_span


def prefill_attention_flops(model: ModelSpec, prompt: int) -> float:
    """Causal attention FLOPs for a whole prompt: token i attends to i tokens."""
    qk, v = _attention_dims(model)
    windowed = min(model.sliding_window_layers, model.layers) if model.sliding_window else 0
    full_pairs = prompt * (prompt + 1) / 2
    w = model.sliding_window or prompt
    if prompt <= w:
        window_pairs = full_pairs
    else:
        window_pairs = w * (w + 1) / 2 + (prompt - w) * w
    pairs = (model.layers - windowed) * full_pairs + windowed * window_pairs
    return 2.0 * model.heads * (qk + v) * pairs


@dataclass(frozen=True)
class DecodePoint:
    """The decode ceiling at one batch size and context length."""

    batch: int
    context: int
    bytes_per_step_per_gpu: float
    flops_per_step_per_gpu: float
    memory_time_s: float
    compute_time_s: float
    memory_bound_tok_s: float
    compute_bound_tok_s: float
    bound_tok_s: float
    per_sequence_tok_s: float
    limited_by: str
    arithmetic_intensity: float


@dataclass(frozen=True)
class Roofline:
    """Everything the roofline needs, fixed for one model/GPU/format/TP choice."""

    model: ModelSpec
    gpu: GpuSpec
    fmt: WeightFormat
    kv: KvFormat
    weights: WeightBytes
    tp: int
    block_size: int = 1

    @property
    def peak_flops_per_gpu(self) -> float:
        return self.gpu.peak_flops(self.fmt.compute)

    @property
    def ridge_point(self) -> float:
        """FLOPs per byte above which the GPU is compute-bound."""
        return self.peak_flops_per_gpu / self.gpu.bandwidth_bytes_s

    def decode(self, batch: int, context: int) -> DecodePoint:
        kv_seq = kv_bytes_per_sequence(
            self.model, self.kv, context, block_size=1, tp=self.tp, per_gpu=True
        )
        weights_read = weight_bytes_read(self.model, self.weights, batch) / self.tp
        bytes_step = weights_read + batch * kv_seq
        flops_token = linear_flops_per_token(self.model) + attention_flops_per_token(self.model, context)
        flops_step = batch * flops_token / self.tp
        memory_time = bytes_step / self.gpu.bandwidth_bytes_s
        compute_time = flops_step / self.peak_flops_per_gpu
        step = max(memory_time, compute_time)
        return DecodePoint(
            batch=batch,
            context=context,
            bytes_per_step_per_gpu=bytes_step,
            flops_per_step_per_gpu=flops_step,
            memory_time_s=memory_time,
            compute_time_s=compute_time,
            memory_bound_tok_s=batch / memory_time,
            compute_bound_tok_s=batch / compute_time,
            bound_tok_s=batch / step,
            per_sequence_tok_s=1 / step,
            limited_by="memory bandwidth" if memory_time >= compute_time else "compute",
            arithmetic_intensity=flops_step / bytes_step,
        )

    def crossover_batch(self, context: int) -> int | None:
        """Smallest batch at which decode turns compute-bound; None if it never does.

        Long contexts can keep decode memory-bound at any batch: each sequence brings
        its own KV bytes, so adding sequences adds bytes as fast as FLOPs.
        """

        def compute_bound(batch: int) -> bool:
            point = self.decode(batch, context)
            return point.compute_time_s >= point.memory_time_s

        if compute_bound(1):
            return 1
        high = 2
        while not compute_bound(high):
            high *= 2
            if high > MAX_BATCH_SEARCHED:
                return None
        low = high // 2
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if compute_bound(middle) else (middle, high)
        return high

    def prefill(self, prompt: int) -> PrefillPoint:
        linear = linear_flops_per_token(self.model) * prompt
        flops = (linear + prefill_attention_flops(self.model, prompt)) / self.tp
        compute_time = flops / self.peak_flops_per_gpu
        memory_time = (
            weight_bytes_read(self.model, self.weights, prompt) / self.tp / self.gpu.bandwidth_bytes_s
        )
        time = max(compute_time, memory_time)
        return PrefillPoint(
            prompt=prompt,
            flops_per_gpu=flops,
            compute_time_s=compute_time,
            memory_time_s=memory_time,
            ttft_lower_bound_s=time,
            bound_tok_s=prompt / time,
            limited_by="compute" if compute_time >= memory_time else "memory bandwidth",
        )

    def curve(self, context: int, batches: list[int]) -> list[DecodePoint]:
        return [self.decode(b, context) for b in batches]


@dataclass(frozen=True)
class PrefillPoint:
    prompt: int
    flops_per_gpu: float
    compute_time_s: float
    memory_time_s: float
    ttft_lower_bound_s: float
    bound_tok_s: float
    limited_by: str


def batch_grid(up_to: int, extra: tuple[int, ...] = (), minimum: int = 1024) -> list[int]:
    """Powers of two up to `up_to` (at least `minimum`), plus any batches to mark on a chart
    that lie within that range."""
    limit = max(up_to, minimum, 1)
    grid = {1 << i for i in range(limit.bit_length() + 1) if (1 << i) <= limit}
    grid.update(b for b in extra if b and 0 < b <= limit)
    return sorted(grid)


@dataclass(frozen=True)
class BoundComparison:
    """A measured decode rate against the roofline ceiling at the same batch and context."""

    achieved_tok_s: float
    bound_tok_s: float
    fraction: float
    limited_by: str
    batch: int
    context: int


def compare_to_bound(
    roofline: Roofline, achieved_tok_s: float, *, batch: int, context: int
) -> BoundComparison:
    point = roofline.decode(batch, context)
    return BoundComparison(
        achieved_tok_s=achieved_tok_s,
        bound_tok_s=point.bound_tok_s,
        fraction=achieved_tok_s / point.bound_tok_s,
        limited_by=point.limited_by,
        batch=batch,
        context=context,
    )
