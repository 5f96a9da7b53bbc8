"""Ollama beside the other engines: its features (each with a source), the hardware it runs
on, and its score under each of the Planner's constraints."""

from __future__ import annotations

from services.engines.reference import Cell, KindReference

REPO = "https://github.com/ollama/ollama/blob/main"

REFERENCE = KindReference(
    "ollama",
    cells={
        "Paged KV cache": Cell(
            "No: runs llama.cpp-style per-model KV buffers", f"{REPO}/llm/llama_server.go"
        ),
        "Prefix caching": Cell(
            "Per slot prompt reuse (from the llama.cpp runner)", f"{REPO}/llm/llama_server.go"
        ),
        "Continuous batching": Cell(
            "Parallel slots per model (OLLAMA_NUM_PARALLEL)", f"{REPO}/docs/faq.md"
        ),
        "Quantisation formats": Cell(
            "GGUF (Q4_0, Q4_K_M, Q8_0, F16, …); KV cache q8_0/q4_0 (OLLAMA_KV_CACHE_TYPE)",
            f"{REPO}/docs/faq.md",
        ),
        "Structured output": Cell("JSON mode and JSON schema via `format`", f"{REPO}/docs/api.md"),
        "Speculative decoding": Cell("No", f"{REPO}/docs/faq.md"),
        "Multi-GPU (TP/PP/EP)": Cell(
            "Layer split across GPUs when a model does not fit one; no TP", f"{REPO}/docs/faq.md"
        ),
        "Hardware": Cell("CPU, NVIDIA CUDA, AMD ROCm, Apple Metal", f"{REPO}/docs/gpu.md"),
        "Prometheus metrics": Cell(
            "No: only /api/ps and per-response timings", f"{REPO}/server/routes.go"
        ),
    },
    hardware=frozenset({"amd", "apple", "cpu", "nvidia-consumer", "nvidia-datacenter"}),
    scores={
        ("traffic", "single-user"): (3, "one command to pull and serve a model for one user"),
        ("traffic", "high-throughput"): (-3, "built for local use, not for high concurrency"),
        ("traffic", "offline-batch"): (-2, "not designed for bulk jobs"),
        ("prefix_sharing", "heavy"): (-1, "prefix reuse only within a slot, no control"),
        ("structured_output", True): (1, "JSON schema via `format`"),
        ("operations", "simplest"): (3, "single binary, model library, no flags to tune"),
        ("operations", "max-performance"): (-2, "few knobs to tune"),
        ("model_format", "gguf"): (3, "GGUF is Ollama's native format"),
        ("hardware", "apple"): (2, "Metal via its llama.cpp runner"),
        ("gpus", "several"): (-2, "splits layers only when a model does not fit one GPU"),
    },
)
