"""The shared experiment plumbing every scenario uses: build requests for an engine, send
them through the one streaming client (in this worker thread's own event loop), store
every request as a `RequestResult` of the demo run, and read the engine's metrics before,
during and after a piece of work.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Self

from db.models import RequestResult
from db.session import session_scope
from services.bench.stats import reasoning_keys
from services.client import ChatRequest, StreamResult, run_blocking, run_many
from services.core import http
from services.core.json_types import ForeignJson, JsonOut
from services.core.measure import tpot
from services.demos.readout import StepOutcome
from services.demos.summary import StepBlock
from services.engines import SamplingParams
from services.engines.endpoints import EngineRecord
from services.engines.probe import auth_headers
from services.telemetry.scraper import EngineScraper, ScrapeTarget
from services.telemetry.snapshot import Snapshot

#: Longest a single demo request may take before it is cut (a hung engine must not hang the demo).
REQUEST_LIMIT_S = 180.0
#: Metric windows of a watch: long enough that every windowed signal (hit rate, preemption
#: rate) is taken over the whole watched piece of work, from its first reading.
WATCH_WINDOW_S = 1e6


class DemoStopped(Exception):
    """The presenter pressed Stop (or the run was cancelled from elsewhere)."""


def words_prompt(target_tokens: int, nonce: str, topic: str = "rule") -> str:
    """A prompt of roughly `target_tokens` tokens (SmolLM2's tokenizer: about 19 tokens per
    sentence below, measured on llama.cpp and vLLM). The nonce comes FIRST: prefix caches match from the first token, so a
    fresh nonce makes the whole prompt new to every cache, whatever ran before."""
    sentences = [f"Session {nonce}."]
    count = max(1, round(target_tokens / 19))
    for i in range(count):
        sentences.append(
            f"{topic.capitalize()} {i + 1}: the assistant answers briefly about item {i + 1} and stays polite."
        )
    return " ".join(sentences)


@dataclass
class Sent:
    """A request's outcome with the labels the step gave it."""

    engine: str
    #: Written into the request's stored row (`extra`) beside the step's key.
    labels: JsonOut
    result: StreamResult

    @property
    def ok(self) -> bool:
        return self.result.ok

    @property
    def decode_tok_s(self) -> float | None:
        """Generation speed after the first token, 1 / TPOT, over the tokens of all choices."""
        r = self.result
        per_token = tpot(r.ttft_s, r.e2e_s, r.output_tokens) if r.ok else None
        return 1 / per_token if per_token else None


