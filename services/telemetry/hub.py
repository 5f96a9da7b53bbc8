"""The process-wide telemetry hub: one scraper per engine endpoint, one NVML sampler,
one sampler per dcgm-exporter, and a bounded live history per source.

The Monitor page and recorders ask the hub; a snapshot younger than `max_age_s` is
shared instead of read again, so two viewers and a recording never read an engine three
times (which matters for engines whose reads consume data).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from services.telemetry.gpu import DcgmSampler, GpuState, NullGpuSampler, NvmlSampler
from services.telemetry.scraper import EngineScraper, ScrapeTarget
from services.telemetry.snapshot import Snapshot

HISTORY_S = 15 * 60.0
HISTORY_MAX_POINTS = 15 * 60 * 4


class TelemetryHub:
    def __init__(
        self,
        gpu_sampler: NvmlSampler | NullGpuSampler | None = None,
        *,
        rate_window_s: float = 10.0,
        latency_window_s: float = 60.0,
        history_s: float = HISTORY_S,
    ) -> None:
        self.gpu_sampler = gpu_sampler if gpu_sampler is not None else NvmlSampler()
        self.rate_window_s = rate_window_s
        self.latency_window_s = latency_window_s
        self.history_s = history_s
        self._lock = threading.Lock()
        self._gpu_lock = threading.Lock()
        self._scrapers: dict[ScrapeTarget, EngineScraper] = {}
        self._dcgm: dict[str, DcgmSampler] = {}
        self._history: dict[str, deque[Snapshot]] = {}
        self._latest: dict[str, Snapshot] = {}
        self._pool: ThreadPoolExecutor | None = None

    # -- pieces --

    def scraper(self, target: ScrapeTarget) -> EngineScraper:
        with self._lock:
            scraper = self._scrapers.get(target)
            if scraper is None:
                # An engine re-registered under the same name with a new URL or kind gets
                # a fresh scraper; the old one is dropped.
                for old in [t for t in self._scrapers if t.name == target.name]:
                    self._scrapers.pop(old).close()
                scraper = EngineScraper(
                    target, rate_window_s=self.rate_window_s, latency_window_s=self.latency_window_s
                )
                self._scrapers[target] = scraper
            return scraper

    def dcgm(self, url: str) -> DcgmSampler:
        with self._lock:
            sampler = self._dcgm.get(url)
            if sampler is None:
                sampler = self._dcgm[url] = DcgmSampler(url)
            return sampler

    def gpu_state(self) -> GpuState:
        return self.gpu_sampler.state()

    # -- sampling --

    def sample(
        self,
        engines: Sequence[ScrapeTarget] = (),
        gpus: bool | Sequence[int] = True,
        dcgm_urls: Sequence[str] = (),
        max_age_s: float = 0.0,
        now: float | None = None,
    ) -> list[Snapshot]:
        """Fresh snapshots of these engines and GPUs (reusing ones younger than max_age_s)."""
        scrapers = [self.scraper(t) for t in engines]
        # Endpoints that answered fast last time are read inline (a thread hand-off costs
        # more than such a read); new, slow or failing ones on threads, so one dead or
        # distant engine does not hold up the others.
        pending = {
            index: self._executor().submit(self._engine, scraper, max_age_s, now)
            for index, scraper in enumerate(scrapers)
            if not scraper.quick and len(scrapers) > 1
        }
        snapshots: list[Snapshot] = [
            pending[index].result() if index in pending else self._engine(scraper, max_age_s, now)
            for index, scraper in enumerate(scrapers)
        ]
        if gpus is not False:
            snapshots.extend(self._gpus(None if gpus is True else list(gpus), engines, max_age_s, now))
        for url in dcgm_urls:
            snapshots.extend(self.dcgm(url).sample(now))
        self._remember(snapshots)
        return snapshots

    def _engine(self, scraper: EngineScraper, max_age_s: float, now: float | None) -> Snapshot:
        with scraper.lock:
            last = scraper.last
            current = time.time() if now is None else now
            if last is not None and max_age_s > 0 and current - last.ts < max_age_s:
                return last
            return scraper.scrape(now)

    def _gpus(
        self,
        indices: list[int] | None,
        engines: Sequence[ScrapeTarget],
        max_age_s: float,
        now: float | None,
    ) -> list[Snapshot]:
        with self._gpu_lock:
            current = time.time() if now is None else now
            state = self.gpu_sampler.state()
            if not state.available:
                return []
            wanted = [g for g in state.gpus if indices is None or g.index in indices]
            cached = [self._latest.get(g.source) for g in wanted]
            if max_age_s > 0 and all(s is not None and current - s.ts < max_age_s for s in cached):
                return [s for s in cached if s is not None]
            return self.gpu_sampler.sample(indices, engines)

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="telemetry-scrape")
            return self._pool

    def _remember(self, snapshots: list[Snapshot]) -> None:
        with self._lock:
            for snapshot in snapshots:
                if self._latest.get(snapshot.source) is snapshot:
                    continue
                history = self._history.get(snapshot.source)
                if history is None:
                    history = self._history[snapshot.source] = deque(maxlen=HISTORY_MAX_POINTS)
                history.append(snapshot)
                self._latest[snapshot.source] = snapshot

    # -- reading back --

    def history(
        self, sources: Sequence[str], seconds: float, now: float | None = None
    ) -> dict[str, list[Snapshot]]:
        """The live history of each source over the last `seconds` (bounded to history_s)."""
        horizon = (time.time() if now is None else now) - min(seconds, self.history_s)
        with self._lock:
            result: dict[str, list[Snapshot]] = {}
            for source in sources:
                history = self._history.get(source)
                if not history:
                    result[source] = []
                    continue
                cutoff = horizon + min(seconds, self.history_s) - self.history_s
                while history and history[0].ts < cutoff:
                    history.popleft()
                result[source] = [s for s in history if s.ts >= horizon]
            return result

    def latest(self, source: str) -> Snapshot | None:
        with self._lock:
            return self._latest.get(source)

    def close(self) -> None:
        with self._lock:
            for scraper in self._scrapers.values():
                scraper.close()
            self._scrapers.clear()
            for sampler in self._dcgm.values():
                sampler.close()
            self._dcgm.clear()
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None
        self.gpu_sampler.close()


_hub: TelemetryHub | None = None
_hub_lock = threading.Lock()


def get_hub() -> TelemetryHub:
    """The process-wide hub (created at first use)."""
    global _hub
    with _hub_lock:
        if _hub is None:
            _hub = TelemetryHub()
        return _hub
