"""What the Demos page, the report and `shootout demo` read of one demo: typed records built
from its run row (its config: `DemoConfig`) and its summary (summary.DemoSummary), never from
string keys elsewhere."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from datetime import datetime
from typing import NotRequired, TypedDict, cast

from services.demos.base import DemoVerdict, OptionValue
from services.demos.readout import BigNumber, ChartSpec, StepData, one_time_unit
from services.demos.summary import StepBlock
from services.engines.endpoints import EngineInfo, EngineRecord


class DemoControl(TypedDict, total=False):
    """The presenter's buttons, as the page writes them and the worker reads them."""

    pause: bool
    #: Steps up to this index may run while paused ("Next step").
    released: int
    stop: bool


class DemoConfig(TypedDict, total=False):
    """A demo run's `Run.config`: what was measured, and while it runs, the buttons."""

    scenario: str
    engines: list[str]
    options: dict[str, OptionValue]
    control: DemoControl


def demo_config(config: object) -> DemoConfig:
    """A run row's config as stored (a JSON column); every key read with its default."""
    return cast(DemoConfig, dict(config)) if isinstance(config, dict) else {}


class EngineSnapshot(TypedDict):
    """An engine as the demo found it at the start (`Run.engines`): its EngineRecord without
    the id."""

    name: str
    base_url: str
    kind: str
    model: NotRequired[str | None]
    api_key_env: NotRequired[str | None]
    metrics_url: NotRequired[str | None]
    local_id: NotRequired[str | None]
    info: NotRequired[EngineInfo]
    usd_per_hour: NotRequired[float | None]
    #: Not written since the registry's ids were left out; an older run may hold one.
    id: NotRequired[int]


def engine_snapshot(record: EngineRecord) -> EngineSnapshot:
    data = dataclasses.asdict(record)
    data.pop("id", None)
    # Every field of the record but its id, as EngineSnapshot declares them.
    return cast(EngineSnapshot, data)


def engine_from_snapshot(item: EngineSnapshot) -> EngineRecord:
    """The engine as it was when the demo started (the registry may change meanwhile)."""
    return EngineRecord(
        id=item.get("id", 0),
        name=item["name"],
        base_url=item["base_url"],
        kind=item["kind"],
        model=item.get("model"),
        api_key_env=item.get("api_key_env"),
        metrics_url=item.get("metrics_url"),
        local_id=item.get("local_id"),
        info=item.get("info", {}),
        usd_per_hour=item.get("usd_per_hour"),
    )


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
    data: StepData


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
    options: dict[str, OptionValue]
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
        data=(step.get("data") or {}).copy(),
    )
