"""How SGLang is started: `sglang.launch_server` or its image, with metrics and the cache report."""

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

IMAGE = "lmsysorg/sglang:latest"


def build(o: LaunchOptions) -> Launched:
    def args(host: str) -> list[str | None]:
        return [
            f"--model-path {q(o.model)}",
            listen(o, host),
            arg("--tp", o.gpus),
            arg("--context-length", o.max_model_len),
            arg("--mem-fraction-static", o.gpu_memory_utilization),
            None if o.prefix_caching else "--disable-radix-cache",
            "--enable-metrics",
            "--enable-cache-report",
            f"--served-model-name {q(o.served_model_name)}" if o.served_model_name else None,
        ]

    plain = lines("python -m sglang.launch_server", *args(o.bind_host))
    docker = lines(
        "docker run --gpus all --shm-size 32g --ipc=host",
        *hub_image(o, IMAGE),
        "python3 -m sglang.launch_server",
        *args(CONTAINER_HOST),
    )
    notes = [
        "The radix (prefix) cache is on by default." if o.prefix_caching else "Radix cache disabled.",
        "--mem-fraction-static is the share of GPU memory for weights plus the KV pool.",
    ]
    return Launched(plain, docker, notes)


LAUNCH = KindLaunch(
    "sglang",
    "SGLang",
    30000,
    IMAGE,
    build,
    order=20,
    metrics="--enable-metrics exposes /metrics; --enable-cache-report adds cached tokens to usage.",
    source="https://docs.sglang.io/advanced_features/server_arguments.html",
    docker_head=("python3", "-m", "sglang.launch_server", "--model-path", "{model}"),
)
