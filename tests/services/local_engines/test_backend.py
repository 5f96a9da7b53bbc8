"""The backends' registry sits below the engine kinds (docs/architecture.md, "Layers"): the
kinds' registry lends it the loader of each kind's `local.py`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

CODE = """
from services import local_engines
try:
    local_engines.specs()
except RuntimeError as error:
    print(error)
import services.engines
print(sorted(b.name for b in local_engines.backends()))
"""


def test_the_kinds_lend_their_backends_and_none_lent_is_said() -> None:
    # A fresh process: this one has imported the engine kinds long ago.
    answer = subprocess.run(
        [sys.executable, "-c", CODE], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    said, names = answer.stdout.splitlines()
    assert said == "No engine kinds loaded: import services.engines before the local engines."
    assert names == "['llamacpp', 'router', 'sglang', 'triton', 'vllm']"
