"""The backends' registry sits below the engine kinds (docs/architecture.md, "Layers"): the
kinds' registry lends it the loader of each kind's `local.py`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CODE = """from services import local_engines
try:
    local_engines.specs()
except RuntimeError as error:
    print(error)
import services.engines
print(sorted(b.name for b in local_engines.backends()))"""


def test_the_kinds_lend_their_backends_and_none_lent_is_said() -> None:
    # A fresh process: this one imported the engine kinds long ago.
    root = Path(__file__).resolve().parents[3]
    said = subprocess.run(
        [sys.executable, "-c", CODE], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert said.stdout.splitlines() == [
        "No engine kinds loaded: import services.engines before the local engines.",
        "['llamacpp', 'router', 'sglang', 'triton', 'vllm']",
    ], said.stderr
