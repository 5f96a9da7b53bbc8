"""Numbers that name stored things (a run, an exchange, a session), read from an address or the
command line: one the database can hold, or one line saying why not. A 20-digit number used to
reach the database and come back as a traceback (SQLite's OverflowError, PostgreSQL's DataError)."""

from __future__ import annotations

from services.core.errors import ValidationError

#: PostgreSQL's `integer`, the smallest id column of the databases the app runs on.
MAX_ID = 2**31 - 1
_MAX_DIGITS = len(str(MAX_ID))


def parse_id(value: object, what: str = "run") -> int:
    """`12` or `#12` as 12; anything else, 0 or a number past MAX_ID is refused in words."""
    text = str(value).strip().lstrip("#")
    if not (text.isascii() and text.isdigit() and len(text) <= _MAX_DIGITS and 1 <= int(text) <= MAX_ID):
        raise ValidationError(f"{str(value)[:40]!r} is not a {what} number.")
    return int(text)


def address_id(value: str | None, what: str = "run") -> int | None:
    """An address's id (`?run=12`): None when the address has none; refused in words when it
    names something that cannot be one."""
    if value is None or not str(value).strip():
        return None
    return parse_id(value, what)


def run_number(text: str) -> int:
    """The command line's `type=` for a run number. Its ValidationError passes through argparse
    (which catches only ValueError and TypeError) to one line from shootout/cli.py, exit 2."""
    return parse_id(text)
