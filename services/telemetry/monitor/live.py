"""The live view: sample the chosen engines and GPUs now (sharing fresh snapshots with
any recording) and chart the hub's recent history."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from services.core.config import get_settings
from services.engines.endpoints import list_engines
from services.telemetry.gpu import remote_gpu_settings
from services.telemetry.hub import get_hub
from services.telemetry.monitor.charts import (
    SourceSeries,
    build_charts,
    series_from_snapshots,
    series_from_window,
)
from services.telemetry.monitor.records import MonitorOptions, MonitorView, ProcessRow, SourceStatus
from services.telemetry.query import load_window
from services.telemetry.recorder import active_recordings
from services.telemetry.scraper import ScrapeTarget, scrape_targets_for
from services.telemetry.snapshot import Snapshot

WINDOW_CHOICES_S = (60, 300, 900)
#: Seconds at a window's start the hub may miss before stored samples are looked up.
STORED_GAP_S = 5.0


def monitor_options() -> MonitorOptions:
    """What the Monitor page offers: registered engines and the GPUs this machine sees."""
    dcgm_urls, prometheus_url = remote_gpu_settings()
    engines = [(e.name, e.label) for e in list_engines()]
    selector = get_settings().prometheus_selector
    return MonitorOptions(engines, get_hub().gpu_state(), dcgm_urls, prometheus_url, selector)


def _status(snapshot: Snapshot) -> SourceStatus:
    name = snapshot.source.partition(":")[2]
    if snapshot.kind == "gpu":
        name = f"GPU {name}"
    if snapshot.error:
        return SourceStatus(snapshot.source, name, snapshot.label, False, snapshot.error)
    reported = [n for n, v in snapshot.values.items() if v is not None]
    if not snapshot.values:
        return SourceStatus(
            snapshot.source,
            name,
            snapshot.label,
            True,
            next(iter(snapshot.missing.values()), "no signals"),
        )
    return SourceStatus(
        snapshot.source, name, snapshot.label, True, f"{len(reported)} signal(s) with data"
    )


def _processes(snapshots: Sequence[Snapshot]) -> list[ProcessRow]:
    rows: list[ProcessRow] = []
    for snapshot in snapshots:
        if snapshot.kind != "gpu":
            continue
        for process in snapshot.processes:
            used = process.get("used_bytes")
            rows.append(
                {
                    "GPU": snapshot.source.partition(":")[2],
                    "process": process.get("name") or "",
                    "pid": process.get("pid"),
                    "engine": process.get("engine") or "",
                    "memory (GiB)": None if used is None else round(used / 2**30, 2),
                }
            )
    return rows


def live_view(
    engine_names: Sequence[str],
    gpu_sources: Sequence[str] | None = None,
    window_s: float = 300.0,
    dcgm_urls: Sequence[str] = (),
) -> MonitorView:
    """Sample now (sharing fresh snapshots with any recording) and chart the live window.
    `gpu_sources`: local GPU sources to show ("gpu:0"...); None = all."""
    hub = get_hub()
    targets: list[ScrapeTarget] = scrape_targets_for(list(engine_names))
    gpu_state = hub.gpu_state()
    if gpu_sources is None:
        indices: list[int] | bool = [g.index for g in gpu_state.gpus]
    else:
        indices = [g.index for g in gpu_state.gpus if g.source in set(gpu_sources)]
    snapshots = hub.sample(
        targets, gpus=indices if indices else False, dcgm_urls=dcgm_urls, max_age_s=0.5
    )
    now = time.time()
    sources = [s.source for s in snapshots]
    history = hub.history(sources, window_s, now)
    stored = _stored_before(history, now - window_s, now)
    series = [
        item
        for source in sources
        if (item := _joined(stored.get(source), series_from_snapshots(history.get(source, []))))
        is not None
    ]
    errors = [e for url in dcgm_urls if (e := hub.dcgm(url).error)]
    return MonitorView(
        charts=build_charts(series, (now - window_s, now)),
        statuses=[_status(s) for s in snapshots],
        processes=_processes(snapshots),
        recordings=active_recordings(),
        gpu_message=None if gpu_state.available else gpu_state.message,
        errors=errors,
    )


def _stored_before(
    history: dict[str, list[Snapshot]], start: float, now: float
) -> dict[str, SourceSeries]:
    """What the database holds of these sources from the window's start up to the first sample
    this process took of each: a benchmark's recorder (in its own worker) or an earlier
    recording sampled them while no one watched. Live held only samples since the page opened,
    under a 5-minute axis, so a benchmark two minutes earlier was absent (issue 36)."""
    firsts = {source: (items[0].ts if items else now) for source, items in history.items()}
    # Sources the hub has watched for the whole window need no query: the page refreshes every
    # second, and a window the hub covers up to its first second would be asked for each time.
    missing = {source: first for source, first in firsts.items() if first - start > STORED_GAP_S}
    if not missing:
        return {}
    firsts = missing
    window = load_window(start, max(firsts.values()), sources=list(firsts))
    frame = window.frame
    if not len(frame):
        return {}
    # Stored rows the hub holds too (a recording in this process) are left to the hub.
    window.frame = frame[frame["ts"] < frame["source"].map(firsts)]
    return series_from_window(window)


def _joined(stored: SourceSeries | None, live: SourceSeries | None) -> SourceSeries | None:
    """The stored samples followed by the live ones, as one series (the live states win)."""
    if stored is None or live is None:
        return live or stored
    names = set(stored.signals) | set(live.signals)

    def part(item: SourceSeries, name: str) -> np.ndarray:
        return item.signals.get(name, np.full(len(item.ts), np.nan))

    return SourceSeries(
        live.source,
        live.kind,
        live.label,
        np.concatenate([stored.ts, live.ts]),
        {name: np.concatenate([part(stored, name), part(live, name)]) for name in names},
        live.not_reported,
        live.error,
    )


def gpu_indices(gpu_sources: Sequence[str]) -> list[int]:
    """Local GPU indices of sources like "gpu:0" (remote ones are read from their exporter)."""
    indices = []
    for source in gpu_sources:
        _, _, rest = source.partition(":")
        if rest.isdigit():
            indices.append(int(rest))
    return indices
