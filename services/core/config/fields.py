"""One setting: the environment variable it is read from, its type, its default and its meaning.

A `Setting` is a read-only descriptor on `Settings`: each read looks at the variable now (tests
change the environment between calls), and parses it only when its text changed since the last
read, so a per-request read costs one environment lookup. A value that does not parse raises
`SettingError` naming the variable and what it expects.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from services.core.errors import SettingError

T = TypeVar("T")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


_get = os.environ.get


class Unfit(ValueError):
    """A parser's refusal; the text says what the variable expects."""


class Setting(Generic[T]):
    def __init__(
        self,
        env: str,
        meaning: str,
        parse: Callable[[str], T],
        default: T | Callable[[Any], T],
        *,
        aliases: tuple[str, ...] = (),
        keep_blank: bool = False,
        cache: bool = True,
    ) -> None:
        """`default` may be a function of the settings (a value derived from another one).
        `keep_blank`: whitespace is a value (a password), not "unset". `cache`: False where the
        parsed value depends on more than the text (a relative path on the working folder)."""
        self.env = env
        self.aliases = aliases
        self.meaning = meaning
        self.parse = parse
        self.default = default
        self.keep_blank = keep_blank
        self.cache = cache
        self.attr = ""
        self._last: tuple[object, T] | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        self.attr = name

    @property
    def names(self) -> tuple[str, ...]:
        """The variable and its older names, in the order they are consulted."""
        return (self.env, *self.aliases)

    def raw(self) -> tuple[str | None, str]:
        """The text set now (None: unset, or blank) and the variable it came from."""
        for name in self.names:
            text = os.environ.get(name)
            if text is not None and (text if self.keep_blank else text.strip()):
                return text, name
        return None, self.env

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Setting[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> T | Setting[T]:
        if obj is None:
            return self
        # The fast path (the gate reads settings on every request): one lookup per name, and the
        # parsed value again while the variables' texts are the ones it was parsed from.
        seen = _get(self.env) if not self.aliases else tuple(map(_get, self.names))
        last = self._last
        if last is not None and last[0] == seen:
            return last[1]
        text, name = self.raw()
        value = self._value(obj, text, name)
        if self.cache and (text is not None or not callable(self.default)):
            self._last = (seen, value)
        return value

    def __set__(self, obj: object, value: object) -> None:
        raise AttributeError(f"{self.attr} is read from the environment ({self.env}); set that instead")

    def _value(self, obj: object, text: str | None, name: str) -> T:
        if text is None:
            default = self.default
            return default(obj) if callable(default) else default
        try:
            return self.parse(text)
        except Unfit as refusal:
            raise SettingError(f"{name}={text!r} is not valid: it expects {refusal}.") from None


# ---------------------------------------------------------------- parsers


def text(raw: str) -> str:
    return raw.strip()


def optional_text(raw: str) -> str | None:
    return raw.strip() or None


def verbatim(raw: str) -> str | None:
    """As typed, spaces included (a password, a secret)."""
    return raw or None


def path(raw: str) -> Path:
    return Path(raw.strip()).resolve()


def whole(low: int, high: int | None = None) -> Callable[[str], int]:
    expects = f"a whole number from {low} to {high}" if high else f"a whole number of at least {low}"

    def parse(raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise Unfit(expects) from None
        if value < low or (high is not None and value > high):
            raise Unfit(expects)
        return value

    return parse


def positive(unit: str) -> Callable[[str], float]:
    expects = f"a number of {unit} above 0 (such as 12 or 0.5)"

    def parse(raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise Unfit(expects) from None
        if not value > 0 or value == float("inf"):
            raise Unfit(expects)
        return value

    return parse


def flag(on: tuple[str, ...], off: tuple[str, ...]) -> Callable[[str], bool]:
    expects = f"{' or '.join(on)} (on), or {' or '.join(off)} (off)"

    def parse(raw: str) -> bool:
        word = raw.strip().lower()
        if word in on:
            return True
        if word in off:
            return False
        raise Unfit(expects)

    return parse


def words(lower: bool = False, upper: bool = False) -> Callable[[str], tuple[str, ...]]:
    """A comma-separated list; blank items are dropped."""

    def parse(raw: str) -> tuple[str, ...]:
        items = (item.strip() for item in raw.split(","))
        return tuple(
            item.lower() if lower else item.upper() if upper else item for item in items if item
        )

    return parse


def backends(raw: str) -> tuple[str, ...] | None:
    """Local backend names; `all` (or nothing) is all of them, `none` none. Which names exist is
    checked where the backends are known (services/local_engines/catalog.py)."""
    if raw.strip().lower() == "all":
        return None
    if raw.strip().lower() == "none":
        return ()
    return words(lower=True)(raw)


def networks(raw: str) -> tuple[Network, ...]:
    found: list[Network] = []
    for item in words()(raw):
        try:
            found.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise Unfit(
                f"addresses or networks, comma-separated (10.0.0.5,10.1.0.0/16); {item!r} is neither"
            ) from None
    return tuple(found)
