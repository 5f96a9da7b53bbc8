"""Published numbers: model architectures (from each model's config.json), GPU limits
(from the vendor's datasheet, dense figures) and weight formats (real bits per weight).

Each entry names its source. GPU memory is the total `nvidia-smi` reports, which is
what a memory-utilisation fraction applies to (an "80 GB" H100 reports 81,559 MiB).
"""

from __future__ import annotations

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

from services.planner.specs import GIB, MIB, GpuSpec, KvFormat, ModelSpec, WeightFormat

HF = "https://huggingface.co/{}/blob/main/config.json"

MODELS: dict[str, ModelSpec] = {
    m.key: m
    for m in [
        ModelSpec(
            key="llama-3-8b",
            name="Llama 3.1 8B",
            hf_id="meta-llama/Llama-3.1-8B-Instruct",
            layers=32,
            hidden=4096,
            heads=32,
            kv_heads=8,
            head_dim=128,
            intermediate=14336,
            vocab=128256,
            max_context=131072,
            published_params=8.03e9,
            source=HF.format("meta-llama/Llama-3.1-8B-Instruct"),
        ),
        ModelSpec(
            key="llama-3-70b",
            name="Llama 3.1 70B",
            hf_id="meta-llama/Llama-3.1-70B-Instruct",
            layers=80,
            hidden=8192,
            heads=64,
            kv_heads=8,
            head_dim=128,
            intermediate=28672,
            vocab=128256,
            max_context=131072,
            published_params=70.6e9,
            source=HF.format("meta-llama/Llama-3.1-70B-Instruct"),
        ),
        ModelSpec(
            key="llama-3-405b",
            name="Llama 3.1 405B",
            hf_id="meta-llama/Llama-3.1-405B-Instruct",
            layers=126,
            hidden=16384,
            heads=128,
            kv_heads=8,
            head_dim=128,
            intermediate=53248,
            vocab=128256,
            max_context=131072,
            published_params=405.85e9,
            source=HF.format("meta-llama/Llama-3.1-405B-Instruct"),
        ),
        ModelSpec(
            key="mixtral-8x22b",
            name="Mixtral 8x22B",
            hf_id="mistralai/Mixtral-8x22B-Instruct-v0.1",
            layers=56,
            hidden=6144,
            heads=48,
            kv_heads=8,
            head_dim=128,
            intermediate=16384,
            vocab=32768,
            max_context=65536,
            experts=8,
            experts_per_token=2,
            published_params=141e9,
            published_active_params=39e9,
            source=HF.format("mistralai/Mixtral-8x22B-Instruct-v0.1")
            + " ; totals: https://mistral.ai/news/mixtral-8x22b",
        ),
        ModelSpec(
            key="deepseek-v3",
            name="DeepSeek-V3",
            hf_id="deepseek-ai/DeepSeek-V3",
            layers=61,
            hidden=7168,
            heads=128,
            kv_heads=128,
            head_dim=128,
            intermediate=18432,
            vocab=129280,
            max_context=163840,
            experts=256,
            experts_per_token=8,
            shared_experts=1,
            moe_intermediate=2048,
            dense_layers=3,
            kv_lora_rank=512,
            q_lora_rank=1536,
            qk_rope_head_dim=64,
            qk_nope_head_dim=128,
            v_head_dim=128,
            native_dtype="fp8",
            published_params=671e9,
            published_active_params=37e9,
            source=HF.format("deepseek-ai/DeepSeek-V3")
            + " ; totals: https://github.com/deepseek-ai/DeepSeek-V3#1-introduction",
        ),
        ModelSpec(
            key="qwen2.5-7b",
            name="Qwen 2.5 7B",
            hf_id="Qwen/Qwen2.5-7B-Instruct",
            layers=28,
            hidden=3584,
            heads=28,
            kv_heads=4,
            head_dim=128,
            intermediate=18944,
            vocab=152064,
            max_context=32768,
            qkv_bias=True,
            published_params=7.61e9,
            source=HF.format("Qwen/Qwen2.5-7B-Instruct"),
        ),
        ModelSpec(
            key="qwen2.5-72b",
            name="Qwen 2.5 72B",
            hf_id="Qwen/Qwen2.5-72B-Instruct",
            layers=80,
            hidden=8192,
            heads=64,
            kv_heads=8,
            head_dim=128,
            intermediate=29568,
            vocab=152064,
            max_context=32768,
            qkv_bias=True,
            published_params=72.7e9,
            source=HF.format("Qwen/Qwen2.5-72B-Instruct"),
        ),
        ModelSpec(
            key="smollm2-135m",
            name="SmolLM2 135M",
            hf_id="HuggingFaceTB/SmolLM2-135M-Instruct",
            layers=30,
            hidden=576,
            heads=9,
            kv_heads=3,
            head_dim=64,
            intermediate=1536,
            vocab=49152,
            tied_embeddings=True,
            max_context=8192,
            published_params=134.5e6,
            source=HF.format("HuggingFaceTB/SmolLM2-135M-Instruct"),
        ),
    ]
}

