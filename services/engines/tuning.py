"""What a kind's `tuning.py` (`services/engines/<kind>/tuning.py`) declares: its tunable
settings (each a flag with a check of its value) and how the local launcher starts it.

Nothing here knows a kind: `services.tune.spec` finds the kinds that have a `tuning.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from services.core.errors import ValidationError


def integer(low: int, high: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        try:
            number = int(value)
        except ValueError:
            raise ValidationError(f"expected a whole number, got {value!r}") from None
        if not low <= number <= high:
            raise ValidationError(f"{number} is outside {low} to {high}")
        return str(number)

    return check


def decimal(low: float, high: float) -> Callable[[str], str]:
    def check(value: str) -> str:
        try:
            number = float(value)
        except ValueError:
            raise ValidationError(f"expected a number, got {value!r}") from None
        if not low <= number <= high:
            raise ValidationError(f"{number:g} is outside {low:g} to {high:g}")
        return f"{number:g}"

    return check


def choice(*options: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in options:
            raise ValidationError(f"{value!r} is not one of {', '.join(options)}")
        return value

    return check


SWITCH = choice("on", "off")


@dataclass(frozen=True)
class Setting:
    """One tunable server setting: its flag and how to check a value. A switch (`on`/`off`)
    passes `flag` when on and `off_flag` (if any) when off."""

    key: str
    flag: str
    check: Callable[[str], str]
    help: str
    switch: bool = False
    off_flag: str | None = None
    #: Given through the environment rather than a flag (vLLM CPU's KV-cache space).
    env: str | None = None


def _placeholder_model() -> tuple[str | None, str]:
    return None, "MODEL"


@dataclass(frozen=True)
class KindTuning:
    """Everything about tuning one engine kind, in one place."""

    kind: str
    settings: tuple[Setting, ...]
    #: What the local launcher passes unless a configuration says otherwise (sized for the
    #: shared 2-core machine); used only where the kind has a local backend.
    local_defaults: Mapping[str, str] = field(default_factory=dict)
    #: The program a copied plain command names when the local engine is not installed here.
    portable_command: str = ""
    #: Environment variables (by prefix) of the local engine that a copied command must keep.
    command_env: tuple[str, ...] = ()
    #: (folder to mount at /models or None, the model as the image sees it) for the docker command.
    docker_model: Callable[[], tuple[str | None, str]] = _placeholder_model
