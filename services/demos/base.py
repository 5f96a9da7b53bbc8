"""What a guided demo is made of: a scenario, its steps, what a step measured, and the
conclusion written from those measurements.

A scenario plans its steps for the engines the presenter picked; each step runs a small
scripted experiment through a `DemoContext` (services.demos.context) and returns a
`StepOutcome`: a few large numbers, one chart, a one-sentence finding and the raw
figures. The conclusion is a pure function of the stored steps, so a replay renders
from the database alone and the threshold logic is unit-tested on known numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Self, TypeAlias, TypeVar, cast

from services.core import stored_json
from services.core.errors import ValidationError
from services.core.json_types import JsonOut
from services.core.stored_json import Stored, stored
from services.demos.readout import StepData, StepOutcome
from services.demos.summary import StepBlock

if TYPE_CHECKING:
    from services.demos.context import DemoContext
    from services.engines.endpoints import EngineRecord


# ---------------------------------------------------------------- measured records


@dataclass(frozen=True)
class StepPlan:
    key: str
    title: str
    explanation: str
    run: Callable[[DemoContext], StepOutcome]


def _not_stored(_: object) -> frozenset[str]:
    return frozenset()


@dataclass(frozen=True)
class DemoVerdict(Stored):
    """One engine's verdict in a demo's conclusion: each scenario's record declares its figures
    as fields (`stored(...)`), so its sentences, headline and `demo --json` read fields, and a
    misspelt figure is a type error, not a silent None.

    A demo replays from what it stored, whichever version stored it: a field the stored JSON
    lacks reads as its neutral value and stays unwritten, so `from_json(s).to_json() == s`."""

    #: Keys of a later version, kept as they are and written back.
    extra: JsonOut = stored(stored_json.mapping, factory=dict)
    #: The fields the stored JSON did not hold (`to_json` leaves them out again).
    unstored: frozenset[str] = field(
        default=frozenset(), compare=False, repr=False, metadata={"read": _not_stored, "write": "always"}
    )

    @classmethod
    def from_json(cls, data: Any) -> Self:
        if isinstance(data, cls):
            return data
        record = super().from_json(data)
        given = stored_json.mapping(data)
        absent = frozenset(f.name for f in fields(cls) if f.name not in given) - {"extra", "unstored"}
        return replace(record, unstored=absent)

    def to_json(self) -> JsonOut:
        out = super().to_json()
        del out["unstored"]
        for name in self.unstored:
            out.pop(name, None)
        return out


def kind(*kinds: str, neutral: str | None = "failed") -> Callable[[Any], str | None]:
    """The reader of a verdict's kind: one of `kinds` as stored, anything else (missing,
    misspelt, from a later version) `neutral`."""

    def read(value: Any) -> str | None:
        return value if value in kinds else neutral

    return read


@dataclass(frozen=True)
class Conclusion:
    """The measured conclusion: a headline, one line per engine, and per engine the
    verdict the lines were written from (machine-readable, for `demo --json` and tests)."""

    headline: str
    lines: list[str] = field(default_factory=list)
    verdicts: Mapping[str, DemoVerdict] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return join_sentences([self.headline, *self.lines])


# ---------------------------------------------------------------- options

#: A setting's value once parsed (OptionSpec.parse): by its kind, a whole number, a number,
#: whole numbers, or text.
OptionValue: TypeAlias = int | float | list[int] | str
#: Settings as the presenter gave them (CLI text, widget values, a stored config): nothing is
#: read from them but through their OptionSpec's parse.
RawSettings: TypeAlias = Mapping[str, object]
#: A scenario's parsed settings: a TypedDict of its own, one key per OptionSpec.
OptionsT = TypeVar("OptionsT", bound=Mapping[str, object])


@dataclass(frozen=True)
class OptionSpec:
    """A setting of a scenario the presenter may change (CLI: --set key=value)."""

    key: str
    label: str
    default: OptionValue
    kind: Literal["int", "float", "int_list", "choice", "text"] = "int"
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()

    def parse(self, raw: Any) -> OptionValue:
        """The typed value of `raw` (a string from the CLI or a widget value)."""
        value: OptionValue
        try:
            if self.kind == "int":
                whole = int(raw)
                self._check_range(whole)
                value = whole
            elif self.kind == "float":
                real = float(raw)
                if not math.isfinite(real):
                    raise ValueError
                self._check_range(real)
                value = real
            elif self.kind == "int_list":
                items = raw if isinstance(raw, (list, tuple)) else str(raw).replace(";", ",").split(",")
                numbers = [int(str(item).strip()) for item in items if str(item).strip()]
                if not numbers:
                    raise ValueError
                for number in numbers:
                    self._check_range(number)
                value = numbers
            elif self.kind == "choice":
                value = str(raw)
                if self.choices and value not in self.choices:
                    raise ValidationError(
                        f"{self.label}: choose one of {', '.join(self.choices)} (got {value!r})."
                    )
            else:
                value = str(raw).strip()
        except ValidationError:
            raise
        except (TypeError, ValueError):
            what = {
                "int": "a whole number",
                "float": "a number",
                "int_list": "whole numbers separated by commas",
            }
            raise ValidationError(
                f"{self.label} must be {what.get(self.kind, 'text')} (got {raw!r})."
            ) from None
        return value

    def _check_range(self, value: float) -> None:
        if self.minimum is not None and value < self.minimum:
            raise ValidationError(f"{self.label} must be at least {self.minimum:g} (got {value:g}).")
        if self.maximum is not None and value > self.maximum:
            raise ValidationError(f"{self.label} must be at most {self.maximum:g} (got {value:g}).")


# ---------------------------------------------------------------- scenario


class Scenario(Generic[OptionsT]):
    """One mechanism of LLM serving, shown by a short scripted experiment; `OptionsT` is the
    TypedDict of its parsed settings."""

    name: ClassVar[str]
    title: ClassVar[str]
    #: What it is called in the engines' own documentation.
    mechanism: ClassVar[str]
    explanation: ClassVar[str]
    default_engines: ClassVar[tuple[str, ...]] = ("llamacpp-4slot", "vllm-cpu", "llamacpp-1slot")
    options: ClassVar[tuple[OptionSpec, ...]] = ()
    duration_hint: ClassVar[str] = "about a minute on the local CPU engines"
    min_engines: ClassVar[int] = 1
    #: The record of one engine's verdict in this scenario's conclusion (stored demos read back
    #: into it).
    verdict_record: ClassVar[type[DemoVerdict]] = DemoVerdict

    def plan(self, engines: Sequence[EngineRecord], options: OptionsT) -> list[StepPlan]:
        raise NotImplementedError

    def conclude(
        self, steps: Sequence[StepBlock], engines: Sequence[str], options: OptionsT
    ) -> Conclusion:
        raise NotImplementedError

    def resolve_options(self, given: RawSettings | None) -> OptionsT:
        """Defaults filled in, each value typed and checked; unknown keys are an error."""
        given = dict(given or {})
        known = {o.key: o for o in self.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            listing = ", ".join(known) or "none"
            raise ValidationError(
                f"Scenario {self.name!r} has no setting {', '.join(unknown)}; its settings: {listing}."
            )
        # Every key of the scenario's OptionsT, each parsed by its OptionSpec.
        return cast(
            OptionsT,
            {
                key: spec.parse(given[key]) if key in given else spec.default
                for key, spec in known.items()
            },
        )

    def describe(self) -> JsonOut:
        return {
            "name": self.name,
            "title": self.title,
            "mechanism": self.mechanism,
            "explanation": self.explanation,
            "default_engines": list(self.default_engines),
            "duration_hint": self.duration_hint,
            "options": [asdict(o) for o in self.options],
        }


# ---------------------------------------------------------------- sentences and stored steps


def join_sentences(lines: Iterable[str]) -> str:
    return " ".join(line.strip() for line in lines if line and line.strip())


def engine_data(steps: Sequence[StepBlock], key: str) -> StepData:
    """The `data` of the stored step with this key ({} when it did not run)."""
    for step in steps:
        if step.get("key") == key:
            return step.get("data") or {}
    return {}
