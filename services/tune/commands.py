"""The winning configuration's launch command, to copy: plain (this machine's binary and model,
or the start template as run) and docker (the engine's official image)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from services.tune.spec import TuneSpec, setting_args

#: Official images and what runs in them; the model placeholder is the user's to fill.
_DOCKER = {
    "llamacpp": ("ghcr.io/ggml-org/llama.cpp:server", 8080, []),
    "vllm": ("vllm/vllm-openai:latest", 8000, ["--model", "MODEL"]),
    "sglang": (
        "lmsysorg/sglang:latest",
        30000,
        ["python3", "-m", "sglang.launch_server", "--model-path", "MODEL"],
    ),
    "trtllm": ("nvcr.io/nvidia/tensorrt-llm/release:latest", 8000, ["trtllm-serve", "MODEL"]),
}


def _env_prefix(env: Mapping[str, str]) -> str:
    return "".join(f"{key}={shlex.quote(value)} " for key, value in env.items())


def launch_commands(spec: TuneSpec, settings: Mapping[str, str]) -> dict[str, str]:
    """{"plain": ..., "docker": ...} for these full settings, quoted for a POSIX shell."""
    args, env = setting_args(spec.kind, settings)
    if spec.kind == "llamacpp" and spec.launcher == "local":
        args = [*args, "--metrics", "--slots"]  # as the tuning run started it
    image, port, head = _DOCKER[spec.kind]
    docker_env = "".join(f"-e {key}={shlex.quote(value)} " for key, value in env.items())
    gpus = "" if spec.kind == "llamacpp" else "--gpus all "
    if spec.launcher == "command":
        from services.tune.launch import render_template

        plain = shlex.join(
            render_template(spec.start_command, port=port, name="shootout-tuned", args=args)
        )
    else:
        plain = _local_plain(spec.kind, port, args, env)
    if spec.kind == "llamacpp":
        model = _local_model_name()
        docker_args = ["-m", f"/models/{model}", "--host", "0.0.0.0", "--port", str(port), *args]
        volume = f"-v {shlex.quote(str(_local_model_dir()))}:/models "
    else:
        docker_args = [*head, "--host", "0.0.0.0", "--port", str(port), *args]
        volume = ""
    docker = (
        f"docker run --rm {gpus}-p {port}:{port} {volume}{docker_env}{image} {shlex.join(docker_args)}"
    )
    return {"plain": plain, "docker": docker}


def _local_plain(kind: str, port: int, args: list[str], env: Mapping[str, str]) -> str:
    from services import local_engines

    try:
        argv, base_env = local_engines.server_command(kind, port, args)
    except Exception:  # noqa: BLE001 - not installed here: show the portable form
        binary = "llama-server" if kind == "llamacpp" else "vllm serve MODEL"
        return f"{_env_prefix(env)}{binary} --host 127.0.0.1 --port {port} {shlex.join(args)}".strip()
    wanted = {k: v for k, v in {**base_env, **env}.items() if k.startswith("VLLM_CPU")}
    return _env_prefix(wanted) + shlex.join(argv)


def _local_model_dir() -> Path:
    from services import local_engines

    found = local_engines.gguf_path()
    return found.parent if found else Path("/path/to/models")


def _local_model_name() -> str:
    from services import local_engines

    found = local_engines.gguf_path()
    return found.name if found else "model.gguf"
