"""TensorRT-LLM beside the other engines: its features (each with a source), the hardware it runs
on, and its score under each of the Planner's constraints."""

from __future__ import annotations

from services.engines.reference import Cell, KindReference

DOCS = "https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source"

REFERENCE = KindReference(
    "trtllm",
    cells={
        "Paged KV cache": Cell(
            "Yes: paged KV cache in blocks (tokens_per_block)", f"{DOCS}/features/kvcache.md"
        ),
        "Prefix caching": Cell(
            "Yes: KV cache block reuse (kv_cache_config.enable_block_reuse), with host offloading",
            f"{DOCS}/features/kvcache.md",
        ),
        "Continuous batching": Cell(
            "Yes: in-flight batching", f"{DOCS}/features/paged-attention-ifb-scheduler.md"
        ),
        "Quantisation formats": Cell(
            "FP8, NVFP4, INT8 SmoothQuant, INT4/INT8 weight-only, INT4 AWQ, GPTQ, W4A8, FP8/INT8 KV cache",
            f"{DOCS}/features/quantization.md",
        ),
        "Structured output": Cell(
            "xgrammar, llguidance (guided_decoding_backend)", f"{DOCS}/features/guided-decoding.md"
        ),
        "Speculative decoding": Cell(
            "EAGLE-3, MTP, Medusa, ReDrafter, draft-target, n-gram, lookahead",
            f"{DOCS}/features/speculative-decoding.md",
        ),
        "Multi-GPU (TP/PP/EP)": Cell(
            "TP (--tp_size), PP (--pp_size), EP (--ep_size), attention DP, context parallel",
            f"{DOCS}/features/parallel-strategy.md",
        ),
        "Hardware": Cell(
            "NVIDIA GPUs only (Ampere, Ada, Hopper, Blackwell)", f"{DOCS}/reference/support-matrix.md"
        ),
        "Prometheus metrics": Cell(
            "/prometheus/metrics only with return_perf_metrics: true in the YAML",
            "tensorrt_llm/serve/openai_server.py (mount_metrics)",
        ),
    },
    hardware=frozenset({"nvidia-consumer", "nvidia-datacenter"}),
    scores={
        ("traffic", "interactive"): (2, "in-flight batching with tuned NVIDIA kernels"),
        ("traffic", "high-throughput"): (3, "highest peak throughput on NVIDIA with FP8/FP4 kernels"),
        ("traffic", "offline-batch"): (2, "fastest kernels, more setup per model"),
        ("prefix_sharing", "some"): (1, "KV block reuse"),
        ("prefix_sharing", "heavy"): (2, "KV block reuse with host offload"),
        ("structured_output", True): (1, "xgrammar/llguidance backends"),
        ("operations", "simplest"): (-2, "NGC containers, YAML options and per-model tuning"),
        ("operations", "max-performance"): (3, "NVIDIA's tuned kernels, FP8/NVFP4, EP/attention-DP"),
        ("model_format", "gguf"): (-3, "no GGUF support"),
        ("gpus", "several"): (2, "tensor, pipeline and expert parallelism"),
    },
)
