"""Recording: a background thread samples engines and GPUs at a fixed interval and writes
one `Sample` row per source per tick, linked to a run.

Usable by the Monitor page's recording switch (`begin_recording_run` / `stop_recording`,
a run of kind "recording") and by the benchmark runner (`start_recording(run_id, ...)`
for its own run, `recorder.stop()` at the end). Rows are committed about once a second, so
an engine that dies, a page reload or a crash of the app loses at most that second; an
engine that is unreachable gets rows with `_error` (gaps on the charts, with the reason)
and is picked up again when it comes back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError

from db.models import Run, Sample
from db.session import session_scope
from services.core.config import get_settings
from services.core.errors import NotFoundError, ValidationError
from services.core.json_types import JsonOut
from services.runstate import lifecycle
from services.runstate.lifecycle import RunKind, RunStatus
from services.telemetry.hub import TelemetryHub, get_hub
from services.telemetry.scraper import ScrapeTarget, scrape_targets_for
from services.telemetry.snapshot import Snapshot

MIN_INTERVAL_S = 0.1
FLUSH_EVERY_S = 1.0
MAX_BUFFERED_ROWS = 100_000


@dataclass(frozen=True)
class RecorderInfo:
    run_id: int
    engine_names: tuple[str, ...]
    gpus: bool | tuple[int, ...]
    interval_s: float
    started_at: float
    samples_written: int
    running: bool
    last_error: str | None


class Recorder:
    """One recording thread. Create it with `start_recording`."""

    def __init__(
        self,
        run_id: int,
        targets: Sequence[ScrapeTarget],
        *,
        gpus: bool | Sequence[int] = True,
        interval_s: float = 1.0,
        dcgm_urls: Sequence[str] = (),
        hub: TelemetryHub | None = None,
        database_url: str | None = None,
        finish_run: bool = False,
        beats_heartbeat: bool = True,
    ) -> None:
        if interval_s < MIN_INTERVAL_S:
            raise ValidationError(f"A recording interval under {MIN_INTERVAL_S} s is not supported.")
        self.run_id = run_id
        self.targets = list(targets)
        self.gpus: bool | tuple[int, ...] = gpus if isinstance(gpus, bool) else tuple(gpus)
        self.interval_s = interval_s
        self.dcgm_urls = list(dcgm_urls)
        self.hub = hub or get_hub()
        self.database_url = database_url or get_settings().database_url
        self.finish_run = finish_run
        # False for a benchmark's recorder: it is a child of the benchmark worker, and refreshing
        # the run's heartbeat after the worker died hid the death from the interrupted-run check.
        self.beats_heartbeat = beats_heartbeat
        self.started_at = time.time()
        self.samples_written = 0
        self.last_error: str | None = None
        self._buffer: list[JsonOut] = []
        self._stop = threading.Event()
        self._last_sample = False
        self._thread = threading.Thread(
            target=self._loop, name=f"telemetry-recorder-{run_id}", daemon=True
        )

    # -- lifecycle --

    def start(self) -> Recorder:
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float = 10.0, *, last_sample: bool = False) -> RecorderInfo:
        """Stop sampling, write what is buffered, and (for recording runs) finish the run.
        With `last_sample`, one fresh sample is taken first: a benchmark's recorder stops when
        the run ends, and that sample closes the run's window whatever its length."""
        self._last_sample = last_sample
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)
        _forget(self.run_id, self)
        return self.info()

    def info(self) -> RecorderInfo:
        return RecorderInfo(
            run_id=self.run_id,
            engine_names=tuple(t.name for t in self.targets),
            gpus=self.gpus,
            interval_s=self.interval_s,
            started_at=self.started_at,
            samples_written=self.samples_written,
            running=self.running,
            last_error=self.last_error,
        )

    # -- the thread --

    def _loop(self) -> None:
        next_tick = time.monotonic()
        last_flush = next_tick
        try:
            while not self._stop.is_set():
                self._tick()
                now = time.monotonic()
                if now - last_flush >= FLUSH_EVERY_S:
                    self._flush()
                    last_flush = now
                next_tick += self.interval_s
                if next_tick < now:  # fell behind (slow engine): skip, do not burst
                    next_tick = now + self.interval_s
                self._stop.wait(max(0.0, next_tick - time.monotonic()))
            if self._last_sample:
                self._tick(max_age_s=0.0, answering_only=True)
        finally:
            self._flush(final=True)

    def _tick(self, max_age_s: float | None = None, answering_only: bool = False) -> None:
        if max_age_s is None:
            max_age_s = min(0.5, self.interval_s / 2)
        targets = self.targets
        if answering_only:
            # An engine whose last read failed has no window to close, and a stalled one would
            # hold the stop for its whole read deadline.
            targets = [t for t in targets if getattr(self.hub.scraper(t).last, "error", None) is None]
        try:
            snapshots = self.hub.sample(targets, self.gpus, self.dcgm_urls, max_age_s=max_age_s)
        except Exception as error:  # noqa: BLE001 - a sampler bug must not kill the recording
            self.last_error = f"sampling failed: {error}"
            return
        self._buffer.extend(_row(self.run_id, s) for s in snapshots)
        if len(self._buffer) > MAX_BUFFERED_ROWS:
            del self._buffer[: len(self._buffer) - MAX_BUFFERED_ROWS]

    def _flush(self, final: bool = False) -> None:
        rows, self._buffer = self._buffer, []
        try:
            with session_scope(self.database_url) as session:
                if rows:
                    session.execute(insert(Sample), rows)
                if final and self.finish_run:
                    lifecycle.finish(
                        self.run_id,
                        RunStatus.FINISHED,
                        summary={
                            "samples": self.samples_written + len(rows),
                            "interval_s": self.interval_s,
                        },
                        session=session,
                    )
                elif self.beats_heartbeat:
                    lifecycle.beat(self.run_id, session)
        except IntegrityError:
            self.last_error = f"run #{self.run_id} was deleted: recording stopped"
            self._stop.set()
            return
        except Exception as error:  # noqa: BLE001 - a failed write is kept and retried, never fatal
            self.last_error = f"writing samples failed: {error}"
            if not final:
                self._buffer[:0] = rows  # try again at the next flush
            return
        self.samples_written += len(rows)