NVIDIA_DENSE = "dense figures = the datasheet's sparsity figures halved"

GPUS: dict[str, GpuSpec] = {
    g.key: g
    for g in [
        GpuSpec(
            key="h100-sxm",
            name="NVIDIA H100 SXM 80GB",
            memory_bytes=81559 * MIB,
            bandwidth_bytes_s=3.35e12,
            bf16_tflops=989.5,
            fp8_tflops=1979,
            int8_tops=1979,
            source="https://www.nvidia.com/en-us/data-center/h100/",
            note=NVIDIA_DENSE,
        ),
        GpuSpec(
            key="h100-pcie",
            name="NVIDIA H100 PCIe 80GB",
            memory_bytes=81559 * MIB,
            bandwidth_bytes_s=2.0e12,
            bf16_tflops=756.5,
            fp8_tflops=1513,
            int8_tops=1513,
            source="https://www.nvidia.com/en-us/data-center/h100/",
            note=NVIDIA_DENSE,
        ),
        GpuSpec(
            key="h200",
            name="NVIDIA H200 SXM 141GB",
            memory_bytes=143771 * MIB,
            bandwidth_bytes_s=4.8e12,
            bf16_tflops=989.5,
            fp8_tflops=1979,
            int8_tops=1979,
            source="https://www.nvidia.com/en-us/data-center/h200/",
            note=NVIDIA_DENSE,
        ),
        GpuSpec(
            key="b200",
            name="NVIDIA B200 (HGX) 180GB",
            memory_bytes=183359 * MIB,
            bandwidth_bytes_s=8.0e12,
            bf16_tflops=2250,
            fp8_tflops=4500,
            int8_tops=4500,
            source="https://www.nvidia.com/en-us/data-center/hgx/ ; "
            "https://glennklockwood.com/garden/processors/B200",
            note="HGX B200 at 1,000 W; " + NVIDIA_DENSE,
        ),
        GpuSpec(
            key="a100-40gb",
            name="NVIDIA A100 SXM 40GB",
            memory_bytes=40960 * MIB,
            bandwidth_bytes_s=1.555e12,
            bf16_tflops=312,
            fp8_tflops=None,
            int8_tops=624,
            source="https://www.nvidia.com/en-us/data-center/a100/",
            note="no FP8 tensor cores: FP8 weights run weight-only (BF16 compute)",
        ),
        GpuSpec(
            key="a100-80gb",
            name="NVIDIA A100 SXM 80GB",
            memory_bytes=81920 * MIB,
            bandwidth_bytes_s=2.039e12,
            bf16_tflops=312,
            fp8_tflops=None,
            int8_tops=624,
            source="https://www.nvidia.com/en-us/data-center/a100/",
            note="no FP8 tensor cores: FP8 weights run weight-only (BF16 compute)",
        ),
        GpuSpec(
            key="l40s",
            name="NVIDIA L40S 48GB",
            memory_bytes=46068 * MIB,
            bandwidth_bytes_s=864e9,
            bf16_tflops=362.05,
            fp8_tflops=733,
            int8_tops=733,
            source="https://www.nvidia.com/en-us/data-center/l40s/",
            note="46,068 MiB with ECC on; " + NVIDIA_DENSE,
        ),
        GpuSpec(
            key="rtx-4090",
            name="NVIDIA GeForce RTX 4090 24GB",
            memory_bytes=24564 * MIB,
            bandwidth_bytes_s=1008e9,
            bf16_tflops=165.2,
            fp8_tflops=330.3,
            int8_tops=660.6,
            source="https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf",
            note="GeForce rates with FP32 accumulate (half the FP16-accumulate rate)",
        ),
        GpuSpec(
            key="apple-m4-max",
            name="Apple M4 Max 128GB",
            memory_bytes=128 * GIB,
            bandwidth_bytes_s=546e9,
            bf16_tflops=34,
            fp8_tflops=None,
            int8_tops=None,
            vendor="apple",
            source="https://www.apple.com/newsroom/2024/10/apple-introduces-m4-pro-and-m4-max/ ; "
            "https://www.gpuhunter.io/gpu/m4-max",
            note="unified memory; macOS lets the GPU wire about 75% by default; "
            "FP16 TFLOPS is a third-party estimate (Apple publishes none)",
        ),
        GpuSpec(
            key="apple-m3-ultra",
            name="Apple M3 Ultra 512GB",
            memory_bytes=512 * GIB,
            bandwidth_bytes_s=819e9,
            bf16_tflops=57,
            fp8_tflops=None,
            int8_tops=None,
            vendor="apple",
            source="https://www.apple.com/newsroom/2025/03/apple-reveals-m3-ultra-taking-apple-silicons-"
            "performance-to-new-extremes/ ; https://www.gpuhunter.io/gpu/m3-ultra",
            note="unified memory; macOS lets the GPU wire about 75% by default; "
            "FP16 TFLOPS is a third-party estimate (Apple publishes none)",
        ),
    ]
}


