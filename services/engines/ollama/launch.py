"""How Ollama is started: `ollama serve` and `ollama pull`, or its image and `docker exec`."""

from __future__ import annotations

from services.engines.launching import (
    KindLaunch,
    Launched,
    LaunchOptions,
    arg,
    is_gguf_repo,
    is_hf_repo,
    is_local_file,
    lines,
    publish,
    q,
    tagged_repo,
)

IMAGE = "ollama/ollama"
CONTAINER_PORT = 11434


def _model(o: LaunchOptions) -> tuple[str, str | None]:
    """The name `ollama pull` takes, and a note when the planned model is not one."""
    if is_gguf_repo(o.model) and not o.model.startswith("hf.co/"):
        # Ollama pulls GGUF repositories from the Hub under hf.co/
        return "hf.co/" + tagged_repo(o), None
    if is_local_file(o.model):
        return o.model, (
            f"{o.model} is a file: Ollama imports one with a Modelfile (FROM {o.model}) and "
            "`ollama create NAME -f Modelfile`, then serves NAME."
        )
    if is_hf_repo(o.model) and not o.model.startswith("hf.co/"):
        return o.model, (
            f"{o.model} is a Hugging Face checkpoint, not an Ollama tag or a GGUF repository: "
            "replace it with a library tag (for example llama3.1:70b) or hf.co/<GGUF repo>:<quant>."
        )
    return o.model, None


def build(o: LaunchOptions) -> Launched:
    model, note = _model(o)
    host = "OLLAMA_HOST=" + q(
        f"{o.bind_host}:{o.port}"
    )  # quote the value only: a quoted name is no assignment
    env = [
        host,
        "OLLAMA_NUM_PARALLEL=" + q(o.parallel_slots),
        "OLLAMA_CONTEXT_LENGTH=" + q(o.max_model_len),
    ]
    plain = " ".join(env) + " ollama serve &\n" + f"{host} ollama pull {q(model)}"
    docker = (
        lines(
            "docker run -d --gpus=all --name ollama",
            "-v ollama:/root/.ollama",
            publish(o, CONTAINER_PORT),
            arg("--env", f"OLLAMA_NUM_PARALLEL={o.parallel_slots}"),
            arg("--env", f"OLLAMA_CONTEXT_LENGTH={o.max_model_len}"),
            IMAGE,
        )
        + f"\ndocker exec ollama ollama pull {q(model)}"
    )
    notes = ([note] if note else []) + ["Model names are Ollama tags (for example llama3.1:8b)."]
    return Launched(plain, docker, notes, model_name=model)


LAUNCH = KindLaunch(
    "ollama",
    "Ollama",
    CONTAINER_PORT,
    IMAGE,
    build,
    order=60,
    metrics="Ollama has no Prometheus endpoint: the dashboard sees only client-side timings.",
    source="https://github.com/ollama/ollama/blob/main/docs/faq.md",
    container_port=CONTAINER_PORT,
)
