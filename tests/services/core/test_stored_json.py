"""The lenient readers every typed summary reads stored JSON through."""

from __future__ import annotations

import math

import pytest

from services.core import stored_json


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


from dataclasses import dataclass
from typing import Any

from services.core.stored_json import Stored, stored


@dataclass(frozen=True)
class _Inner(Stored):
    n: int = stored(stored_json.count, default=0)
    extra: dict[str, Any] = stored(stored_json.mapping, factory=dict)


def _inner(value: Any) -> _Inner | None:
    return _Inner.from_json(value) if isinstance(value, dict) else None


@dataclass(frozen=True)
class _Record(Stored):
    DERIVED = ("n_copy",)

    name: str | None = stored(stored_json.nonempty_text, default=None, write="unless_none")
    rows: list[dict[str, Any]] = stored(stored_json.dicts, factory=list, write="unless_empty")
    inner: _Inner | None = stored(_inner, default=None)
    extra: dict[str, Any] = stored(stored_json.mapping, factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if self.inner is not None:
            out["n_copy"] = self.inner.n
        return out


def test_a_stored_record_reads_and_writes_by_its_declarations() -> None:
    stored_value = {
        "name": "a",
        "rows": [{"x": 1}],
        "inner": {"n": 3, "new": 1},
        "n_copy": 3,
        "later": [1],
    }
    record = _Record.from_json(stored_value)
    assert record == _Record(
        name="a", rows=[{"x": 1}], inner=_Inner(n=3, extra={"new": 1}), extra={"later": [1]}
    )
    assert record.to_json() == stored_value  # unknown keys kept, derived ones rewritten
    assert _Record.from_json(record) is record


def test_a_stored_record_reads_odd_values_as_neutral_ones_and_omits_what_it_may() -> None:
    record = _Record.from_json({"name": "", "rows": "x", "inner": [1]})
    assert record == _Record()
    assert record.to_json() == {"inner": None}
    assert _Record.from_json(None) == _Record() and _Record.from_json(["not", "a", "dict"]) == _Record()