def _block_bits(type_name: str) -> float:
    """Bits per weight of one GGML block type, from the gguf library's own table."""
    elements, size = GGML_QUANT_SIZES[GGMLQuantizationType[type_name]]
    return size * 8 / elements


LLAMACPP_QUANT = "https://github.com/ggml-org/llama.cpp/blob/master/tools/quantize/README.md"
MIX_NOTE = "whole-file average measured on Llama 3.1 8B (mixes keep some tensors at higher precision)"
GROUP_128 = "4-bit weights + one FP16 scale and one 4-bit zero point per group of 128"

WEIGHT_FORMATS: dict[str, WeightFormat] = {
    f.key: f
    for f in [
        WeightFormat("bf16", "BF16", 16, "all", "bf16", "hf", "IEEE/bfloat16: 2 bytes per weight"),
        WeightFormat("fp16", "FP16", 16, "all", "bf16", "hf", "2 bytes per weight"),
        WeightFormat(
            "fp8",
            "FP8 (W8A8)",
            8,
            "linear",
            "fp8",
            "hf",
            "https://docs.vllm.ai/en/latest/features/quantization/fp8.html",
            "per-tensor or per-channel scales; embeddings and lm_head stay BF16",
        ),
        WeightFormat(
            "int8",
            "INT8 (W8A8)",
            8,
            "linear",
            "int8",
            "hf",
            "https://docs.vllm.ai/en/latest/features/quantization/int8.html",
            "embeddings and lm_head stay BF16",
        ),
        WeightFormat(
            "int4-awq",
            "INT4 AWQ (g128)",
            4 + 16 / 128 + 4 / 128,
            "linear",
            "bf16",
            "hf",
            "https://github.com/mit-han-lab/llm-awq",
            GROUP_128 + "; BF16 compute",
        ),
        WeightFormat(
            "int4-gptq",
            "INT4 GPTQ (g128)",
            4 + 16 / 128 + 4 / 128,
            "linear",
            "bf16",
            "hf",
            "https://github.com/ModelCloud/GPTQModel",
            GROUP_128 + "; BF16 compute",
        ),
        WeightFormat(
            "gguf-q8_0",
            "GGUF Q8_0",
            8.5008,
            "all",
            "bf16",
            "gguf",
            LLAMACPP_QUANT,
            MIX_NOTE,
            block_bits_per_weight=_block_bits("Q8_0"),
        ),
        WeightFormat(
            "gguf-q6_k",
            "GGUF Q6_K",
            6.5633,
            "all",
            "bf16",
            "gguf",
            LLAMACPP_QUANT,
            MIX_NOTE,
            block_bits_per_weight=_block_bits("Q6_K"),
        ),
        WeightFormat(
            "gguf-q5_k_m",
            "GGUF Q5_K_M",
            5.7036,
            "all",
            "bf16",
            "gguf",
            LLAMACPP_QUANT,
            MIX_NOTE,
            block_bits_per_weight=_block_bits("Q5_K"),
        ),
        WeightFormat(
            "gguf-q4_k_m",
            "GGUF Q4_K_M",
            4.8944,
            "all",
            "bf16",
            "gguf",
            LLAMACPP_QUANT,
            MIX_NOTE,
            block_bits_per_weight=_block_bits("Q4_K"),
        ),
        WeightFormat(
            "gguf-iq4_xs",
            "GGUF IQ4_XS",
            4.4597,
            "all",
            "bf16",
            "gguf",
            LLAMACPP_QUANT,
            MIX_NOTE,
            block_bits_per_weight=_block_bits("IQ4_XS"),
        ),
        WeightFormat(
            "gguf-q4_0",
            "GGUF Q4_0",
            _block_bits("Q4_0"),
            "all",
            "bf16",
            "gguf",
            "gguf.GGML_QUANT_SIZES",
            "block size only; a real file keeps some tensors larger",
            block_bits_per_weight=_block_bits("Q4_0"),
        ),
        WeightFormat(
            "gguf-q4_1",
            "GGUF Q4_1",
            _block_bits("Q4_1"),
            "all",
            "bf16",
            "gguf",
            "gguf.GGML_QUANT_SIZES",
            "block size only; a real file keeps some tensors larger",
            block_bits_per_weight=_block_bits("Q4_1"),
        ),
    ]
}

