"""What the Monitor's views return: per-source states, the page's options, one view
(charts, states, GPU processes, recordings) and a recording in the replay list."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from services.runstate.lifecycle import RunKind
from services.telemetry.gpu import GpuState
from services.telemetry.monitor.charts import Chart
from services.telemetry.recorder import RecorderInfo

#: One row of the GPU processes table, as the page shows it (named as its columns are).
ProcessRow = TypedDict(
    "ProcessRow",
    {"GPU": str, "process": str | None, "pid": int | None, "engine": str, "memory (GiB)": float | None},
)


@dataclass
class SourceStatus:
    source: str
    name: str
    label: str
    ok: bool
    message: str


@dataclass
class MonitorOptions:
    engines: list[tuple[str, str]]  # (name, kind label)
    gpu_state: GpuState
    dcgm_urls: list[str]
    prometheus_url: str | None
    prometheus_selector: str = ""


@dataclass
class MonitorView:
    charts: list[Chart]
    statuses: list[SourceStatus]
    processes: list[ProcessRow]
    recordings: list[RecorderInfo]
    gpu_message: str | None = None
    errors: list[str] = field(default_factory=list)
    span: tuple[float, float] | None = None  # recorded views: the whole recording
    window: tuple[float, float] | None = None  # recorded views: what is shown


@dataclass(frozen=True)
class RecordingRun:
    run_id: int
    name: str
    status: str
    started_at: Any
    engine_names: str
    kind: str = "recording"

    @property
    def title(self) -> str:
        """How the replay list names it: a benchmark's recording says it is one."""
        what = "" if self.kind == RunKind.RECORDING else f"{self.kind}, "
        return f"#{self.run_id} {self.name} ({what}{self.status}; {self.engine_names or 'GPUs only'})"
