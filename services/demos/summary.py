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

from dataclasses import dataclass, field
from typing import Any

from services import stored_json

StepBlock = dict[str, Any]

#: The keys this record knows; anything else a summary holds is kept in `extra`.
_KNOWN = (
    "scenario",
    "title",
    "steps",
    "awaiting",
    "skipped_engines",
    "engine_versions",
    "conclusion",
    "conclusion_headline",
    "conclusion_lines",
    "verdicts",
)


def _texts(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    return {str(k): str(v) for k, v in value.items()}


@dataclass(frozen=True)
class DemoSummary:
    scenario: str | None = None
    title: str | None = None
    steps: list[StepBlock] = field(default_factory=list)
    #: Index of the step that waits for "Next step" (None when nothing waits).
    awaiting: int | None = None
    #: Engine -> why it was left out; None until the worker has probed the engines.
    skipped_engines: dict[str, str] | None = None
    engine_versions: dict[str, str] = field(default_factory=dict)
    #: The measured conclusion in one text; None until the demo has concluded.
    conclusion: str | None = None
    conclusion_headline: str | None = None
    conclusion_lines: list[str] | None = None
    verdicts: dict[str, dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: DemoSummary | dict[str, Any] | None) -> DemoSummary:
        if isinstance(data, DemoSummary):
            return data
        data = data if isinstance(data, dict) else {}
        awaiting = data.get("awaiting")
        lines = data.get("conclusion_lines")
        verdicts = data.get("verdicts")
        return cls(
            scenario=stored_json.text(data.get("scenario")),
            title=stored_json.text(data.get("title")),
            steps=[step for step in data.get("steps") or [] if isinstance(step, dict)],
            awaiting=awaiting if isinstance(awaiting, int) and not isinstance(awaiting, bool) else None,
            skipped_engines=_texts(data.get("skipped_engines")),
            engine_versions=_texts(data.get("engine_versions")) or {},
            conclusion=stored_json.text(data.get("conclusion")),
            conclusion_headline=stored_json.text(data.get("conclusion_headline")),
            conclusion_lines=[str(line) for line in lines] if isinstance(lines, list) else None,
            verdicts=(
                {str(k): v for k, v in verdicts.items() if isinstance(v, dict)}
                if isinstance(verdicts, dict)
                else None
            ),
            extra={k: v for k, v in data.items() if k not in _KNOWN},
        )

    def to_json(self) -> dict[str, Any]:
        """The stored shape: the parts a demo writes as it goes only once it has written them."""
        out: dict[str, Any] = {"steps": self.steps, "awaiting": self.awaiting}
        optional: dict[str, Any] = {
            "scenario": self.scenario,
            "title": self.title,
            "skipped_engines": self.skipped_engines,
            "engine_versions": self.engine_versions or None,
            "conclusion": self.conclusion,
            "conclusion_headline": self.conclusion_headline,
            "conclusion_lines": self.conclusion_lines,
            "verdicts": self.verdicts,
        }
        out.update({key: value for key, value in optional.items() if value is not None})
        out.update(self.extra)
        return out

    @property
    def concluded(self) -> bool:
        return self.conclusion is not None
