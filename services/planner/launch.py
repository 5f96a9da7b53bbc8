"""Launch commands for each engine, plain CLI and docker, with metrics always on.

Each engine has one builder registered under its kind (the same kinds as
`services.engines`); a builder turns `LaunchOptions` into a `LaunchCommand`. The
commands bind to `bind_host` (127.0.0.1 unless the user opens it up); inside a
container the server listens on 0.0.0.0 and docker publishes the port on `bind_host`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from services.errors import ValidationError

if TYPE_CHECKING:
    from services.endpoints import EngineRecord

CONTAINER_HOST = "0.0.0.0"


@dataclass(frozen=True)
class LaunchOptions:
    engine: str
    model: str  # Hugging Face id, local path, or (llama.cpp/Ollama) GGUF file / repo:quant / tag
    gpus: int = 1
    max_model_len: int = 8192
    gpu_memory_utilization: float = 0.9
    prefix_caching: bool = True
    parallel_slots: int = 4  # llama.cpp -np / Ollama OLLAMA_NUM_PARALLEL
    port: int | None = None
    bind_host: str = "127.0.0.1"
    served_model_name: str | None = None


@dataclass(frozen=True)
class LaunchCommand:
    engine: str
    label: str
    plain: str
    docker: str
    base_url: str
    kind: str
    model_name: str
    metrics: str
    notes: list[str] = field(default_factory=list)
    source: str = ""


@dataclass(frozen=True)
class _Builder:
    label: str
    default_port: int
    build: Callable[[LaunchOptions], LaunchCommand]


_BUILDERS: dict[str, _Builder] = {}


Build = Callable[[LaunchOptions], LaunchCommand]


def _register(kind: str, label: str, default_port: int) -> Callable[[Build], Build]:
    def decorate(build: Build) -> Build:
        _BUILDERS[kind] = _Builder(label, default_port, build)
        return build

    return decorate


def launch_engines() -> dict[str, str]:
    """Kinds with a launch builder, and their labels."""
    return {kind: b.label for kind, b in _BUILDERS.items()}


def _lines(*parts: str | None) -> str:
    """Join arguments into a readable multi-line shell command."""
    return " \\\n  ".join(p for p in parts if p)


def _q(value: str) -> str:
    return shlex.quote(value)


def _client_host(bind_host: str) -> str:
    return "127.0.0.1" if bind_host in ("0.0.0.0", "::", "") else bind_host


def _publish(options: LaunchOptions, container_port: int) -> str:
    return f"-p {options.bind_host}:{options.port}:{container_port}"


def build_launch(options: LaunchOptions) -> LaunchCommand:
    """The launch command for `options.engine`, after checking the options."""
    builder = _BUILDERS.get(options.engine)
    if builder is None:
        raise ValidationError(f"No launch recipe for {options.engine!r}; known: {', '.join(_BUILDERS)}.")
    if not (options.model or "").strip():
        raise ValidationError("Give a model (a Hugging Face id, a local path or a GGUF file).")
    if not 1 <= options.gpus <= 1024:
        raise ValidationError("GPU count must be between 1 and 1,024.")
    if not 1 <= options.max_model_len <= 100_000_000:
        raise ValidationError("Maximum model length must be a positive number of tokens.")
    if not 0 < options.gpu_memory_utilization <= 1:
        raise ValidationError("GPU memory utilisation is a fraction in (0, 1].")
    if not 1 <= options.parallel_slots <= 4096:
        raise ValidationError("Parallel slots must be between 1 and 4,096.")
    port = options.port or builder.default_port
    if not 1 <= port <= 65535:
        raise ValidationError("The port must be between 1 and 65,535.")
    if any(c.isspace() for c in options.bind_host) or not options.bind_host:
        raise ValidationError("The bind host must be an address such as 127.0.0.1 or 0.0.0.0.")
    return builder.build(replace(options, model=options.model.strip(), port=port))


def _base_url(options: LaunchOptions) -> str:
    return f"http://{_client_host(options.bind_host)}:{options.port}"


@_register("vllm", "vLLM", 8000)
def _vllm(o: LaunchOptions) -> LaunchCommand:
    def args(host: str) -> list[str | None]:
        return [
            f"--host {host} --port {o.port}",
            f"--tensor-parallel-size {o.gpus}",
            f"--max-model-len {o.max_model_len}",
            f"--gpu-memory-utilization {o.gpu_memory_utilization:g}",
            "--enable-prefix-caching" if o.prefix_caching else "--no-enable-prefix-caching",
            "--enable-prompt-tokens-details",
            f"--served-model-name {_q(o.served_model_name)}" if o.served_model_name else None,
        ]

    plain = _lines(f"vllm serve {_q(o.model)}", *args(o.bind_host))
    docker = _lines(
        "docker run --gpus all --ipc=host",
        "-v ~/.cache/huggingface:/root/.cache/huggingface",
        '--env "HF_TOKEN=$HF_TOKEN"',
        _publish(o, o.port),
        "vllm/vllm-openai:latest",
        f"--model {_q(o.model)}",
        *args(CONTAINER_HOST),
    )
    return LaunchCommand(
        "vllm", "vLLM", plain, docker, _base_url(o), "vllm", o.served_model_name or o.model,
        "/metrics is always on; --enable-prompt-tokens-details adds cached-token counts to usage.",
        ["--gpu-memory-utilization is the share of each GPU for weights, activations and KV cache."],
        "https://docs.vllm.ai/en/latest/cli/serve.html",
    )


@_register("sglang", "SGLang", 30000)
def _sglang(o: LaunchOptions) -> LaunchCommand:
    def args(host: str) -> list[str | None]:
        return [
            f"--model-path {_q(o.model)}",
            f"--host {host} --port {o.port}",
            f"--tp {o.gpus}",
            f"--context-length {o.max_model_len}",
            f"--mem-fraction-static {o.gpu_memory_utilization:g}",
            None if o.prefix_caching else "--disable-radix-cache",
            "--enable-metrics",
            "--enable-cache-report",
            f"--served-model-name {_q(o.served_model_name)}" if o.served_model_name else None,
        ]

    plain = _lines("python -m sglang.launch_server", *args(o.bind_host))
    docker = _lines(
        "docker run --gpus all --shm-size 32g --ipc=host",
        "-v ~/.cache/huggingface:/root/.cache/huggingface",
        '--env "HF_TOKEN=$HF_TOKEN"',
        _publish(o, o.port),
        "lmsysorg/sglang:latest",
        "python3 -m sglang.launch_server",
        *args(CONTAINER_HOST),
    )
    notes = ["The radix (prefix) cache is on by default." if o.prefix_caching else "Radix cache disabled."]
    return LaunchCommand(
        "sglang", "SGLang", plain, docker, _base_url(o), "sglang", o.served_model_name or o.model,
        "--enable-metrics exposes /metrics; --enable-cache-report adds cached tokens to usage.",
        notes + ["--mem-fraction-static is the share of GPU memory for weights plus the KV pool."],
        "https://docs.sglang.io/advanced_features/server_arguments.html",
    )


TRTLLM_IMAGE = "nvcr.io/nvidia/tensorrt-llm/release:1.0.0"


@_register("trtllm", "TensorRT-LLM", 8000)
def _trtllm(o: LaunchOptions) -> LaunchCommand:
    yaml_lines = [
        "enable_iter_perf_stats: true",
        "return_perf_metrics: true",
        "kv_cache_config:",
        f"  enable_block_reuse: {'true' if o.prefix_caching else 'false'}",
    ]
    config = "cat > extra-llm-api-config.yml <<'EOF'\n" + "\n".join(yaml_lines) + "\nEOF\n"
    def args(host: str, config_path: str) -> list[str | None]:
        return [
            f"--host {host} --port {o.port}",
            "--backend pytorch",
            f"--tp_size {o.gpus}",
            f"--max_seq_len {o.max_model_len}",
            f"--kv_cache_free_gpu_memory_fraction {o.gpu_memory_utilization:g}",
            f"--extra_llm_api_options {config_path}",
        ]

    plain = config + _lines(f"trtllm-serve {_q(o.model)}", *args(o.bind_host, "extra-llm-api-config.yml"))
    docker = config + _lines(
        "docker run --rm --gpus all --ipc=host --ulimit memlock=-1 --ulimit stack=67108864",
        "-v ~/.cache/huggingface:/root/.cache/huggingface",
        '-v "$PWD/extra-llm-api-config.yml:/config.yml:ro"',
        '--env "HF_TOKEN=$HF_TOKEN"',
        _publish(o, o.port),
        TRTLLM_IMAGE,
        f"trtllm-serve {_q(o.model)}",
        *args(CONTAINER_HOST, "/config.yml"),
    )
    return LaunchCommand(
        "trtllm", "TensorRT-LLM", plain, docker, _base_url(o), "trtllm", o.served_model_name or o.model,
        "return_perf_metrics: true mounts Prometheus text at /prometheus/metrics.",
        [
            "--kv_cache_free_gpu_memory_fraction is the share of memory left AFTER weights that goes to KV cache.",
            f"Pick a current release tag for {TRTLLM_IMAGE.rsplit(':', 1)[0]} on NGC.",
        ],
        "https://github.com/NVIDIA/TensorRT-LLM/blob/main/tensorrt_llm/commands/serve.py",
    )


def _llamacpp_model_args(model: str, in_container: bool) -> tuple[str, str | None]:
    """-m for a file (mounted at /models in docker), -hf for a Hugging Face repo[:quant]."""
    if model.endswith(".gguf") or model.startswith(("/", "./", "~")):
        if in_container:
            return "-m " + _q("/models/" + model.rsplit("/", 1)[-1]), model.rsplit("/", 1)[0] or "."
        return f"-m {_q(model)}", None
    return f"-hf {_q(model)}", None


@_register("llamacpp", "llama.cpp", 8080)
def _llamacpp(o: LaunchOptions) -> LaunchCommand:
    # -c is shared by the slots: each slot gets c / np tokens.
    def args(host: str) -> list[str | None]:
        return [
            f"--host {host} --port {o.port}",
            "-ngl 999",
            f"-np {o.parallel_slots}",
            f"-c {o.max_model_len * o.parallel_slots}",
            None if o.prefix_caching else "--no-cache-prompt",
            "--metrics",
            "--slots",
            f"-a {_q(o.served_model_name)}" if o.served_model_name else None,
        ]

    model_plain, _ = _llamacpp_model_args(o.model, False)
    model_docker, mount = _llamacpp_model_args(o.model, True)
    plain = _lines("llama-server", model_plain, *args(o.bind_host))
    docker = _lines(
        "docker run --gpus all",
        f"-v {_q(mount)}:/models" if mount else "-v ~/.cache/llama.cpp:/root/.cache/llama.cpp",
        _publish(o, o.port),
        "ghcr.io/ggml-org/llama.cpp:server-cuda",
        model_docker,
        *args(CONTAINER_HOST),
    )
    notes = [f"-c {o.max_model_len * o.parallel_slots} is shared: each of the {o.parallel_slots} slots "
             f"gets {o.max_model_len} tokens."]
    if o.gpus > 1:
        notes.append("llama.cpp splits layers across all visible GPUs (-sm layer); it has no tensor parallelism.")
    return LaunchCommand(
        "llamacpp", "llama.cpp", plain, docker, _base_url(o), "llamacpp", o.served_model_name or o.model,
        "--metrics turns on /metrics (else HTTP 501); --slots keeps /slots.",
        notes,
        "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",
    )


TGI_IMAGE = "ghcr.io/huggingface/text-generation-inference:latest"


@_register("tgi", "TGI", 8080)
def _tgi(o: LaunchOptions) -> LaunchCommand:
    args = [
        f"--model-id {_q(o.model)}",
        f"--num-shard {o.gpus}",
        f"--max-total-tokens {o.max_model_len}",
        f"--max-input-tokens {max(o.max_model_len - 1, 1)}",
        f"--cuda-memory-fraction {o.gpu_memory_utilization:g}",
    ]
    env = "" if o.prefix_caching else "PREFIX_CACHING=0 "
    plain = _lines(f"{env}text-generation-launcher", f"--hostname {o.bind_host} --port {o.port}", *args)
    docker = _lines(
        "docker run --gpus all --shm-size 1g",
        '-v "$PWD/data:/data"',
        '--env "HF_TOKEN=$HF_TOKEN"',
        None if o.prefix_caching else "--env PREFIX_CACHING=0",
        _publish(o, 80),
        TGI_IMAGE,
        *args,
    )
    return LaunchCommand(
        "tgi", "TGI", plain, docker, _base_url(o), "tgi", o.model,
        "/metrics is always on (and on --prometheus-port, default 9000).",
        ["TGI is in maintenance mode."],
        "https://huggingface.co/docs/text-generation-inference/reference/launcher",
    )


@_register("ollama", "Ollama", 11434)
def _ollama(o: LaunchOptions) -> LaunchCommand:
    env = [
        f"OLLAMA_HOST={o.bind_host}:{o.port}",
        f"OLLAMA_NUM_PARALLEL={o.parallel_slots}",
        f"OLLAMA_CONTEXT_LENGTH={o.max_model_len}",
    ]
    plain = " ".join(env) + " ollama serve &\n" + f"OLLAMA_HOST={o.bind_host}:{o.port} ollama pull {_q(o.model)}"
    docker = _lines(
        "docker run -d --gpus=all --name ollama",
        "-v ollama:/root/.ollama",
        _publish(o, 11434),
        f"--env OLLAMA_NUM_PARALLEL={o.parallel_slots}",
        f"--env OLLAMA_CONTEXT_LENGTH={o.max_model_len}",
        "ollama/ollama",
    ) + f"\ndocker exec ollama ollama pull {_q(o.model)}"
    return LaunchCommand(
        "ollama", "Ollama", plain, docker, _base_url(o), "ollama", o.model,
        "Ollama has no Prometheus endpoint: the dashboard sees only client-side timings.",
        ["Model names are Ollama tags (for example llama3.1:8b)."],
        "https://github.com/ollama/ollama/blob/main/docs/faq.md",
    )


def register_launched_engine(command: LaunchCommand, name: str, base_url: str | None = None) -> EngineRecord:
    """Add the endpoint the command will serve to the engine registry (same kind and model)."""
    from services import endpoints

    return endpoints.add_engine(name, base_url or command.base_url, kind=command.kind, model=command.model_name)
