"""Sample files of each tool's documented output format (see samples/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parent / "samples"


@pytest.fixture
def samples() -> Path:
    return SAMPLES
