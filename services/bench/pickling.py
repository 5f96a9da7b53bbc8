"""How what a pooled load moves between processes is pickled: each conversation
crosses once (coordinator or Ray hub to a worker), each request record once back."""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, TypeVar

DataclassType = TypeVar("DataclassType", bound=type)


def pickled_as_fields(cls: DataclassType) -> DataclassType:
    """A dataclass pickled as its constructor's arguments in field order. A slotted
    dataclass's own `__getstate__`/`__setstate__` look its fields up on every object: 8.8 µs
    to pickle and unpickle a conversation and 3.3 µs a record on this VM, against 5.0 and
    1.3 this way (benchmarks/bench_pickling.py), and records pickle 40 % smaller."""
    fields = dataclasses.fields(cls)
    if any(not field.init for field in fields):
        raise TypeError(f"{cls.__name__}: every field must be an __init__ argument")
    values = operator.attrgetter(*(field.name for field in fields))
    single = len(fields) == 1

    def __reduce__(self: Any) -> tuple[Any, tuple[Any, ...]]:
        found = values(self)
        return cls, (found,) if single else found

    cls.__reduce__ = __reduce__  # type: ignore[assignment]  # set on the built class, as dataclass does
    return cls
