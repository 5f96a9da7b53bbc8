"""How vLLM is started: `vllm serve` or its OpenAI image, prefix caching and cached-token counts on."""

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

IMAGE = "vllm/vllm-openai:latest"


def build(o: LaunchOptions) -> Launched:
    def args(host: str) -> list[str | None]:
        return [
            listen(o, host),
            arg("--tensor-parallel-size", o.gpus),
            arg("--max-model-len", o.max_model_len),
            arg("--gpu-memory-utilization", o.gpu_memory_utilization),
            "--enable-prefix-caching" if o.prefix_caching else "--no-enable-prefix-caching",
            "--enable-prompt-tokens-details",
            "--enable-per-request-metrics",
            f"--served-model-name {q(o.served_model_name)}" if o.served_model_name else None,
        ]

    plain = lines(f"vllm serve {q(o.model)}", *args(o.bind_host))
    docker = lines(
        "docker run --gpus all --ipc=host",
        *hub_image(o, IMAGE),
        f"--model {q(o.model)}",
        *args(CONTAINER_HOST),
    )
    notes = ["--gpu-memory-utilization is the share of each GPU for weights, activations and KV cache."]
    return Launched(plain, docker, notes)


LAUNCH = KindLaunch(
    "vllm",
    "vLLM",
    8000,
    IMAGE,
    build,
    order=10,
    metrics="/metrics is always on; --enable-prompt-tokens-details adds cached-token counts to usage, "
    "--enable-per-request-metrics each request's own queue, prefill and decode times.",
    source="https://docs.vllm.ai/en/latest/cli/serve.html",
    docker_head=("--model", "{model}"),
)
