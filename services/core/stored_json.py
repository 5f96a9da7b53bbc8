"""Lenient readers of stored JSON: a run's summary comes from this version, an older one or an
imported file, so a field may be missing or of another type. Each reader returns the value
when it has the expected type, else a neutral one, and never raises.

The typed summaries of every run kind (services/bench, tune, demos and parity) are `Stored`
dataclasses: each field names its reader and when it is written (`stored(...)`), and
`from_json`/`to_json` follow the fields, so a field is declared once, not read and written
by hand. Keys a summary holds that its record does not know stay in `extra`, so
`from_json(s).to_json() == s` for whatever a version or an import stored."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, field, fields
from typing import Any, ClassVar, Literal, Self

# The one reader of a number (a finite int or float; booleans, NaN, infinities, anything else:
# None), named here too because every typed summary reads its fields through this module.
from services.core.json_types import JsonOut
from services.core.units import number

#: When `to_json` writes a field: always, only when it is not None, only when it is truthy.
Write = Literal["always", "unless_none", "unless_empty"]


def mapping(value: Any) -> dict[str, object]:
    """A JSON object as a fresh dict (anything else: empty). A typed record that is also a
    mapping of its stored JSON (services/bench/results.py) reads as that JSON."""
    return dict(value) if isinstance(value, Mapping) else {}


def text(value: Any) -> str | None:
    """A string, the empty one included (anything else: None)."""
    return value if isinstance(value, str) else None


def nonempty_text(value: Any) -> str | None:
    """A string with something in it (anything else, "" included: None)."""
    return value if isinstance(value, str) and value else None


def count(value: Any) -> int:
    """A count: a finite number, truncated; anything else counts as 0."""
    found = number(value)
    return int(found) if found is not None else 0


def text_or_empty(value: Any) -> str:
    return value if isinstance(value, str) else ""


def flag(value: Any) -> bool:
    """True only for a stored true (a "yes" or a 1 is not a flag)."""
    return value is True


def optional_flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def optional_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def optional_mapping(value: Any) -> dict[str, object] | None:
    return dict(value) if isinstance(value, dict) else None


def optional_list(value: Any) -> list[Any] | None:
    return list(value) if isinstance(value, list) else None


def dicts(value: Any) -> list[dict[str, object]]:
    """The JSON objects of a list (anything else in it is dropped)."""
    if not isinstance(value, list):
        return []
    return [
        item if isinstance(item, dict) else dict(item) for item in value if isinstance(item, Mapping)
    ]


def dict_values(value: Any) -> dict[str, dict[str, object]]:
    """The entries of an object whose values are objects."""
    return {
        str(k): v if isinstance(v, dict) else dict(v)
        for k, v in mapping(value).items()
        if isinstance(v, Mapping)
    }


def optional_dict_values(value: Any) -> dict[str, dict[str, object]] | None:
    return dict_values(value) if isinstance(value, dict) else None


def texts(value: Any) -> dict[str, str]:
    """An object read as text -> text."""
    return {str(k): str(v) for k, v in mapping(value).items()}


def optional_texts(value: Any) -> dict[str, str] | None:
    return texts(value) if isinstance(value, dict) else None


def text_list(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def optional_text_list(value: Any) -> list[str] | None:
    return text_list(value) if isinstance(value, list) else None


def text_lists(value: Any) -> dict[str, list[str]]:
    """An object whose values are lists, read as text -> list of texts."""
    return {str(k): text_list(v) for k, v in mapping(value).items() if isinstance(v, list)}


def int_list(value: Any) -> list[int]:
    """The numbers of a list, truncated to integers (anything else in it is dropped)."""
    if not isinstance(value, list):
        return []
    return [int(found) for item in value if (found := number(item)) is not None]


def counts(value: Any) -> dict[str, int]:
    return {str(k): count(v) for k, v in mapping(value).items()}


def stored(
    read: Callable[[Any], Any],
    *,
    default: Any = MISSING,
    factory: Callable[[], Any] | None = None,
    write: Write = "always",
) -> Any:
    """A field of a `Stored` record: how its stored value is read, and when it is written."""
    metadata = {"read": read, "write": write}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


class Stored:
    """A frozen dataclass read from and written to stored JSON by its fields' declarations
    (`stored(...)`); its `extra` field holds the keys it does not know."""

    #: Keys `to_json` writes from other fields (copies for readers of the raw JSON): neither
    #: read back into a field nor kept in `extra`.
    DERIVED: ClassVar[tuple[str, ...]] = ()
    #: Write back only the keys the stored JSON held (a field written "always" included): an old
    #: or imported block without a figure stays without it, so `from_json(s).to_json() == s`. A
    #: record made in code (or by `replace`) writes every field as its `write` says.
    KEEP_ABSENT: ClassVar[bool] = False

    @classmethod
    def from_json(cls, data: Any) -> Self:
        if isinstance(data, cls):
            return data
        data = mapping(data)
        values: dict[str, object] = {}
        for declared in fields(cls):  # type: ignore[arg-type]  # a mixin of dataclasses
            if declared.name != "extra":
                values[declared.name] = declared.metadata["read"](data.get(declared.name))
        known = set(values) | set(cls.DERIVED)
        values["extra"] = {k: v for k, v in data.items() if k not in known}
        record = cls(**values)
        if cls.KEEP_ABSENT:
            object.__setattr__(record, "_stored_keys", frozenset(data))
        return record

    def to_json(self) -> JsonOut:
        out: JsonOut = {}
        stored_keys: frozenset[str] | None = self.__dict__.get("_stored_keys")
        for declared in fields(self):  # type: ignore[arg-type]  # a mixin of dataclasses
            if declared.name == "extra":
                continue
            if stored_keys is not None and declared.name not in stored_keys:
                continue
            value = getattr(self, declared.name)
            write = declared.metadata["write"]
            if (write == "unless_none" and value is None) or (write == "unless_empty" and not value):
                continue
            out[declared.name] = _plain(value)
        out.update(getattr(self, "extra", {}))
        return out


def _plain(value: Any) -> Any:
    """A field's value as JSON: nested records written by their own declarations; plain
    values as they are (no copy: summaries are written often and read-only after)."""
    if isinstance(value, Stored) or _is_record(value):
        return value.to_json()
    if isinstance(value, dict) and any(isinstance(v, Stored) or _is_record(v) for v in value.values()):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list) and any(isinstance(v, Stored) for v in value):
        return [_plain(v) for v in value]
    return value


def _is_record(value: Any) -> bool:
    """A typed value that writes itself (a Distribution of services/bench/results.py)."""
    return not isinstance(value, (dict, list, str, int, float, bool)) and callable(
        getattr(value, "to_json", None)
    )
