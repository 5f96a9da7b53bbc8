"""SGLang's tunable settings (`sglang.launch_server` 0.5.23 flags), and what the local launcher
passes on this machine."""

from __future__ import annotations

from services.engines.sglang.local import DEFAULT_SETTINGS
from services.engines.tuning import KindTuning, Setting, choice, decimal, integer

TUNING = KindTuning(
    "sglang",
    (
        Setting(
            "max-running-requests",
            "--max-running-requests",
            integer(1, 4096),
            "requests running at once",
        ),
        Setting(
            "chunked-prefill-size",
            "--chunked-prefill-size",
            integer(-1, 1_048_576),
            "prefill chunk, tokens (-1: no chunking)",
        ),
        Setting(
            "schedule-policy",
            "--schedule-policy",
            choice("fcfs", "lpm", "random", "dfs-weight", "lof", "hrrn", "shortest-prefill-first"),
            "scheduling policy (0.5.23 default: fcfs)",
        ),
        Setting(
            "max-total-tokens",
            "--max-total-tokens",
            integer(256, 16_777_216),
            "tokens in the KV pool",
        ),
        Setting(
            "mem-fraction-static", "--mem-fraction-static", decimal(0.05, 0.99), "static memory share"
        ),
        Setting("context-length", "--context-length", integer(64, 1_048_576), "longest sequence"),
    ),
    # The verified CPU run (guide: "SGLang 0.5.23 on CPU"): without a bound on the KV pool a CPU
    # run can claim tens of GB; 8 running requests is what 2 cores batch well.
    local_defaults={flag.removeprefix("--"): value for flag, value in DEFAULT_SETTINGS},
    portable_command="python -m sglang.launch_server --model-path MODEL",
    # The CPU engine, its sgl_kernel stand-in on PYTHONPATH and its thread count.
    command_env=("SGLANG_", "PYTHONPATH", "OMP_NUM_THREADS"),
)
