"""The lenient readers every typed summary reads stored JSON through."""

from __future__ import annotations

import math

import pytest

from services import stored_json


@pytest.mark.parametrize("odd", [None, True, "1", [1], {"a": 1}, math.nan, math.inf, -math.inf])
def test_a_number_is_a_finite_int_or_float_and_nothing_else(odd: object) -> None:
    assert stored_json.number(odd) is None
    assert stored_json.count(odd) == 0


def test_the_values_that_read() -> None:
    assert stored_json.number(3) == 3.0 and stored_json.number(2.5) == 2.5
    assert stored_json.count(2.9) == 2
    assert stored_json.mapping({"a": 1}) == {"a": 1} and stored_json.mapping([("a", 1)]) == {}
    original = {"a": 1}
    assert stored_json.mapping(original) is not original  # a copy: the caller may change it
    assert stored_json.text("") == "" and stored_json.nonempty_text("") is None
    assert stored_json.text(5) is None and stored_json.nonempty_text("x") == "x"