def _row(run_id: int | None, snapshot: Snapshot) -> JsonOut:
    """A snapshot as the Sample row to insert."""
    return {"run_id": run_id, "ts": snapshot.ts, "source": snapshot.source, "values": snapshot.to_row()}


# --- the process-wide set of recordings -----------------------------------------------

_active: dict[int, Recorder] = {}
_active_lock = threading.Lock()


def _forget(run_id: int, recorder: Recorder) -> None:
    with _active_lock:
        if _active.get(run_id) is recorder:
            del _active[run_id]


def _targets(engines: Sequence[str | ScrapeTarget]) -> list[ScrapeTarget]:
    names = [e for e in engines if isinstance(e, str)]
    resolved = iter(scrape_targets_for(names)) if names else iter(())
    return [next(resolved) if isinstance(e, str) else e for e in engines]


def start_recording(
    run_id: int,
    engines: Sequence[str | ScrapeTarget],
    gpus: bool | Sequence[int] = True,
    interval_s: float = 1.0,
    dcgm_urls: Sequence[str] = (),
    *,
    hub: TelemetryHub | None = None,
    finish_run: bool = False,
    beats_heartbeat: bool = True,
) -> Recorder:
    """Record telemetry of these engines (registered names or targets) and GPUs into
    samples of run `run_id` until `stop()`. One recorder per run."""
    with session_scope() as session:
        if session.get(Run, run_id) is None:
            raise NotFoundError(f"Run #{run_id} does not exist.")
    recorder = Recorder(
        run_id,
        _targets(engines),
        gpus=gpus,
        interval_s=interval_s,
        dcgm_urls=dcgm_urls,
        hub=hub,
        finish_run=finish_run,
        beats_heartbeat=beats_heartbeat,
    )
    with _active_lock:
        existing = _active.get(run_id)
        if existing is not None and existing.running:
            raise ValidationError(f"Run #{run_id} is being recorded already.")
        _active[run_id] = recorder
    return recorder.start()


def begin_recording_run(
    name: str,
    engine_names: Sequence[str],
    gpus: bool | Sequence[int] = True,
    interval_s: float = 1.0,
    dcgm_urls: Sequence[str] = (),
    *,
    hub: TelemetryHub | None = None,
) -> Recorder:
    """Create a run of kind "recording" and start recording into it (the Monitor switch)."""
    targets = _targets(list(engine_names))
    if not targets and gpus is False and not dcgm_urls:
        raise ValidationError("Choose at least one engine or GPU to record.")
    now = datetime.now(UTC)
    with session_scope() as session:
        run = Run(
            kind=RunKind.RECORDING,
            name=name.strip() or f"Recording {now:%Y-%m-%d %H:%M}",
            status=RunStatus.RUNNING,
            engine_names=",".join(t.name for t in targets),
            engines=[
                {"name": t.name, "kind": t.kind, "base_url": t.base_url, "metrics_url": t.metrics_url}
                for t in targets
            ],
            config={
                "gpus": gpus if isinstance(gpus, bool) else list(gpus),
                "interval_s": interval_s,
                "dcgm_urls": list(dcgm_urls),
            },
            started_at=now,
            heartbeat_at=now,
        )
        session.add(run)
        session.flush()
        run_id = run.id
    return start_recording(run_id, targets, gpus, interval_s, dcgm_urls, hub=hub, finish_run=True)


def stop_recording(run_id: int) -> RecorderInfo | None:
    """Stop the recording of run `run_id` (None when none is running in this process)."""
    with _active_lock:
        recorder = _active.get(run_id)
    return recorder.stop() if recorder is not None else None


def active_recordings() -> list[RecorderInfo]:
    with _active_lock:
        recorders = list(_active.values())
    return [r.info() for r in recorders if r.running]
