"""How TensorRT-LLM is started: `trtllm-serve` (PyTorch backend) with perf metrics in its YAML."""

from __future__ import annotations

from services.engines.launching import (
    CONTAINER_HOST,
    KindLaunch,
    Launched,
    LaunchOptions,
    arg,
    hub_image,
    lines,
    listen,
    q,
)

#: A pinned release: NGC tags each release, and the notes ask for a current one.
IMAGE = "nvcr.io/nvidia/tensorrt-llm/release:1.0.0"


def build(o: LaunchOptions) -> Launched:
    yaml_lines = [
        "enable_iter_perf_stats: true",
        "return_perf_metrics: true",
        "kv_cache_config:",
        f"  enable_block_reuse: {'true' if o.prefix_caching else 'false'}",
    ]
    config = "cat > extra-llm-api-config.yml <<'EOF'\n" + "\n".join(yaml_lines) + "\nEOF\n"

    def args(host: str, config_path: str) -> list[str | None]:
        return [
            listen(o, host),
            "--backend pytorch",
            arg("--tp_size", o.gpus),
            arg("--max_seq_len", o.max_model_len),
            arg("--kv_cache_free_gpu_memory_fraction", o.gpu_memory_utilization),
            arg("--extra_llm_api_options", config_path),
        ]

    plain = config + lines(f"trtllm-serve {q(o.model)}", *args(o.bind_host, "extra-llm-api-config.yml"))
    docker = config + lines(
        "docker run --rm --gpus all --ipc=host --ulimit memlock=-1 --ulimit stack=67108864",
        *hub_image(o, IMAGE, '-v "$PWD/extra-llm-api-config.yml:/config.yml:ro"'),
        f"trtllm-serve {q(o.model)}",
        *args(CONTAINER_HOST, "/config.yml"),
    )
    notes = [
        "--kv_cache_free_gpu_memory_fraction is the share of memory left AFTER weights that goes to KV cache.",
        f"Pick a current release tag for {IMAGE.rsplit(':', 1)[0]} on NGC.",
    ]
    return Launched(plain, docker, notes)


LAUNCH = KindLaunch(
    "trtllm",
    "TensorRT-LLM",
    8000,
    IMAGE,
    build,
    order=30,
    metrics="return_perf_metrics: true mounts Prometheus text at /prometheus/metrics.",
    source="https://github.com/NVIDIA/TensorRT-LLM/blob/main/tensorrt_llm/commands/serve.py",
    docker_head=("trtllm-serve", "{model}"),
)
