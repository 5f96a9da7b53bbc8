"""A demo run's summary (Run.summary of kind "demo") as one typed record.

start_demo stores the first one (scenario, title, no steps, nothing awaited); the worker
(runner._Writer) rewrites it as each step measures and at the end; every reader goes through
`DemoSummary.from_json`, which takes what any version stored and never raises on a missing or
odd key. The stored JSON keeps its shape: `from_json(s).to_json() == s` for every summary
written so far, keys unknown here included.

Each step stays a mapping (`StepBlock`: key, title, explanation, status, numbers, chart,
finding, data, errors, started_at, finished_at): the worker and the scenarios fill it in place
as it runs, and records.step_view reads it into a typed StepView for the page, the report and
the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict, cast

from services.core import stored_json
from services.core.json_types import JsonOut
from services.core.stored_json import Stored, stored
from services.demos.readout import ChartJson, NumberJson, StepData


class StepBlock(TypedDict, total=False):
    """One stored step. Any key may be missing from a step some version stored (its readers
    default each); a step the worker plans holds them all but the times."""

    key: str
    title: str
    explanation: str
    #: "pending", "running", "finished", "failed", "skipped" or "cancelled".
    status: str
    numbers: list[NumberJson]
    chart: ChartJson | None
    finding: str
    data: StepData
    errors: list[str]
    started_at: str
    finished_at: str


def _steps(value: object) -> list[StepBlock]:
    # The stored JSON as it is: each step is read key by key by its readers, never trusted whole.
    return cast(list[StepBlock], stored_json.dicts(value))


@dataclass(frozen=True)
class DemoSummary(Stored):
    """The parts a demo writes as it goes are stored only once it has written them."""

    scenario: str | None = stored(stored_json.text, default=None, write="unless_none")
    title: str | None = stored(stored_json.text, default=None, write="unless_none")
    steps: list[StepBlock] = stored(_steps, factory=list)
    #: Index of the step that waits for "Next step" (None when nothing waits).
    awaiting: int | None = stored(stored_json.optional_int, default=None)
    #: Engine -> why it was left out; None until the worker has probed the engines.
    skipped_engines: dict[str, str] | None = stored(
        stored_json.optional_texts, default=None, write="unless_none"
    )
    engine_versions: dict[str, str] = stored(stored_json.texts, factory=dict, write="unless_empty")
    #: The measured conclusion in one text; None until the demo has concluded.
    conclusion: str | None = stored(stored_json.text, default=None, write="unless_none")
    conclusion_headline: str | None = stored(stored_json.text, default=None, write="unless_none")
    conclusion_lines: list[str] | None = stored(
        stored_json.optional_text_list, default=None, write="unless_none"
    )
    #: Engine -> its verdict's JSON, read only through the scenario's verdict record.
    verdicts: dict[str, JsonOut] | None = stored(
        stored_json.optional_dict_values, default=None, write="unless_none"
    )
    #: Keys of a later version, kept as they are and written back.
    extra: JsonOut = stored(stored_json.mapping, factory=dict)
