"""How an engine kind is started: the records every kind's `launch.py` fills, the quoting helpers
its builder uses, and the registry of kinds that have one.

Each kind's package (`services/engines/<kind>/launch.py`) defines `LAUNCH`, a `KindLaunch`: its
label, default port, docker image, what turns its metrics on, its docs, and the recipe that turns
`LaunchOptions` into its two commands (plain CLI and docker, metrics always on); `KindLaunch.build`
adds what every `LaunchCommand` shares. The Planner builds its commands from
it and Tune copies the image and port into a tuned configuration's docker command, so the two
cannot disagree. Nothing here imports the planner or tune: both import this.

Every word that comes from the options goes through `shlex.quote` (`q`, `arg`): a copied
command never runs what was typed into a field.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from services.core.errors import ValidationError
from services.engines.registry import kind_parts

#: Where a server listens inside its container; docker publishes the port on the bind host.
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
class Launched:
    """What a kind's recipe writes: its commands, its notes, and the model name clients ask for
    where that is not the served name (else the model)."""

    plain: str
    docker: str
    notes: list[str] = field(default_factory=list)
    model_name: str | None = None


Recipe = Callable[[LaunchOptions], Launched]


@dataclass(frozen=True)
class KindLaunch:
    """Everything about starting one engine kind, in one place."""

    kind: str
    label: str
    default_port: int
    #: The official image the docker commands run (the GPU build where there are several).
    image: str
    recipe: Recipe
    #: Where the kind comes in the Planner's list (its first is the form's default).
    order: int
    #: What turns its metrics on, in words.
    metrics: str
    #: The server's own docs for its arguments.
    source: str
    #: The port the server listens on inside its image, when it is not the published one.
    container_port: int | None = None
    #: What runs in the image before the server's own arguments; "{model}" is the model.
    docker_head: tuple[str, ...] = ()
    #: The image that runs without a GPU, where it is another build (a CPU-tuned configuration's).
    cpu_image: str | None = None

    def build(self, options: LaunchOptions) -> LaunchCommand:
        """Its commands for `options`, whose port the planner has resolved (`port_of`)."""
        made = self.recipe(options)
        model_name = made.model_name or options.served_model_name or options.model
        return LaunchCommand(
            self.kind,
            self.label,
            made.plain,
            made.docker,
            base_url(options),
            self.kind,
            model_name,
            self.metrics,
            made.notes,
            self.source,
        )


# -- the helpers builders share ---------------------------------------------------------------

_HF_REPO = re.compile(r"[\w.-]+/[\w.-]+(:[\w.-]+)?")


def lines(*parts: str | None) -> str:
    """Join arguments into a readable multi-line shell command."""
    return " \\\n  ".join(p for p in parts if p)


def q(value: str | float) -> str:
    if isinstance(value, float):
        value = f"{value:g}"
    return shlex.quote(str(value))


def arg(flag: str, value: str | float) -> str:
    return f"{flag} {q(value)}"


def path(text: str) -> str:
    """A quoted path that keeps a leading ~/ unquoted, so the shell still expands it."""
    return "~/" + q(text[2:]) if text.startswith("~/") and len(text) > 2 else q(text)


def client_host(bind_host: str) -> str:
    return "127.0.0.1" if bind_host in ("0.0.0.0", "::", "") else bind_host


def port_of(options: LaunchOptions) -> int:
    """The port a builder writes: the planner resolves it to the kind's default before any
    builder runs, so a builder never sees None."""
    if options.port is None:
        raise ValidationError("No port: launch commands are built through build_launch.")
    return options.port


def listen(options: LaunchOptions, host: str, flag: str = "--host") -> str:
    """Where the server listens: `flag` `host` and --port."""
    return f"{arg(flag, host)} {arg('--port', port_of(options))}"


def publish(options: LaunchOptions, container_port: int | None = None) -> str:
    """docker's -p: the bind host and port onto `container_port` (the same port when None)."""
    port = port_of(options)
    return arg("-p", f"{options.bind_host}:{port}:{container_port or port}")


def hub_image(options: LaunchOptions, image: str, *mounts: str) -> tuple[str, ...]:
    """What `docker run` carries between its flags and what runs in `image`, for a server that
    downloads from the Hugging Face Hub: the Hub cache, `mounts`, the token, the published port."""
    return (
        "-v ~/.cache/huggingface:/root/.cache/huggingface",
        *mounts,
        '--env "HF_TOKEN=$HF_TOKEN"',
        publish(options),
        image,
    )


def base_url(options: LaunchOptions) -> str:
    return f"http://{client_host(options.bind_host)}:{options.port}"


def is_local_file(model: str) -> bool:
    return model.endswith(".gguf") or model.startswith(("/", "./", "../", "~"))


def is_gguf_repo(model: str) -> bool:
    """A Hugging Face repository of GGUF files, by the convention that names them ("…-GGUF"),
    or one given with a quantisation tag (repo:Q4_K_M), which only GGUF repositories have."""
    return bool(_HF_REPO.fullmatch(model)) and ("gguf" in model.lower() or ":" in model)


def is_hf_repo(model: str) -> bool:
    return bool(_HF_REPO.fullmatch(model))


def tagged_repo(options: LaunchOptions) -> str:
    """The GGUF repository with the plan's quantisation as its tag, unless it names one."""
    model, quant = options.model, options.gguf_quant
    return model if ":" in model or not quant else f"{model}:{quant}"


# -- the registry -----------------------------------------------------------------------------


def launches() -> dict[str, KindLaunch]:
    """Every kind whose package has a `launch.py`, in the Planner's order."""
    found: list[KindLaunch] = []
    for kind, module in kind_parts("launch"):
        launch = module.LAUNCH
        if not isinstance(launch, KindLaunch) or launch.kind != kind:
            raise TypeError(
                f"services/engines/{kind}/launch.py must define LAUNCH = KindLaunch({kind!r}, ...)."
            )
        found.append(launch)
    return {launch.kind: launch for launch in sorted(found, key=lambda launch: launch.order)}


def get_launch(kind: str) -> KindLaunch | None:
    return launches().get(kind)
