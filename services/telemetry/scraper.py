"""One HTTP scraper per engine metrics endpoint.

Reads must not be shared out between several scrapers of one server: llama.cpp resets the
window of its throughput gauges on every read (we use its counters instead) and
trtllm-serve's JSON /metrics hands each iteration to exactly one reader. So the process
keeps one `EngineScraper` per endpoint (see `hub`), and everyone asks it.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from services.core import http
from services.core.errors import EngineError, ValidationError
from services.core.json_types import JsonOut
from services.core.urls import http_url
from services.engines import adapters, get_adapter, kinds
from services.engines.base import EngineAdapter, JsonMetricsState
from services.engines.normalise import EngineNormaliser, metric_prefixes
from services.engines.probe import auth_headers, probe
from services.engines.prometheus import Families, SeriesParser
from services.engines.signals import ENGINE_SIGNAL_NAMES, not_reported
from services.telemetry.gpu import DcgmSampler
from services.telemetry.snapshot import Snapshot

if TYPE_CHECKING:
    from services.engines.endpoints import EngineRecord

ACCEPT = {"Accept": "text/plain"}  # else prometheus_client may answer OpenMetrics
MAX_BODY_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class ScrapeTarget:
    """Where an engine's metrics are read, and what reading them needs: the metrics URL (none
    for a kind without one), the base URL for kinds whose signals come from the API, and the key.

    Not `services.bench.spec.EngineTarget` (the endpoint a run sends its chat requests to, with
    the model and a base URL it cannot do without): a scrape target may be a bare metrics URL
    (`shootout scrape URL`), and one scraper per target is shared by every reader (see `hub`).
    """

    name: str
    kind: str
    metrics_url: str | None
    base_url: str | None = None
    api_key_env: str | None = None
    #: The served model, for servers whose series are labelled per model (Triton).
    model: str | None = None

    @property
    def source(self) -> str:
        return f"engine:{self.name}"

    @classmethod
    def from_record(cls, record: EngineRecord) -> ScrapeTarget:
        """The stored endpoint's metrics, as they are now."""
        return cls(
            name=record.name,
            kind=record.kind,
            metrics_url=record.resolved_metrics_url,
            base_url=record.base_url,
            api_key_env=record.api_key_env,
            model=record.model,
        )


def scrape_targets_for(engine_names: list[str] | tuple[str, ...]) -> list[ScrapeTarget]:
    """The registered engines of these names, as scrape targets (NotFoundError if unknown)."""
    # CLI start: endpoints loads the database (SQLAlchemy, 0.2 s), which `shootout scrape` otherwise
    # never needs.
    from services.engines.endpoints import get_engine

    return [ScrapeTarget.from_record(get_engine(name)) for name in engine_names]