#: GGUF `general.file_type` names (gguf.LlamaFileType) to our weight format keys.
GGUF_FILE_TYPES = {
    "ALL_F32": None,
    "MOSTLY_F16": "fp16",
    "MOSTLY_BF16": "bf16",
    "MOSTLY_Q8_0": "gguf-q8_0",
    "MOSTLY_Q6_K": "gguf-q6_k",
    "MOSTLY_Q5_K_M": "gguf-q5_k_m",
    "MOSTLY_Q4_K_M": "gguf-q4_k_m",
    "MOSTLY_IQ4_XS": "gguf-iq4_xs",
    "MOSTLY_Q4_0": "gguf-q4_0",
    "MOSTLY_Q4_1": "gguf-q4_1",
}

KV_FORMATS: dict[str, KvFormat] = {
    k.key: k
    for k in [
        KvFormat("bf16", "BF16", 2),
        KvFormat("fp16", "FP16", 2),
        KvFormat("fp32", "FP32", 4),
        KvFormat(
            "fp8",
            "FP8 (e4m3/e5m2)",
            1,
            "https://docs.vllm.ai/en/latest/features/quantization/quantized_kvcache.html",
        ),
        KvFormat("q8_0", "GGUF q8_0 (llama.cpp -ctk/-ctv)", _block_bits("Q8_0") / 8, LLAMACPP_QUANT),
        KvFormat("q4_0", "GGUF q4_0 (llama.cpp -ctk/-ctv)", _block_bits("Q4_0") / 8, LLAMACPP_QUANT),
    ]
}
