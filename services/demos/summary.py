"""A demo run's summary (Run.summary of kind "demo") as one typed record.

start_demo stores the first one (scenario, title, no steps, nothing awaited); the worker
(runner._Writer) rewrites it as each step measures and at the end; every reader goes through
`DemoSummary.from_json`, which takes what any version stored and never raises on a missing or
odd key. The stored JSON keeps its shape: `from_json(s).to_json() == s` for every summary
written so far, keys unknown here included.

Each step stays a mapping (key, title, explanation, status, numbers, chart, finding, data,
errors, started_at, finished_at): the worker and the scenarios fill it in place as it runs,
and records.step_view reads it into a typed StepView for the page, the report and the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.core import stored_json
from services.core.stored_json import Stored, stored

StepBlock = dict[str, Any]


@dataclass(frozen=True)
class DemoSummary(Stored):
    """The parts a demo writes as it goes are stored only once it has written them."""

    scenario: str | None = stored(stored_json.text, default=None, write="unless_none")
    title: str | None = stored(stored_json.text, default=None, write="unless_none")
    steps: list[StepBlock] = stored(stored_json.dicts, factory=list)
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
    verdicts: dict[str, dict[str, Any]] | None = stored(
        stored_json.optional_dict_values, default=None, write="unless_none"
    )
    extra: dict[str, Any] = stored(stored_json.mapping, factory=dict)
