"""Fill a ModelSpec from a Hugging Face `config.json` or from a GGUF file's header.

GGUF files are read with the `gguf` package (llama.cpp's own reader): the header's
architecture keys give the shape, and the tensor table gives the exact weight bytes.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.core.errors import ValidationError
from services.core.json_types import ForeignJson
from services.planner.catalog import slugify, validate_model
from services.planner.presets import GGUF_FILE_TYPES
from services.planner.specs import ModelSpec

TORCH_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "bf16",
    "float": "bf16",
}
QUANT_METHODS = {"fp8": "fp8", "awq": "int4-awq", "gptq": "int4-gptq"}


def _first(config: ForeignJson, *names: str) -> Any:
    for name in names:
        value = config.get(name)
        if value is not None:
            return value
    return None


def _int(config: ForeignJson, *names: str, default: int | None = None) -> int | None:
    value = _first(config, *names)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"config.json field {names[0]!r} should be a number, got {value!r}.")
    return int(value)


def _sliding_window(config: ForeignJson, layers: int) -> tuple[int | None, int]:
    """(window, windowed layer count) from the several ways configs say it."""
    window = config.get("sliding_window")
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        windowed = sum(1 for kind in layer_types if "sliding" in str(kind))
        return (int(window), windowed) if window and windowed else (None, 0)
    if not isinstance(window, int) or window <= 0 or config.get("use_sliding_window") is False:
        return None, 0
    pattern = config.get("sliding_window_pattern")
    if isinstance(pattern, int) and pattern > 0:
        return window, layers - layers // pattern  # every `pattern`-th layer is global
    if isinstance(config.get("max_window_layers"), int) and config.get("use_sliding_window"):
        return window, max(layers - int(config["max_window_layers"]), 0)
    return window, layers


def model_from_config(
    config: ForeignJson, *, key: str = "", name: str = "", hf_id: str | None = None
) -> ModelSpec:
    """A ModelSpec from the fields of a Hugging Face `config.json` (dict already parsed)."""
    if not isinstance(config, dict):
        raise ValidationError("config.json must hold a JSON object.")
    if isinstance(config.get("text_config"), dict):  # multimodal wrappers keep the LM one level down
        config = {**config, **config["text_config"]}
    layers = _int(config, "num_hidden_layers", "n_layer", "num_layers")
    hidden = _int(config, "hidden_size", "n_embd", "d_model")
    heads = _int(config, "num_attention_heads", "n_head")
    vocab = _int(config, "vocab_size")
    missing = [
        n
        for n, v in (
            ("num_hidden_layers", layers),
            ("hidden_size", hidden),
            ("num_attention_heads", heads),
            ("vocab_size", vocab),
        )
        if not v
    ]
    if missing:
        raise ValidationError(
            f"config.json lacks {', '.join(missing)}; is this a causal language model config?"
        )
    assert layers and hidden and heads and vocab
    kv_lora = _int(config, "kv_lora_rank", default=0) or 0
    kv_heads = _int(config, "num_key_value_heads", default=None)
    if kv_heads is None:
        kv_heads = 1 if config.get("multi_query") else heads
    head_dim = _int(config, "head_dim", default=None) or hidden // heads
    if kv_lora:
        head_dim = _int(config, "v_head_dim", default=head_dim) or head_dim
    experts = _int(config, "num_local_experts", "n_routed_experts", "num_experts", default=0) or 0
    window, windowed = _sliding_window(config, layers)
    quant = config.get("quantization_config") or {}
    dtype = QUANT_METHODS.get(str(quant.get("quant_method", "")).lower()) or TORCH_DTYPES.get(
        str(_first(config, "torch_dtype", "dtype") or "bfloat16"), "bf16"
    )
    model_type = str(config.get("model_type", ""))
    label = name or hf_id or model_type or "custom model"
    spec = ModelSpec(
        key=key or slugify(hf_id.split("/")[-1] if hf_id else label) or "custom-model",
        name=label,
        hf_id=hf_id,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=_int(config, "intermediate_size", "n_inner", "ffn_dim", default=4 * hidden)
        or 4 * hidden,
        vocab=vocab,
        tied_embeddings=bool(config.get("tie_word_embeddings", False)),
        max_context=_int(config, "max_position_embeddings", "n_positions", "seq_length", default=8192)
        or 8192,
        qkv_bias=bool(
            config.get("attention_bias") or config.get("qkv_bias") or model_type.startswith("qwen2")
        ),
        experts=experts,
        experts_per_token=(_int(config, "num_experts_per_tok", default=0) or 0) if experts else 0,
        shared_experts=(_int(config, "n_shared_experts", default=0) or 0)
        + (1 if config.get("shared_expert_intermediate_size") else 0),
        moe_intermediate=_int(config, "moe_intermediate_size", default=0) or 0,
        shared_expert_intermediate=_int(config, "shared_expert_intermediate_size", default=0) or 0,
        dense_layers=(_int(config, "first_k_dense_replace", default=0) or 0) if experts else 0,
        kv_lora_rank=kv_lora,
        q_lora_rank=_int(config, "q_lora_rank", default=0) or 0,
        qk_rope_head_dim=_int(config, "qk_rope_head_dim", default=0) or 0,
        qk_nope_head_dim=_int(config, "qk_nope_head_dim", default=0) or 0,
        v_head_dim=_int(config, "v_head_dim", default=0) or 0,
        sliding_window=window,
        sliding_window_layers=windowed,
        native_dtype=dtype,
        source=f"https://huggingface.co/{hf_id}/blob/main/config.json" if hf_id else "config.json",
        custom=True,
    )
    validate_model(spec)
    return spec


def model_from_config_text(text: str | bytes, **kwargs: Any) -> ModelSpec:
    try:
        config = json.loads(text)
    except ValueError as error:
        raise ValidationError(f"That is not valid JSON: {error}") from error
    return model_from_config(config, **kwargs)


@dataclass(frozen=True)
class GgufSummary:
    """What a GGUF header says, for display next to the ModelSpec made from it."""

    architecture: str
    file_type: str | None
    weight_format: str | None
    tensor_bytes: int
    parameters: int
    split_count: int


def model_from_gguf(path: str | Path, *, key: str = "", name: str = "") -> tuple[ModelSpec, GgufSummary]:
    """A ModelSpec from a GGUF file: shape from its metadata, exact weight bytes from its tensors."""
    # gguf takes 0.2 s to import: only reading a GGUF file needs it.
    from gguf import GGUFReader, LlamaFileType

    path = Path(path)
    if not path.is_file():
        raise ValidationError(f"No GGUF file at {path}.")
    try:
        reader = GGUFReader(path)
    except Exception as error:  # the reader raises bare ValueError/struct errors on foreign files
        raise ValidationError(f"{path.name} is not a readable GGUF file: {error}") from error

    def value(field_name: str) -> Any:
        field = reader.fields.get(field_name)
        return field.contents() if field is not None else None

    arch = value("general.architecture")
    if not arch:
        raise ValidationError(f"{path.name} has no general.architecture: not a model GGUF.")

    def arch_int(suffix: str, default: int | None = None) -> int | None:
        raw = value(f"{arch}.{suffix}")
        if isinstance(raw, list):  # per-layer arrays (some archs): take the common value
            raw = max(raw) if raw else None
        return int(raw) if raw is not None else default

    layers = arch_int("block_count")
    hidden = arch_int("embedding_length")
    heads = arch_int("attention.head_count")
    if not (layers and hidden and heads):
        raise ValidationError(f"{path.name} lacks block_count/embedding_length/head_count for {arch!r}.")
    tokens = reader.fields.get("tokenizer.ggml.tokens")
    vocab = arch_int("vocab_size") or (len(tokens.data) if tokens is not None else 0)
    tensor_names = {t.name for t in reader.tensors}
    kv_lora = arch_int("attention.kv_lora_rank", 0) or 0
    experts = arch_int("expert_count", 0) or 0
    # MLA files give the per-head query/key and value widths; the RoPE part is rope.dimension_count.
    rope_dim = arch_int("rope.dimension_count", 0) or 0
    k_length = arch_int("attention.key_length_mla") or arch_int("attention.key_length", 0) or 0
    v_length = arch_int("attention.value_length_mla") or arch_int("attention.value_length", 0) or 0
    window = arch_int("attention.sliding_window")
    pattern = arch_int("attention.sliding_window_pattern")
    windowed = (layers - layers // pattern if pattern else layers) if window else 0
    file_type_number = value("general.file_type")
    try:
        file_type = LlamaFileType(int(file_type_number)).name if file_type_number is not None else None
    except ValueError:
        file_type = None
    weight_format = GGUF_FILE_TYPES.get(file_type or "")
    split_count = int(value("split.count") or 1)
    tensor_bytes = int(sum(int(t.n_bytes) for t in reader.tensors))
    parameters = int(sum(int(t.n_elements) for t in reader.tensors))
    label = name or str(value("general.name") or path.stem)
    spec = ModelSpec(
        key=key or slugify(path.stem) or "gguf-model",
        name=label,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=arch_int("attention.head_count_kv", heads) or heads,
        head_dim=(v_length if kv_lora else arch_int("attention.key_length")) or hidden // heads,
        intermediate=arch_int("feed_forward_length", 4 * hidden) or 4 * hidden,
        vocab=vocab,
        tied_embeddings="output.weight" not in tensor_names,
        max_context=arch_int("context_length", 8192) or 8192,
        qkv_bias="blk.0.attn_q.bias" in tensor_names,
        experts=experts,
        experts_per_token=(arch_int("expert_used_count", 0) or 0) if experts else 0,
        shared_experts=(arch_int("expert_shared_count", 0) or 0) if experts else 0,
        moe_intermediate=(arch_int("expert_feed_forward_length", 0) or 0) if experts else 0,
        dense_layers=(arch_int("leading_dense_block_count", 0) or 0) if experts else 0,
        kv_lora_rank=kv_lora,
        q_lora_rank=arch_int("attention.q_lora_rank", 0) or 0,
        qk_rope_head_dim=rope_dim if kv_lora else 0,
        qk_nope_head_dim=max(k_length - rope_dim, 0) if kv_lora else 0,
        v_head_dim=v_length if kv_lora else 0,
        sliding_window=window,
        sliding_window_layers=windowed,
        native_dtype=weight_format or "bf16",
        source=f"GGUF header of {path.name}",
        # A split file holds only its share of the tensors: its bytes are not the model's.
        file_weight_bytes=tensor_bytes if split_count == 1 and weight_format else None,
        file_dtype=weight_format if split_count == 1 else None,
        custom=True,
    )
    validate_model(spec)
    summary = GgufSummary(
        architecture=str(arch),
        file_type=file_type,
        weight_format=weight_format,
        tensor_bytes=tensor_bytes,
        parameters=parameters,
        split_count=split_count,
    )
    return spec, summary


def model_from_gguf_bytes(data: bytes, filename: str, **kwargs: Any) -> tuple[ModelSpec, GgufSummary]:
    """Same as `model_from_gguf` for an uploaded file (written to a temporary file first)."""
    with tempfile.TemporaryDirectory(prefix="shootout-gguf-") as folder:
        path = Path(folder) / (Path(filename).name or "upload.gguf")
        path.write_bytes(data)
        spec, summary = model_from_gguf(path, **kwargs)
    return spec, summary