class EngineScraper:
    """Scrapes one engine and normalises what it reads; thread-safe (one read at a time)."""

    def __init__(
        self,
        target: ScrapeTarget,
        *,
        rate_window_s: float = 10.0,
        latency_window_s: float = 60.0,
        timeout_s: float = 2.0,
        retry_after_s: float = 2.0,
        histogram_every_s: float = 1.0,
    ) -> None:
        self.target = target
        self.adapter: EngineAdapter = get_adapter(target.kind)
        signals = self.adapter.signals_for(target.model)
        self.normaliser = EngineNormaliser(signals, self.adapter.label, rate_window_s, latency_window_s)
        self.parser = SeriesParser(metric_prefixes(signals))
        # Latency percentiles cover a long window: recomputing them more than about once a
        # second buys nothing, and their histogram lines are most of what an engine sends.
        self.keep_without_histograms = metric_prefixes(signals, histograms=False)
        self.histogram_every_s = histogram_every_s
        self._histograms_at: float | None = None
        self.url = target.metrics_url
        self.mode = "json" if self.adapter.metrics_format == "json" else "prometheus"
        self.json_state = JsonMetricsState()
        self.timeout_s = timeout_s
        self.retry_after_s = retry_after_s
        self.lock = threading.RLock()  # the hub holds it while it decides to scrape
        self.last: Snapshot | None = None
        self.last_duration_s: float | None = None
        self._failed_at: float | None = None
        #: For a target with nothing to scrape: when its base URL was last tried, and why it
        #: could not be reached then (None: it answered).
        self._reached_at: float | None = None
        self._unreachable: str | None = None
        self._headers = {**ACCEPT, **auth_headers(self.target.api_key_env)}

    @property
    def quick(self) -> bool:
        """Answered its last read fast and fine (worth reading inline, not on a thread)."""
        return self.last_duration_s is not None and self.last_duration_s < 0.05

    def close(self) -> None:
        """Nothing to release: connections belong to services.core.http's shared client."""

    def _snapshot(self, ts: float, **fields: Any) -> Snapshot:
        snapshot = Snapshot(
            source=self.target.source, kind=self.target.kind, label=self.adapter.label, ts=ts, **fields
        )
        self.last = snapshot
        return snapshot

    def scrape(self, now: float | None = None) -> Snapshot:
        """Read the endpoint once and return the normalised snapshot (never raises for
        an engine that is down or answers nonsense: the snapshot carries the error)."""
        with self.lock:
            ts = time.time() if now is None else now
            if not self.url or not self.adapter.telemetry_signals:
                return self._nothing_to_read(ts)
            if self._failed_at is not None and ts - self._failed_at < self.retry_after_s and self.last:
                return self._snapshot(ts, error=self.last.error)  # do not hammer a dead endpoint
            with_histograms = (
                self._histograms_at is None
                or ts - self._histograms_at >= self.histogram_every_s - 0.05
                or ts < self._histograms_at
            )
            started = time.perf_counter()
            try:
                families, marker = self._read(with_histograms)
            except _ScrapeError as error:
                self._failed_at = ts
                self.last_duration_s = None
                return self._snapshot(ts, error=str(error))
            finally:
                if self._failed_at != ts:
                    self.last_duration_s = time.perf_counter() - started
            self._failed_at = None
            if self.mode == "json":
                with_histograms = True
            if with_histograms:
                self._histograms_at = ts
            result = self.normaliser.update(families, ts, marker, with_histograms)
            return self._snapshot(ts, values=result.values, missing=result.missing, notes=result.notes)

    def _nothing_to_read(self, ts: float) -> Snapshot:
        """A kind without metrics (or without its metrics URL) has no signals, but its endpoint
        is up or down all the same: one that refuses connections is shown as unreachable, never
        with a tick beside "not reported" (issue 56). Its health path is read at most once per
        `retry_after_s`; any HTTP answer, even a 404, means it is up."""
        reason = not_reported(self.adapter.label)
        if self.adapter.telemetry_signals and not self.url:
            reason += " (no metrics URL set)"
        base = self.target.base_url
        if base and (self._reached_at is None or not 0 <= ts - self._reached_at < self.retry_after_s):
            self._reached_at = ts
            started = time.perf_counter()
            try:
                self._get(base.rstrip("/") + self.adapter.health_path)
                self._unreachable = None
            except _ScrapeError as error:
                self._unreachable = str(error)
            self.last_duration_s = time.perf_counter() - started if self._unreachable is None else None
        if base and self._unreachable:
            return self._snapshot(ts, error=self._unreachable)
        return self._snapshot(ts, missing=dict.fromkeys(ENGINE_SIGNAL_NAMES, reason))

    def _get(self, url: str) -> http.Reply:
        try:
            return http.fetch(
                "GET", url, headers=self._headers, deadline_s=self.timeout_s, max_bytes=MAX_BODY_BYTES
            )
        except http.HttpUnreachable as error:
            raise _ScrapeError(f"unreachable: {error.detail}") from error
        except http.HttpError as error:
            # The URL is said once, by whoever shows the error with the engine's name.
            raise _ScrapeError(error.detail) from error

    def _read(self, with_histograms: bool = True) -> tuple[Families, float | None]:
        assert self.url
        response = self._get(self.url)
        if response.status == 404 and self.mode == "prometheus" and self._switch_to_json():
            response = self._get(self.url)
        if response.status in (501, 404) and self.adapter.metrics_hint:
            raise _ScrapeError(
                f"metrics endpoint off (HTTP {response.status}): {self.adapter.metrics_hint}"
            )
        if response.status in (401, 403):
            raise _ScrapeError(f"HTTP {response.status}: the metrics endpoint wants credentials")
        if response.status != 200:
            raise _ScrapeError(f"HTTP {response.status} from {self.url}")
        text = response.text
        marker = _start_time(response.headers.get("process-start-time-unix"))
        if self.mode == "json" or text.lstrip()[:1] in ("[", "{"):
            try:
                payload = json.loads(text)
            except ValueError as error:
                raise _ScrapeError(
                    f"metrics answer is neither Prometheus text nor JSON: {error}"
                ) from error
            self.mode = "json"
            return self.adapter.telemetry_from_json(payload, self.json_state), marker
        try:
            return self.parser.parse(
                text, None if with_histograms else self.keep_without_histograms
            ), marker
        except ValueError as error:
            raise _ScrapeError(f"could not parse the Prometheus text: {error}") from error

    def _switch_to_json(self) -> bool:
        """trtllm-serve mounts Prometheus text only with return_perf_metrics; else its JSON
        /metrics is all there is."""
        json_path, path = self.adapter.json_metrics_path, self.adapter.metrics_path
        if not (json_path and path and self.url and self.url.endswith(path)):
            return False
        self.url = self.url[: -len(path)] + json_path
        self.mode = "json"
        return True


