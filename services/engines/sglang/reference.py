"""SGLang beside the other engines: its features (each with a source), the hardware it runs
on, and its score under each of the Planner's constraints."""

from __future__ import annotations

from services.engines.reference import Cell, KindReference

DOCS = "https://docs.sglang.io"

REFERENCE = KindReference(
    "sglang",
    cells={
        "Paged KV cache": Cell(
            "Yes: token-granular pool (--page-size 1 by default)",
            f"{DOCS}/advanced_features/server_arguments.html",
        ),
        "Prefix caching": Cell(
            "Yes, on by default: RadixAttention, a radix tree over tokens with LRU eviction (--disable-radix-cache turns it off); HiCache adds host/storage tiers",
            "https://arxiv.org/abs/2312.07104",
        ),
        "Continuous batching": Cell(
            "Yes (overlap scheduler, chunked prefill)", f"{DOCS}/advanced_features/server_arguments.html"
        ),
        "Quantisation formats": Cell(
            "FP8, INT8 W8A8, AWQ, GPTQ, GGUF, bitsandbytes, ModelOpt FP4, MXFP4, torchao, FP8 KV cache",
            f"{DOCS}/advanced_features/quantization.html",
        ),
        "Structured output": Cell(
            "xgrammar (default), outlines, llguidance (--grammar-backend)",
            f"{DOCS}/advanced_features/structured_outputs.html",
        ),
        "Speculative decoding": Cell(
            "EAGLE-2, EAGLE-3, MTP, standalone draft model, n-gram (CUDA)",
            f"{DOCS}/docs/advanced_features/speculative_decoding",
        ),
        "Multi-GPU (TP/PP/EP)": Cell(
            "TP (--tp), PP (--pp-size), DP, EP (--ep-size), DP attention",
            f"{DOCS}/advanced_features/server_arguments.html",
        ),
        "Hardware": Cell(
            "NVIDIA, AMD, Intel Xeon CPU, Intel XPU, Ascend NPU, TPU",
            "https://github.com/sgl-project/sglang#readme",
        ),
        "Prometheus metrics": Cell(
            "/metrics only with --enable-metrics (sglang: prefix)",
            "python/sglang/srt/entrypoints/http_server.py (SGLang 0.5.23)",
        ),
    },
    hardware=frozenset({"amd", "cpu", "nvidia-consumer", "nvidia-datacenter"}),
    scores={
        ("traffic", "single-user"): (1, "fine for one user, but its batching headroom goes unused"),
        ("traffic", "interactive"): (2, "overlap scheduler keeps token latency low with many users"),
        ("traffic", "high-throughput"): (3, "among the fastest open-source engines at high concurrency"),
        ("traffic", "offline-batch"): (3, "offline engine API and large batches"),
        ("prefix_sharing", "some"): (1, "RadixAttention on by default"),
        ("prefix_sharing", "heavy"): (
            3,
            "RadixAttention shares any common token prefix across requests (multi-turn, agents, few-shot)",
        ),
        ("structured_output", True): (2, "xgrammar by default, grammar work overlapped with decoding"),
        ("operations", "max-performance"): (
            2,
            "many performance knobs (DP attention, EP, speculative decoding)",
        ),
        ("model_format", "gguf"): (-1, "GGUF loads, but HF checkpoints are the well-trodden path"),
        ("gpus", "several"): (2, "tensor and expert parallelism across the GPUs"),
    },
)
