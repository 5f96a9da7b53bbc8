"""Launch commands for each engine, plain CLI and docker, with metrics always on.

Each engine has one builder registered under its kind (the same kinds as
`services.engines`); a builder turns `LaunchOptions` into a `LaunchCommand`. The
commands bind to `bind_host` (127.0.0.1 unless the user opens it up); inside a
container the server listens on 0.0.0.0 and docker publishes the port on `bind_host`.
Every word that comes from the options goes through `shlex.quote`: a copied command
never runs what was typed into a field.

`options_for_plan` turns a plan into options (its model, tensor-parallel degree,
context length, memory fraction, batch as llama.cpp/Ollama slots, GGUF quantisation),
so the page and `cli.py plan --engine` start what was planned.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from services.errors import ValidationError
from services.planner.catalog import get_model, get_weight_format

if TYPE_CHECKING:
    from services.endpoints import EngineRecord
    from services.planner.plan import PlanRequest

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
    #: The GGUF quantisation the plan chose ("Q4_K_M"), for llama.cpp and Ollama file names.
    gguf_quant: str | None = None


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


def _q(value: str | float) -> str:
    if isinstance(value, float):
        value = f"{value:g}"
    return shlex.quote(str(value))


def _arg(flag: str, value: str | float) -> str:
    return f"{flag} {_q(value)}"


def _path(path: str) -> str:
    """A quoted path that keeps a leading ~/ unquoted, so the shell still expands it."""
    return "~/" + _q(path[2:]) if path.startswith("~/") and len(path) > 2 else _q(path)


def _client_host(bind_host: str) -> str:
    return "127.0.0.1" if bind_host in ("0.0.0.0", "::", "") else bind_host


def _port(options: LaunchOptions) -> int:
    """The port a builder writes: build_launch resolves it to the engine's default before any
    builder runs, so a builder never sees None."""
    if options.port is None:
        raise ValidationError("No port: launch commands are built through build_launch.")
    return options.port


def _publish(options: LaunchOptions, container_port: int) -> str:
    return _arg("-p", f"{options.bind_host}:{options.port}:{container_port}")


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


#: GGUF file-type names for the 16-bit formats (quantised ones are their own key, upper-cased).
_GGUF_16BIT = {"bf16": "BF16", "fp16": "F16"}


def options_for_plan(
    request: PlanRequest, engine: str = "vllm", *, model: str | None = None
) -> LaunchOptions:
    """The options that start what was planned: its model (the preset's Hugging Face id unless
    `model` is given), tensor-parallel degree, context length, memory fraction, the batch as
    llama.cpp/Ollama slots, and the GGUF quantisation of its weight format."""
    spec = get_model(request.model)
    fmt = get_weight_format(request.dtype or spec.native_dtype)
    quant = fmt.key.removeprefix("gguf-").upper() if fmt.family == "gguf" else _GGUF_16BIT.get(fmt.key)
    return LaunchOptions(
        engine=engine,
        model=(model or "").strip() or spec.hf_id or spec.key,
        gpus=request.tp,
        max_model_len=request.context,
        gpu_memory_utilization=request.mem_util,
        parallel_slots=min(max(request.batch, 1), 4096),
        gguf_quant=quant,
    )


def _base_url(options: LaunchOptions) -> str:
    return f"http://{_client_host(options.bind_host)}:{options.port}"


@_register("vllm", "vLLM", 8000)
def _vllm(o: LaunchOptions) -> LaunchCommand:
    def args(host: str) -> list[str | None]:
        return [
            f"{_arg('--host', host)} {_arg('--port', _port(o))}",
            _arg("--tensor-parallel-size", o.gpus),
            _arg("--max-model-len", o.max_model_len),
            _arg("--gpu-memory-utilization", o.gpu_memory_utilization),
            "--enable-prefix-caching" if o.prefix_caching else "--no-enable-prefix-caching",
            "--enable-prompt-tokens-details",
            f"--served-model-name {_q(o.served_model_name)}" if o.served_model_name else None,
        ]

    plain = _lines(f"vllm serve {_q(o.model)}", *args(o.bind_host))
    docker = _lines(
        "docker run --gpus all --ipc=host",
        "-v ~/.cache/huggingface:/root/.cache/huggingface",
        '--env "HF_TOKEN=$HF_TOKEN"',
        _publish(o, _port(o)),
        "vllm/vllm-openai:latest",
        f"--model {_q(o.model)}",
        *args(CONTAINER_HOST),
    )
    return LaunchCommand(
        "vllm",
        "vLLM",
        plain,
        docker,
        _base_url(o),
        "vllm",
        o.served_model_name or o.model,
        "/metrics is always on; --enable-prompt-tokens-details adds cached-token counts to usage.",
        ["--gpu-memory-utilization is the share of each GPU for weights, activations and KV cache."],
        "https://docs.vllm.ai/en/latest/cli/serve.html",
    )


@_register("sglang", "SGLang", 30000)
def _sglang(o: LaunchOptions) -> LaunchCommand:
    def args(host: str) -> list[str | None]:
        return [
            f"--model-path {_q(o.model)}",
            f"{_arg('--host', host)} {_arg('--port', _port(o))}",
            _arg("--tp", o.gpus),
            _arg("--context-length", o.max_model_len),
            _arg("--mem-fraction-static", o.gpu_memory_utilization),
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
        _publish(o, _port(o)),
        "lmsysorg/sglang:latest",
        "python3 -m sglang.launch_server",
        *args(CONTAINER_HOST),
    )
    notes = [
        "The radix (prefix) cache is on by default." if o.prefix_caching else "Radix cache disabled."
    ]
    return LaunchCommand(
        "sglang",
        "SGLang",
        plain,
        docker,
        _base_url(o),
        "sglang",
        o.served_model_name or o.model,
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
            f"{_arg('--host', host)} {_arg('--port', _port(o))}",
            "--backend pytorch",
            _arg("--tp_size", o.gpus),
            _arg("--max_seq_len", o.max_model_len),
            _arg("--kv_cache_free_gpu_memory_fraction", o.gpu_memory_utilization),
            _arg("--extra_llm_api_options", config_path),
        ]

    plain = config + _lines(
        f"trtllm-serve {_q(o.model)}", *args(o.bind_host, "extra-llm-api-config.yml")
    )
    docker = config + _lines(
        "docker run --rm --gpus all --ipc=host --ulimit memlock=-1 --ulimit stack=67108864",
        "-v ~/.cache/huggingface:/root/.cache/huggingface",
        '-v "$PWD/extra-llm-api-config.yml:/config.yml:ro"',
        '--env "HF_TOKEN=$HF_TOKEN"',
        _publish(o, _port(o)),
        TRTLLM_IMAGE,
        f"trtllm-serve {_q(o.model)}",
        *args(CONTAINER_HOST, "/config.yml"),
    )
    return LaunchCommand(
        "trtllm",
        "TensorRT-LLM",
        plain,
        docker,
        _base_url(o),
        "trtllm",
        o.served_model_name or o.model,
        "return_perf_metrics: true mounts Prometheus text at /prometheus/metrics.",
        [
            "--kv_cache_free_gpu_memory_fraction is the share of memory left AFTER weights that goes to KV cache.",
            f"Pick a current release tag for {TRTLLM_IMAGE.rsplit(':', 1)[0]} on NGC.",
        ],
        "https://github.com/NVIDIA/TensorRT-LLM/blob/main/tensorrt_llm/commands/serve.py",
    )


def _is_local_file(model: str) -> bool:
    return model.endswith(".gguf") or model.startswith(("/", "./", "../", "~"))


def _is_gguf_repo(model: str) -> bool:
    """A Hugging Face repository of GGUF files, by the convention that names them ("…-GGUF"),
    or one given with a quantisation tag (repo:Q4_K_M), which only GGUF repositories have."""
    return bool(_HF_REPO.fullmatch(model)) and ("gguf" in model.lower() or ":" in model)


_HF_REPO = re.compile(r"[\w.-]+/[\w.-]+(:[\w.-]+)?")


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


def _file_source(path: str, note: str | None = None) -> _GgufSource:
    folder, _, name = path.rpartition("/")
    return _GgufSource(
        _arg("-m", path) if not path.startswith("~/") else "-m " + _path(path),
        _arg("-m", "/models/" + name),
        folder or ".",
        note,
    )


def _llamacpp_source(o: LaunchOptions) -> _GgufSource:
    if _is_local_file(o.model):
        return _file_source(o.model)
    if _is_gguf_repo(o.model):
        repo = o.model if ":" in o.model or not o.gguf_quant else f"{o.model}:{o.gguf_quant}"
        return _GgufSource(_arg("-hf", repo), _arg("-hf", repo), None)
    # llama.cpp loads GGUF only: `-hf` on a safetensors checkpoint fails after the download starts.
    placeholder = _gguf_placeholder(o)
    what = (
        'a Hugging Face checkpoint without GGUF files (no "GGUF" in its name)'
        if _HF_REPO.fullmatch(o.model)
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


@_register("llamacpp", "llama.cpp", 8080)
def _llamacpp(o: LaunchOptions) -> LaunchCommand:
    # -c is shared by the slots: each slot gets c / np tokens.
    def args(host: str) -> list[str | None]:
        return [
            f"{_arg('--host', host)} {_arg('--port', _port(o))}",
            "-ngl 999",
            _arg("-np", o.parallel_slots),
            _arg("-c", o.max_model_len * o.parallel_slots),
            None if o.prefix_caching else "--no-cache-prompt",
            "--metrics",
            "--slots",
            _arg("-a", o.served_model_name) if o.served_model_name else None,
        ]

    source = _llamacpp_source(o)
    plain = _lines("llama-server", source.plain, *args(o.bind_host))
    docker = _lines(
        "docker run --gpus all",
        f"-v {_path(source.mount)}:/models"
        if source.mount
        else "-v ~/.cache/llama.cpp:/root/.cache/llama.cpp",
        _publish(o, _port(o)),
        "ghcr.io/ggml-org/llama.cpp:server-cuda",
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
    return LaunchCommand(
        "llamacpp",
        "llama.cpp",
        plain,
        docker,
        _base_url(o),
        "llamacpp",
        o.served_model_name or o.model,
        "--metrics turns on /metrics (else HTTP 501); --slots keeps /slots.",
        notes,
        "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",
    )


TGI_IMAGE = "ghcr.io/huggingface/text-generation-inference:latest"


@_register("tgi", "TGI", 8080)
def _tgi(o: LaunchOptions) -> LaunchCommand:
    args = [
        f"--model-id {_q(o.model)}",
        _arg("--num-shard", o.gpus),
        _arg("--max-total-tokens", o.max_model_len),
        _arg("--max-input-tokens", max(o.max_model_len - 1, 1)),
        _arg("--cuda-memory-fraction", o.gpu_memory_utilization),
    ]
    env = "" if o.prefix_caching else "PREFIX_CACHING=0 "
    listen = f"{_arg('--hostname', o.bind_host)} {_arg('--port', _port(o))}"
    plain = _lines(f"{env}text-generation-launcher", listen, *args)
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
        "tgi",
        "TGI",
        plain,
        docker,
        _base_url(o),
        "tgi",
        o.model,
        "/metrics is always on (and on --prometheus-port, default 9000).",
        ["TGI is in maintenance mode."],
        "https://huggingface.co/docs/text-generation-inference/reference/launcher",
    )


def _ollama_model(o: LaunchOptions) -> tuple[str, str | None]:
    """The name `ollama pull` takes, and a note when the planned model is not one."""
    if _is_gguf_repo(o.model) and not o.model.startswith("hf.co/"):
        repo = o.model if ":" in o.model or not o.gguf_quant else f"{o.model}:{o.gguf_quant}"
        return "hf.co/" + repo, None  # Ollama pulls GGUF repositories from the Hub under hf.co/
    if _is_local_file(o.model):
        return o.model, (
            f"{o.model} is a file: Ollama imports one with a Modelfile (FROM {o.model}) and "
            "`ollama create NAME -f Modelfile`, then serves NAME."
        )
    if _HF_REPO.fullmatch(o.model) and not o.model.startswith("hf.co/"):
        return o.model, (
            f"{o.model} is a Hugging Face checkpoint, not an Ollama tag or a GGUF repository: "
            "replace it with a library tag (for example llama3.1:70b) or hf.co/<GGUF repo>:<quant>."
        )
    return o.model, None


@_register("ollama", "Ollama", 11434)
def _ollama(o: LaunchOptions) -> LaunchCommand:
    model, note = _ollama_model(o)
    host = "OLLAMA_HOST=" + _q(
        f"{o.bind_host}:{o.port}"
    )  # quote the value only: a quoted name is no assignment
    env = [
        host,
        "OLLAMA_NUM_PARALLEL=" + _q(o.parallel_slots),
        "OLLAMA_CONTEXT_LENGTH=" + _q(o.max_model_len),
    ]
    plain = " ".join(env) + " ollama serve &\n" + f"{host} ollama pull {_q(model)}"
    docker = (
        _lines(
            "docker run -d --gpus=all --name ollama",
            "-v ollama:/root/.ollama",
            _publish(o, 11434),
            _arg("--env", f"OLLAMA_NUM_PARALLEL={o.parallel_slots}"),
            _arg("--env", f"OLLAMA_CONTEXT_LENGTH={o.max_model_len}"),
            "ollama/ollama",
        )
        + f"\ndocker exec ollama ollama pull {_q(model)}"
    )
    return LaunchCommand(
        "ollama",
        "Ollama",
        plain,
        docker,
        _base_url(o),
        "ollama",
        model,
        "Ollama has no Prometheus endpoint: the dashboard sees only client-side timings.",
        ([note] if note else []) + ["Model names are Ollama tags (for example llama3.1:8b)."],
        "https://github.com/ollama/ollama/blob/main/docs/faq.md",
    )


def register_launched_engine(
    command: LaunchCommand, name: str, base_url: str | None = None
) -> EngineRecord:
    """Add the endpoint the command will serve to the engine registry (same kind and model)."""
    from services import endpoints

    return endpoints.add_engine(
        name, base_url or command.base_url, kind=command.kind, model=command.model_name
    )
