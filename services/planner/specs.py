"""The planner's records: a model's architecture, a GPU's limits, a weight format.

Everything here is plain data. The maths lives in `memory` and `roofline`; the
published numbers live in `presets`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Literal, TypedDict, cast

GIB = 1024**3
GB = 1000**3
MIB = 1024**2

WeightScope = Literal["linear", "all"]
ComputeKind = Literal["bf16", "fp8", "int8"]


class ModelSpecJson(TypedDict, total=False):
    """A ModelSpec as the user's presets file stores it (`to_dict`); an older file may lack a key."""

    key: str
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    max_context: int
    qkv_bias: bool
    hf_id: str | None
    experts: int
    experts_per_token: int
    shared_experts: int
    moe_intermediate: int
    shared_expert_intermediate: int
    dense_layers: int
    kv_lora_rank: int
    q_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    sliding_window: int | None
    sliding_window_layers: int
    native_dtype: str
    published_params: float | None
    published_active_params: float | None
    source: str
    file_weight_bytes: int | None
    file_dtype: str | None
    custom: bool


@dataclass(frozen=True)
class ModelSpec:
    """The architecture numbers that decide memory and speed.

    Dense GQA/MHA models need the first block only. Mixture-of-experts models set
    `experts` (routed experts per MoE layer) and `experts_per_token`; DeepSeek-style
    models also keep `dense_layers` leading dense layers and `shared_experts`.
    Multi-head latent attention (MLA) is on when `kv_lora_rank` > 0: the cache then
    holds one compressed latent plus the RoPE key per token per layer.
    """

    key: str
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool = False
    max_context: int = 8192
    qkv_bias: bool = False
    hf_id: str | None = None
    # Mixture of experts
    experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    moe_intermediate: int = 0
    shared_expert_intermediate: int = 0
    dense_layers: int = 0
    # Multi-head latent attention (DeepSeek-V2/V3)
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # Sliding-window attention: how many of the layers only keep the last `sliding_window` tokens
    sliding_window: int | None = None
    sliding_window_layers: int = 0
    native_dtype: str = "bf16"
    published_params: float | None = None
    published_active_params: float | None = None
    source: str = ""
    # Set when the numbers came from a GGUF file: its exact tensor bytes and weight format
    file_weight_bytes: int | None = None
    file_dtype: str | None = None
    custom: bool = False

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def attention_kind(self) -> str:
        if self.is_mla:
            return "MLA"
        if self.kv_heads == 1:
            return "MQA"
        return "MHA" if self.kv_heads == self.heads else "GQA"

    def to_dict(self) -> ModelSpecJson:
        return cast(ModelSpecJson, asdict(self))

    @classmethod
    def from_dict(cls, data: ModelSpecJson) -> ModelSpec:
        known = {f.name for f in fields(cls)}
        # A key this version does not know (a file of another version) is left out.
        return cls(**cast(ModelSpecJson, {k: v for k, v in data.items() if k in known}))


class GpuSpecJson(TypedDict, total=False):
    """A GpuSpec as the user's presets file stores it (`to_dict`); an older file may lack a key."""

    key: str
    name: str
    memory_bytes: int
    bandwidth_bytes_s: float
    bf16_tflops: float
    fp8_tflops: float | None
    int8_tops: float | None
    vendor: str
    source: str
    note: str
    custom: bool


@dataclass(frozen=True)
class GpuSpec:
    """One accelerator: memory as the driver reports it, peak bandwidth, dense tensor FLOPS.

    FLOPS are dense (no 2:4 sparsity). `fp8_tflops`/`int8_tops` are None where the
    hardware has no such tensor path (A100 has no FP8; Apple GPUs have neither).
    """

    key: str
    name: str
    memory_bytes: int
    bandwidth_bytes_s: float
    bf16_tflops: float
    fp8_tflops: float | None = None
    int8_tops: float | None = None
    vendor: str = "nvidia"
    source: str = ""
    note: str = ""
    custom: bool = False

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GIB

    def peak_flops(self, compute: ComputeKind) -> float:
        """FLOP/s for a compute kind, falling back to BF16 where the GPU lacks the faster path."""
        table = {"bf16": self.bf16_tflops, "fp8": self.fp8_tflops, "int8": self.int8_tops}
        value = table.get(compute) or self.bf16_tflops
        return value * 1e12

    def to_dict(self) -> GpuSpecJson:
        return cast(GpuSpecJson, asdict(self))

    @classmethod
    def from_dict(cls, data: GpuSpecJson) -> GpuSpec:
        known = {f.name for f in fields(cls)}
        return cls(**cast(GpuSpecJson, {k: v for k, v in data.items() if k in known}))


@dataclass(frozen=True)
class WeightFormat:
    """How weights are stored: bits per weight, and which tensors the format covers.

    scope "linear": only the transformer's linear layers are quantised; embeddings,
    the output head, norms and routers stay 16-bit (vLLM/SGLang FP8, INT8, AWQ, GPTQ
    checkpoints). scope "all": `bits_per_weight` is already the whole-file average
    (BF16, or a GGUF mix measured over a whole model).
    """

    key: str
    label: str
    bits_per_weight: float
    scope: WeightScope
    compute: ComputeKind
    family: Literal["hf", "gguf"]
    source: str
    note: str = ""
    block_bits_per_weight: float | None = None


@dataclass(frozen=True)
class KvFormat:
    """The element type of the KV cache."""

    key: str
    label: str
    bytes_per_element: float
    source: str = ""


@dataclass
class ParamBreakdown:
    """Parameter counts by group, derived from the architecture."""

    embedding: int = 0
    lm_head: int = 0
    norms: int = 0
    attention: int = 0
    dense_mlp: int = 0
    router: int = 0
    routed_experts: int = 0
    routed_expert_each: int = 0
    shared_experts: int = 0
    total: int = 0
    active: int = 0
    groups: dict[str, int] = field(default_factory=dict)
