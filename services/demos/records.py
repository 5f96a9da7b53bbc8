"""What the Demos page, the report and `shootout demo` read of one demo: typed records built
from its run row and its summary (summary.DemoSummary), never from string keys elsewhere."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from services.demos.base import DemoVerdict
from services.demos.readout import BigNumber, ChartSpec, one_time_unit
from services.demos.summary import StepBlock


@dataclass(frozen=True)
class StepView:
    index: int
    key: str
    title: str
    explanation: str
    status: str
    numbers: list[BigNumber]
    chart: ChartSpec | None
    finding: str
    errors: list[str]
    data: dict[str, Any]


@dataclass(frozen=True)
class DemoView:
    run_id: int
    scenario: str
    title: str
    mechanism: str
    explanation: str
    status: str
    progress: float
    engines: list[str]
    options: dict[str, Any]
    steps: list[StepView]
    conclusion: str | None
    conclusion_headline: str | None
    conclusion_lines: list[str]
    verdicts: dict[str, DemoVerdict]
    skipped_engines: dict[str, str]
    #: Index of the step that waits for "Next step" (None when nothing waits).
    awaiting: int | None
    paused: bool
    error: str | None
    created_at: datetime | None
    finished_at: datetime | None
    request_count: int

    @property
    def live(self) -> bool:
        return self.status in ("pending", "running")

    @property
    def next_step_title(self) -> str | None:
        if self.awaiting is None or self.awaiting >= len(self.steps):
            return None
        return self.steps[self.awaiting].title


@dataclass(frozen=True)
class DemoListItem:
    run_id: int
    scenario: str
    title: str
    status: str
    engines: list[str]
    created_at: datetime
    conclusion: str | None

    @property
    def label(self) -> str:
        when = self.created_at.strftime("%Y-%m-%d %H:%M")
        return f"#{self.run_id} {self.title} · {', '.join(self.engines)} · {when} · {self.status}"


def step_view(index: int, step: StepBlock) -> StepView:
    """One stored step as the page draws it."""
    stored = step.get("chart")
    numbers = [BigNumber(**n) for n in step.get("numbers") or []]
    texts = one_time_unit([n.text for n in numbers], [n.value for n in numbers])
    numbers = [replace(n, text=text) for n, text in zip(numbers, texts, strict=True)]
    chart = ChartSpec.from_dict(stored) if isinstance(stored, dict) else None
    if chart is not None:
        labelled = [s for s in chart.series if s.text is not None and len(s.text) == len(s.y)]
        labels = one_time_unit(
            [t for s in labelled for t in s.text or []], [v for s in labelled for v in s.y]
        )
        for series in labelled:
            series.text, labels = labels[: len(series.y)], labels[len(series.y) :]
    return StepView(
        index=index,
        key=str(step.get("key", "")),
        title=str(step.get("title", "")),
        explanation=str(step.get("explanation", "")),
        status=str(step.get("status", "pending")),
        numbers=numbers,
        chart=chart,
        finding=str(step.get("finding") or ""),
        errors=[str(e) for e in step.get("errors") or []],
        data=dict(step.get("data") or {}),
    )
