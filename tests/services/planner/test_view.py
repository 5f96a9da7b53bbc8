"""The Planner page's service functions: form answers checked and turned into typed values."""

from __future__ import annotations

import pytest

from services.errors import ValidationError
from services.planner import view


def test_constraints_take_the_forms_choices() -> None:
    constraints = view.constraints("cpu", 1, "interactive", "some", False, "standard", "gguf")
    assert constraints.hardware == "cpu" and constraints.model_format == "gguf"


def test_an_unknown_choice_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="Unknown hardware 'tpu'"):
        view.constraints("tpu", 1, "interactive", "some", False, "standard", "hf")


def test_adding_a_model_needs_a_file_or_a_path() -> None:
    with pytest.raises(ValidationError, match="Upload a config.json or GGUF file"):
        view.add_model(key="m", name="M")


def test_rate_stays_short_for_a_quarter_width_metric() -> None:
    assert view.rate(12_345_678) == "12.3M tok/s" and view.rate(950.4) == "950 tok/s"
