"""vLLM beside the other engines: its features (each with a source), the hardware it runs
on, and its score under each of the Planner's constraints."""

from __future__ import annotations

from services.engines.reference import Cell, KindReference

DOCS = "https://docs.vllm.ai/en/latest"

REFERENCE = KindReference(
    "vllm",
    cells={
        "Paged KV cache": Cell(
            "Yes: PagedAttention, blocks of 16 tokens by default (--block-size)",
            f"{DOCS}/design/paged_attention.html",
        ),
        "Prefix caching": Cell(
            "Yes, on by default (V1): automatic, hash of each full block chained to its prefix",
            f"{DOCS}/design/prefix_caching.html",
        ),
        "Continuous batching": Cell("Yes (token-level scheduler, chunked prefill)", f"{DOCS}/"),
        "Quantisation formats": Cell(
            "FP8, INT8 W8A8, GPTQ, AWQ, Marlin, bitsandbytes, GGUF (experimental), compressed-tensors, NVFP4/MXFP4, FP8 KV cache",
            f"{DOCS}/features/quantization/",
        ),
        "Structured output": Cell(
            "xgrammar, guidance (llguidance); outlines and lm-format-enforcer backends in vllm/v1/structured_output",
            f"{DOCS}/features/structured_outputs/",
        ),
        "Speculative decoding": Cell(
            "EAGLE/EAGLE-3, MTP, draft model, n-gram, Medusa, suffix",
            f"{DOCS}/features/spec_decode.html",
        ),
        "Multi-GPU (TP/PP/EP)": Cell(
            "TP, PP, DP, EP (--enable-expert-parallel), multi-node via Ray",
            f"{DOCS}/serving/parallelism_scaling.html",
        ),
        "Hardware": Cell(
            "NVIDIA, AMD ROCm, Intel XPU/Gaudi, Google TPU, AWS Neuron, CPU (x86, Arm, POWER)",
            f"{DOCS}/getting_started/installation/",
        ),
        "Prometheus metrics": Cell(
            "/metrics always on (vllm: prefix)",
            "vllm/entrypoints/serve/instrumentator/metrics.py (vLLM 0.33)",
        ),
    },
    hardware=frozenset({"amd", "cpu", "intel-gaudi", "nvidia-consumer", "nvidia-datacenter"}),
    scores={
        ("traffic", "single-user"): (1, "fine for one user, but its batching headroom goes unused"),
        ("traffic", "interactive"): (
            2,
            "continuous batching with chunked prefill keeps latency steady under load",
        ),
        ("traffic", "high-throughput"): (3, "paged KV cache and large-batch scheduling for throughput"),
        ("traffic", "offline-batch"): (3, "offline LLM API and large batches"),
        ("prefix_sharing", "some"): (1, "automatic prefix caching on by default"),
        ("prefix_sharing", "heavy"): (2, "block-level automatic prefix caching (full blocks only)"),
        ("structured_output", True): (2, "xgrammar/guidance backends, OpenAI json_schema"),
        ("operations", "simplest"): (1, "pip install or one container, sensible defaults"),
        ("operations", "max-performance"): (2, "broad kernel and parallelism support"),
        ("model_format", "gguf"): (-1, "GGUF support is experimental; prefer the HF checkpoint"),
        ("hardware", "cpu"): (0, "CPU backend exists (x86 AVX-512, Arm)"),
        ("gpus", "several"): (2, "tensor parallelism across the GPUs"),
    },
)
