"""Real engines on this machine: install, launch, watch and stop them.

The local engines serve SmolLM2-135M-Instruct on 127.0.0.1, each in its own virtual
environment and process (as in production, where each engine has its own container):

| id | engine | port | why |
|---|---|---|---|
| llamacpp-4slot | llama.cpp, 4 parallel slots, prompt cache on | 8081 | continuous batching + prefix reuse |
| vllm-cpu | vLLM on CPU, automatic prefix caching | 8082 | the reference production engine |
| llamacpp-1slot | llama.cpp, 1 slot, no prompt cache | 8083 | the baseline without batching or cache |
| sglang-cpu | SGLang on CPU, radix prefix cache | 8084 | RadixAttention; vLLM's parity partner |

Only these fixed specs can be launched: the page and the CLI pick an id, never a
command line, so nothing typed in the browser can run a program.

State (PID, port, log) lives in `<engines dir>/run/state.json`; processes run in
their own session, so they outlive the command or page that started them.

Each engine kind's backend (its specs, install steps, smoke run and command line) lives with
the kind, in `services/engines/<kind>/local.py`; `backend` is their interface and registry.
The parts here: `catalog` (the chosen specs, the status record), `paths` (what is installed
where), `installer` (the shared steps: venvs, pip, the model and its HF conversion), `state`
(the state file, status), `launch` (start, stop, up, down), `sharing` (what a
comparison says of the cores the engines share). Callers import
from this package.
"""

# Callers (and tests) read a PID's liveness here, as before the split.
from services.core.processes import pid_alive
from services.local_engines.backend import backend_names, backends, get_backend
from services.local_engines.catalog import (
    ENGINE_NICENESS,
    LocalEngineSpec,
    LocalEngineStatus,
    all_specs,
    get_spec,
    niced,
    specs,
)
from services.local_engines.installer import install
from services.local_engines.launch import (
    as_dicts,
    down,
    server_command,
    start,
    stop,
    stop_many,
    up,
)
from services.local_engines.paths import (
    engines_dir,
    gguf_path,
    hf_model_dir,
    is_installed,
    llama_server_path,
    state_dir,
)
from services.local_engines.sharing import shared_cores_note
from services.local_engines.state import status

__all__ = [
    "ENGINE_NICENESS",
    "LocalEngineSpec",
    "LocalEngineStatus",
    "all_specs",
    "as_dicts",
    "backend_names",
    "backends",
    "down",
    "engines_dir",
    "get_backend",
    "get_spec",
    "gguf_path",
    "hf_model_dir",
    "install",
    "is_installed",
    "llama_server_path",
    "niced",
    "pid_alive",
    "server_command",
    "shared_cores_note",
    "specs",
    "start",
    "state_dir",
    "status",
    "stop",
    "stop_many",
    "up",
]
