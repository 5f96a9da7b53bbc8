"""Real engines on this machine: install, launch, watch and stop them.

Three engines serve SmolLM2-135M-Instruct on 127.0.0.1, each in its own virtual
environment and process (as in production, where each engine has its own container):

| id | engine | port | why |
|---|---|---|---|
| llamacpp-4slot | llama.cpp, 4 parallel slots, prompt cache on | 8081 | continuous batching + prefix reuse |
| vllm-cpu | vLLM on CPU, automatic prefix caching | 8082 | the reference production engine |
| llamacpp-1slot | llama.cpp, 1 slot, no prompt cache | 8083 | the baseline without batching or cache |

Only these fixed specs can be launched: the page and the CLI pick an id, never a
command line, so nothing typed in the browser can run a program.

State (PID, port, log) lives in `<engines dir>/run/state.json`; processes run in
their own session, so they outlive the command or page that started them.

The parts: `catalog` (the specs, the status record), `paths` (what is installed where),
`installer` (install, the llama.cpp build and smoke run), `state` (the state file, status),
`launch` (start, stop, up, down, registration). Callers import from this package.
"""

from services.local_engines.catalog import (
    BACKENDS,
    ENGINE_NICENESS,
    LLAMA_CPP_PACKAGE,
    LLAMACPP_THREADS,
    MODEL_NAME,
    MODEL_PACKAGE,
    VLLM_CONVERT_PACKAGES,
    VLLM_PACKAGE,
    VLLM_SERVED_NAME,
    VLLM_UNWANTED,
    LocalEngineSpec,
    LocalEngineStatus,
    Status,
    get_spec,
    niced,
    specs,
)
from services.local_engines.installer import (
    install,
    install_llamacpp,
    llamacpp_package,
)
from services.local_engines.launch import (
    as_dicts,
    down,
    register_engine,
    server_command,
    start,
    stop,
    up,
    wait_healthy,
)
from services.local_engines.paths import (
    engines_dir,
    gguf_path,
    hf_model_dir,
    is_installed,
    llama_server_path,
    state_dir,
)
from services.local_engines.state import status

# Callers (and tests) read a PID's liveness here, as before the split.
from services.processes import pid_alive

__all__ = [
    "BACKENDS",
    "ENGINE_NICENESS",
    "LLAMACPP_THREADS",
    "LLAMA_CPP_PACKAGE",
    "MODEL_NAME",
    "MODEL_PACKAGE",
    "VLLM_CONVERT_PACKAGES",
    "VLLM_PACKAGE",
    "VLLM_SERVED_NAME",
    "VLLM_UNWANTED",
    "LocalEngineSpec",
    "LocalEngineStatus",
    "Status",
    "as_dicts",
    "down",
    "engines_dir",
    "get_spec",
    "gguf_path",
    "hf_model_dir",
    "install",
    "install_llamacpp",
    "is_installed",
    "llama_server_path",
    "llamacpp_package",
    "niced",
    "pid_alive",
    "register_engine",
    "server_command",
    "specs",
    "start",
    "state_dir",
    "status",
    "stop",
    "up",
    "wait_healthy",
]
