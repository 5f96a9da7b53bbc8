"""How TGI is started: `text-generation-launcher` or its image (port 80 inside it)."""

from __future__ import annotations

from services.engines.launching import (
    KindLaunch,
    Launched,
    LaunchOptions,
    arg,
    lines,
    listen,
    publish,
    q,
)

IMAGE = "ghcr.io/huggingface/text-generation-inference:latest"
CONTAINER_PORT = 80


def build(o: LaunchOptions) -> Launched:
    args = [
        f"--model-id {q(o.model)}",
        arg("--num-shard", o.gpus),
        arg("--max-total-tokens", o.max_model_len),
        arg("--max-input-tokens", max(o.max_model_len - 1, 1)),
        arg("--cuda-memory-fraction", o.gpu_memory_utilization),
    ]
    env = "" if o.prefix_caching else "PREFIX_CACHING=0 "
    plain = lines(f"{env}text-generation-launcher", listen(o, o.bind_host, "--hostname"), *args)
    docker = lines(
        "docker run --gpus all --shm-size 1g",
        '-v "$PWD/data:/data"',
        '--env "HF_TOKEN=$HF_TOKEN"',
        None if o.prefix_caching else "--env PREFIX_CACHING=0",
        publish(o, CONTAINER_PORT),
        IMAGE,
        *args,
    )
    # TGI takes no served name: clients ask for the model.
    return Launched(plain, docker, ["TGI is in maintenance mode."], model_name=o.model)


LAUNCH = KindLaunch(
    "tgi",
    "TGI",
    8080,
    IMAGE,
    build,
    order=50,
    metrics="/metrics is always on (and on --prometheus-port, default 9000).",
    source="https://huggingface.co/docs/text-generation-inference/reference/launcher",
    container_port=CONTAINER_PORT,
    docker_head=("--model-id", "{model}"),
)
