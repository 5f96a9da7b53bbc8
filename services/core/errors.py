"""The project's own error types. Services raise these (with a message fit to show a
user); pages show the message, the CLI prints it and exits non-zero."""

from __future__ import annotations


class ShootoutError(Exception):
    """Base of every error a user may see."""


class ValidationError(ShootoutError):
    """Bad input from a form, a flag or a file."""


class NotFoundError(ShootoutError):
    """A named thing (engine, run) does not exist."""


class ConflictError(ShootoutError):
    """The thing exists already (a duplicate name)."""


class EngineError(ShootoutError):
    """An engine could not be reached or answered in a way we cannot use."""


class SettingError(ValidationError):
    """A SHOOTOUT_* environment variable holds a value the app cannot use."""