class DemoContext:
    """What a step gets: the engines, the settings, and ways to send and watch."""

    def __init__(
        self,
        run_id: int | None,
        engines: Sequence[EngineRecord],
        options: Mapping[str, object],
        *,
        publish: Callable[[StepOutcome], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self.run_id = run_id
        self.engines = list(engines)
        self.options = options
        self.nonce = uuid.uuid4().hex[:10]
        self.t0 = perf_counter()
        self.step_key = ""
        #: The stored steps of this run so far (a later step may draw on earlier ones).
        self.steps: list[StepBlock] = []
        self._publish = publish
        self._should_stop = should_stop or (lambda: False)
        self._index = 0
        self._lock = threading.Lock()

    # -- control --

    def stop_requested(self) -> bool:
        """Whether the presenter stopped the demo (for work that polls rather than raises)."""
        return bool(self._should_stop())

    def check_stop(self) -> None:
        if self.stop_requested():
            raise DemoStopped()

    def begin_step(self, key: str, publish: Callable[[StepOutcome], None] | None = None) -> None:
        self.step_key = key
        self._publish = publish

    def publish(self, outcome: StepOutcome) -> None:
        """Show what the running step has measured so far (the page plots it live)."""
        if self._publish is not None:
            self._publish(outcome)

    def fresh_nonce(self) -> str:
        return f"{self.nonce}-{uuid.uuid4().hex[:6]}"

    # -- requests --

    def chat_request(
        self,
        engine: EngineRecord,
        messages: Sequence[ForeignJson],
        *,
        max_tokens: int,
        n: int = 1,
        schema: ForeignJson | None = None,
        ignore_eos: bool = False,
        temperature: float = 0.0,
    ) -> ChatRequest:
        params = SamplingParams(
            temperature=temperature,
            max_tokens=max_tokens,
            n=n,
            ignore_eos=ignore_eos,
            min_tokens=max_tokens if ignore_eos else None,
            seed=1234,
        )
        return ChatRequest(
            base_url=engine.base_url,
            model=engine.model or "default",
            messages=list(messages),
            params=params,
            kind=engine.kind,
            api_key_env=engine.api_key_env,
            response_schema=schema,
            total_timeout_s=REQUEST_LIMIT_S,
            read_timeout_s=REQUEST_LIMIT_S,
        )

    def send(
        self,
        engine: EngineRecord,
        requests: Sequence[ChatRequest],
        *,
        concurrency: int,
        labels: JsonOut | Sequence[JsonOut] | None = None,
        warmup: bool = False,
    ) -> list[Sent]:
        """Send `requests` to one engine with at most `concurrency` in flight; store each."""
        self.check_stop()
        results = run_blocking(run_many(requests, concurrency=max(1, concurrency)))
        if isinstance(labels, dict) or labels is None:
            per_request = [dict(labels or {}) for _ in requests]
        else:
            per_request = [dict(item) for item in labels]
        sent = [
            Sent(engine.name, label, result) for label, result in zip(per_request, results, strict=True)
        ]
        self._store(sent, warmup)
        return sent

    def _store(self, sent: list[Sent], warmup: bool) -> None:
        if self.run_id is None:
            return
        rows = []
        with self._lock:
            for item in sent:
                r = item.result
                figures = r.metrics()
                self._index += 1
                rows.append(
                    RequestResult(
                        run_id=self.run_id,
                        engine_name=item.engine,
                        index=self._index,
                        warmup=warmup,
                        ok=r.ok,
                        start_s=(r.start - self.t0) if r.start else None,
                        ttft_s=figures.ttft_s,
                        e2e_s=figures.e2e_s,
                        tpot_s=figures.tpot_s,
                        itl_s=figures.itl_s,
                        input_tokens=figures.prompt_tokens,
                        output_tokens=figures.output_tokens if r.ok else None,
                        cached_tokens=figures.cached_tokens,
                        finish_reason=r.finish_reason,
                        error_class=r.error_class,
                        error=r.error,
                        extra={
                            "step": self.step_key,
                            **item.labels,
                            **reasoning_keys(
                                figures.ttfat_s,
                                figures.reasoning_tokens,
                                figures.reasoning_tokens_source,
                                figures.ttft_includes_reasoning,
                            ),
                        },
                    )
                )
        with session_scope() as session:
            session.add_all(rows)

    # -- engine facts --

    def watch(self, engine: EngineRecord, interval_s: float | None = 0.5) -> EngineWatch:
        return EngineWatch(engine, interval_s=interval_s)

    def model_file_bytes(self, engine: EngineRecord) -> tuple[int | None, str | None]:
        """(model size in bytes, weight type) when the engine reports them in /v1/models
        (llama.cpp's `meta.size` and `meta.ftype`); (None, None) otherwise."""
        url = engine.base_url.rstrip("/") + "/v1/models"
        try:
            answer = http.fetch(
                "GET",
                url,
                headers=auth_headers(engine.api_key_env),
                deadline_s=5.0,
                max_bytes=1024 * 1024,
            )
            body = answer.json() if answer.status == 200 else None
        except http.HttpError:
            return None, None
        if not isinstance(body, dict):
            return None, None
        for model in (body or {}).get("data") or []:
            meta = model.get("meta") if isinstance(model, dict) else None
            if isinstance(meta, dict) and isinstance(meta.get("size"), int) and meta["size"] > 0:
                ftype = meta.get("ftype")
                return int(meta["size"]), str(ftype) if ftype else None
        return None, None


class EngineWatch:
    """An engine's metrics over a piece of work: a reading before, one every `interval_s`
    during, one after. Windowed signals (prefix-cache hit rate, preemptions/s) of the last
    reading cover the whole watch, since the scraper's window starts at the first reading.

    Demos use a scraper of their own rather than the telemetry hub's (whose 10 s window
    would mix the step with what ran before it)."""

    def __init__(self, engine: EngineRecord, interval_s: float | None = 0.5) -> None:
        self.engine = engine
        self.interval_s = interval_s
        self.scraper = EngineScraper(
            ScrapeTarget.from_record(engine),
            rate_window_s=WATCH_WINDOW_S,
            latency_window_s=WATCH_WINDOW_S,
            timeout_s=2.0,
            retry_after_s=0.0,
        )
        self.snapshots: list[Snapshot] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        self.snapshots.append(self.scraper.scrape())
        if self.interval_s:
            self._thread = threading.Thread(
                target=self._loop, name=f"demo-watch-{self.engine.name}", daemon=True
            )
            self._thread.start()
        return self

    def _loop(self) -> None:
        assert self.interval_s
        while not self._stop.wait(self.interval_s):
            self.snapshots.append(self.scraper.scrape())

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.snapshots.append(self.scraper.scrape())
        self.scraper.close()

    # -- reading --

    @property
    def error(self) -> str | None:
        return next((s.error for s in reversed(self.snapshots) if s.error), None)

    def reported(self, signal: str) -> bool:
        return any(signal in s.values for s in self.snapshots)

    def reason(self, signal: str) -> str | None:
        """Why a signal has no value ("not reported by llama.cpp"), None when it has one."""
        if self.reported(signal):
            return None
        last = self.snapshots[-1] if self.snapshots else None
        return last.reading(signal).reason if last else "no reading"

    def peak(self, signal: str) -> float | None:
        values = [s.values.get(signal) for s in self.snapshots]
        clean = [v for v in values if v is not None and math.isfinite(v)]
        return max(clean) if clean else None

    def final(self, signal: str) -> float | None:
        """The last reading's value: for windowed signals, over the whole watch."""
        for snapshot in reversed(self.snapshots):
            if signal in snapshot.values:
                return snapshot.values[signal]
        return None

    def count(self, rate_signal: str) -> float | None:
        """Events during the watch from a per-second signal (preemptions_per_s x duration)."""
        rate = self.final(rate_signal)
        if rate is None or len(self.snapshots) < 2:
            return None
        return rate * (self.snapshots[-1].ts - self.snapshots[0].ts)

    def timeline(self, signal: str) -> tuple[list[float], list[float | None]]:
        if not self.snapshots:
            return [], []
        start = self.snapshots[0].ts
        return [round(s.ts - start, 3) for s in self.snapshots], [
            s.values.get(signal) for s in self.snapshots
        ]
