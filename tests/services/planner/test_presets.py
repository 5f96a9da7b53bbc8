"""The presets against their published numbers: each model's config.json fields (copied
from the Hugging Face repository named in the preset's source), the parameter totals
from the model cards, and GPU datasheet figures."""

from __future__ import annotations

import pytest

from services.planner import memory
from services.planner.importers import model_from_config
from services.planner.presets import GPUS, MODELS
from services.planner.specs import MIB

# Fields of each preset's config.json as published on Hugging Face.
PUBLISHED_CONFIGS = {
    "llama-3-8b": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "max_position_embeddings": 131072,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 128256,
        "rope_theta": 500000.0,
    },
    "llama-3-70b": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 8192,
        "intermediate_size": 28672,
        "max_position_embeddings": 131072,
        "num_attention_heads": 64,
        "num_hidden_layers": 80,
        "num_key_value_heads": 8,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 128256,
    },
    "llama-3-405b": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 16384,
        "intermediate_size": 53248,
        "max_position_embeddings": 131072,
        "num_attention_heads": 128,
        "num_hidden_layers": 126,
        "num_key_value_heads": 8,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 128256,
    },
    "mixtral-8x22b": {
        "architectures": ["MixtralForCausalLM"],
        "model_type": "mixtral",
        "hidden_size": 6144,
        "intermediate_size": 16384,
        "max_position_embeddings": 65536,
        "num_attention_heads": 48,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 56,
        "num_key_value_heads": 8,
        "num_local_experts": 8,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 32768,
    },
    "deepseek-v3": {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "max_position_embeddings": 163840,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "num_hidden_layers": 61,
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 3,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 129280,
        "quantization_config": {
            "activation_scheme": "dynamic",
            "fmt": "e4m3",
            "quant_method": "fp8",
            "weight_block_size": [128, 128],
        },
    },
    "qwen2.5-7b": {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "max_position_embeddings": 32768,
        "max_window_layers": 28,
        "num_attention_heads": 28,
        "num_hidden_layers": 28,
        "num_key_value_heads": 4,
        "sliding_window": 131072,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "use_sliding_window": False,
        "vocab_size": 152064,
    },
    "qwen2.5-72b": {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 8192,
        "intermediate_size": 29568,
        "max_position_embeddings": 32768,
        "max_window_layers": 70,
        "num_attention_heads": 64,
        "num_hidden_layers": 80,
        "num_key_value_heads": 8,
        "sliding_window": 131072,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "use_sliding_window": False,
        "vocab_size": 152064,
    },
    "smollm2-135m": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 576,
        "intermediate_size": 1536,
        "max_position_embeddings": 8192,
        "num_attention_heads": 9,
        "num_hidden_layers": 30,
        "num_key_value_heads": 3,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "vocab_size": 49152,
    },
}

ARCHITECTURE_FIELDS = (
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "intermediate",
    "vocab",
    "tied_embeddings",
    "max_context",
    "qkv_bias",
    "experts",
    "experts_per_token",
    "shared_experts",
    "moe_intermediate",
    "dense_layers",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "sliding_window",
    "sliding_window_layers",
    "native_dtype",
)


def test_every_preset_has_its_published_config() -> None:
    assert set(PUBLISHED_CONFIGS) == set(MODELS)


@pytest.mark.parametrize("key", sorted(MODELS))
def test_preset_matches_published_config(key: str) -> None:
    preset = MODELS[key]
    from_config = model_from_config(PUBLISHED_CONFIGS[key], key=key, hf_id=preset.hf_id)
    for name in ARCHITECTURE_FIELDS:
        assert getattr(from_config, name) == getattr(preset, name), name
    assert preset.source.startswith(f"https://huggingface.co/{preset.hf_id}/")


@pytest.mark.parametrize("key", sorted(MODELS))
def test_parameter_counts_match_the_model_cards(key: str) -> None:
    preset = MODELS[key]
    params = memory.parameter_breakdown(preset)
    assert params.total == pytest.approx(preset.published_params, rel=0.005)
    if preset.published_active_params:
        assert params.active == pytest.approx(preset.published_active_params, rel=0.02)


def test_exact_parameter_counts_of_dense_llamas() -> None:
    # Hugging Face's safetensors totals for these repositories
    assert memory.parameter_breakdown(MODELS["llama-3-8b"]).total == 8_030_261_248
    assert memory.parameter_breakdown(MODELS["llama-3-405b"]).total == 405_853_388_800
    assert memory.parameter_breakdown(MODELS["smollm2-135m"]).total == 134_515_008
    assert memory.parameter_breakdown(MODELS["qwen2.5-7b"]).total == 7_615_616_512


def test_gpu_datasheet_figures() -> None:
    h100 = GPUS["h100-sxm"]
    assert (h100.memory_bytes, h100.bandwidth_bytes_s, h100.bf16_tflops, h100.fp8_tflops) == (
        81559 * MIB,
        3.35e12,
        989.5,
        1979,
    )
    assert GPUS["h200"].bandwidth_bytes_s == 4.8e12
    assert GPUS["b200"].bandwidth_bytes_s == 8.0e12
    assert GPUS["a100-80gb"].bandwidth_bytes_s == 2.039e12 and GPUS["a100-80gb"].fp8_tflops is None
    assert GPUS["l40s"].bandwidth_bytes_s == 864e9
    assert GPUS["rtx-4090"].bandwidth_bytes_s == 1008e9
    for gpu in GPUS.values():
        assert gpu.source.startswith("https://")
        assert gpu.fp8_tflops is None or gpu.fp8_tflops >= gpu.bf16_tflops
