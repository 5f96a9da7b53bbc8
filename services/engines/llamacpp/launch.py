"""How llama.cpp is started: `llama-server` on a GGUF file or a GGUF repository, all layers on the
GPU, slots sharing one context, metrics and /slots on."""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.engines.launching import (
    CONTAINER_HOST,
    KindLaunch,
    Launched,
    LaunchOptions,
    arg,
    is_gguf_repo,
    is_hf_repo,
    is_local_file,
    lines,
    listen,
    path,
    publish,
    tagged_repo,
)

IMAGE = "ghcr.io/ggml-org/llama.cpp:server-cuda"


def _gguf_placeholder(o: LaunchOptions) -> str:
    base = re.sub(r"[^\w.-]+", "-", o.model.split(":", 1)[0].rsplit("/", 1)[-1]).strip("-.") or "model"
    return f"/path/to/{base}{'-' + o.gguf_quant if o.gguf_quant else ''}.gguf"


@dataclass(frozen=True)
class _GgufSource:
    """Where llama-server gets its GGUF: a file (-m, its folder mounted at /models in docker)
    or a GGUF repository (-hf, downloaded into llama.cpp's cache)."""

    plain: str
    docker: str
    mount: str | None
    note: str | None = None


def _file_source(file: str, note: str | None = None) -> _GgufSource:
    folder, _, name = file.rpartition("/")
    return _GgufSource(
        arg("-m", file) if not file.startswith("~/") else "-m " + path(file),
        arg("-m", "/models/" + name),
        folder or ".",
        note,
    )


def _source(o: LaunchOptions) -> _GgufSource:
    if is_local_file(o.model):
        return _file_source(o.model)
    if is_gguf_repo(o.model):
        return _GgufSource(arg("-hf", tagged_repo(o)), arg("-hf", tagged_repo(o)), None)
    # llama.cpp loads GGUF only: `-hf` on a safetensors checkpoint fails after the download starts.
    placeholder = _gguf_placeholder(o)
    what = (
        'a Hugging Face checkpoint without GGUF files (no "GGUF" in its name)'
        if is_hf_repo(o.model)
        else "neither a GGUF file nor a GGUF repository"
    )
    quantise = f" and llama-quantize to {o.gguf_quant}" if o.gguf_quant else ""
    return _file_source(
        placeholder,
        (
            f"{o.model} is {what}, and llama.cpp loads only GGUF: the command loads {placeholder}, a placeholder for "
            f"a GGUF file you supply. Make one with llama.cpp's convert_hf_to_gguf.py{quantise}, or give a GGUF "
            "repository (for example bartowski/<model>-GGUF:Q4_K_M) to download it with -hf."
        ),
    )


def build(o: LaunchOptions) -> Launched:
    # -c is shared by the slots: each slot gets c / np tokens.
    def args(host: str) -> list[str | None]:
        return [
            listen(o, host),
            "-ngl 999",
            arg("-np", o.parallel_slots),
            arg("-c", o.max_model_len * o.parallel_slots),
            None if o.prefix_caching else "--no-cache-prompt",
            "--metrics",
            "--slots",
            arg("-a", o.served_model_name) if o.served_model_name else None,
        ]

    source = _source(o)
    plain = lines("llama-server", source.plain, *args(o.bind_host))
    docker = lines(
        "docker run --gpus all",
        f"-v {path(source.mount)}:/models"
        if source.mount
        else "-v ~/.cache/llama.cpp:/root/.cache/llama.cpp",
        publish(o),
        IMAGE,
        source.docker,
        *args(CONTAINER_HOST),
    )
    notes = [source.note] if source.note else []
    notes.append(
        f"-c {o.max_model_len * o.parallel_slots} is shared: each of the {o.parallel_slots} slots "
        f"gets {o.max_model_len} tokens."
    )
    if o.gpus > 1:
        notes.append(
            "llama.cpp splits layers across all visible GPUs (-sm layer); it has no tensor parallelism."
        )
    return Launched(plain, docker, notes)


LAUNCH = KindLaunch(
    "llamacpp",
    "llama.cpp",
    8080,
    IMAGE,
    build,
    order=40,
    metrics="--metrics turns on /metrics (else HTTP 501); --slots keeps /slots.",
    source="https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",
    docker_head=("-m", "{model}"),
    cpu_image="ghcr.io/ggml-org/llama.cpp:server",  # the same server, CPU build
)