class _ScrapeError(Exception):
    pass


def _start_time(header: str | None) -> float | None:
    try:
        return float(header) if header else None
    except ValueError:
        return None


# --- one-off scrapes (`shootout scrape`) ---------------------------------------------------

DCGM_MARKER = "DCGM_FI_"


def kind_from_metrics(text: str) -> str | None:
    """The engine kind (or "dcgm") whose metric names dominate a scrape; None if unknown.
    A JSON list is trtllm-serve's iteration stats."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        return "trtllm"
    markers = [(a.kind, a.metric_markers) for a in adapters() if a.metric_markers]
    markers.append(("dcgm", (DCGM_MARKER,)))
    counts: dict[str, int] = {}
    for line in text.splitlines()[:5000]:
        if not line or line.startswith("#"):
            continue
        for kind, prefixes in markers:
            if line.startswith(prefixes):
                counts[kind] = counts.get(kind, 0) + 1
                break
    return max(counts, key=counts.__getitem__) if counts else None


@dataclass
class ScrapeResult:
    url: str
    metrics_url: str
    kind: str
    label: str
    detected_by: str
    interval_s: float
    snapshots: list[Snapshot]

    def to_json(self) -> JsonOut:
        return {
            "url": self.url,
            "metrics_url": self.metrics_url,
            "kind": self.kind,
            "label": self.label,
            "detected_by": self.detected_by,
            "interval_s": self.interval_s,
            "sources": [s.to_json() for s in self.snapshots],
        }


def _fetch_text(url: str, timeout_s: float) -> tuple[int, str]:
    reply = http.fetch("GET", url, headers=ACCEPT, deadline_s=timeout_s, max_bytes=MAX_BODY_BYTES)
    return reply.status, reply.text


def scrape_once(
    url: str, kind: str | None = None, interval_s: float = 1.0, timeout_s: float = 5.0
) -> ScrapeResult:
    """Detect what `url` is (an engine base URL or a metrics URL, or a dcgm-exporter) and
    read it twice, `interval_s` apart, so windowed signals have a window."""
    # CLI start: endpoints loads the database (SQLAlchemy, 0.2 s), which `shootout scrape` otherwise
    # never needs.
    from services.engines.endpoints import normalise_base_url

    if interval_s < 0:
        raise ValidationError("The interval must not be negative.")
    url = http_url(url)
    has_path = bool(urlsplit(url).path.strip("/"))
    detected_by = "given"
    if kind is not None and kind != "dcgm" and kind not in kinds():
        raise ValidationError(f"Unknown kind {kind!r}; known: dcgm, {', '.join(kinds())}.")
    if kind is None and not has_path:
        result = probe(normalise_base_url(url), timeout_s=timeout_s)
        if result.ok or result.state == "unhealthy":
            kind, detected_by = result.kind, "probe"
    if kind is None:
        metrics_url = url if has_path else url.rstrip("/") + "/metrics"
        status, text = _fetch_text(metrics_url, timeout_s)
        if status != 200:
            raise EngineError(f"{metrics_url} answered HTTP {status}; give the metrics URL, or --kind.")
        kind = kind_from_metrics(text)
        if kind is None:
            raise EngineError(
                f"{metrics_url} answers, but no known engine's or dcgm-exporter's metric names are in it."
            )
        detected_by = "metrics"
    if kind == "dcgm":
        sampler = DcgmSampler(url)
        first = sampler.sample()
        if sampler.error:
            raise EngineError(sampler.error)
        return ScrapeResult(url, sampler.url, "dcgm", "dcgm-exporter", detected_by, 0.0, first)
    adapter = get_adapter(kind)
    metrics_url = (
        url if has_path else (url.rstrip("/") + adapter.metrics_path if adapter.metrics_path else "")
    )
    target = ScrapeTarget(
        name=urlsplit(url).netloc, kind=kind, metrics_url=metrics_url or None, base_url=None
    )
    scraper = EngineScraper(target, rate_window_s=max(interval_s, 0.001), timeout_s=timeout_s)
    try:
        snapshot = scraper.scrape()
        if snapshot.error:
            raise EngineError(f"{scraper.url}: {snapshot.error}")
        if interval_s > 0 and adapter.telemetry_signals and scraper.url:
            time.sleep(interval_s)
            snapshot = scraper.scrape()
            if snapshot.error:
                raise EngineError(f"{scraper.url}: {snapshot.error}")
    finally:
        scraper.close()
    return ScrapeResult(url, scraper.url or "", kind, adapter.label, detected_by, interval_s, [snapshot])
