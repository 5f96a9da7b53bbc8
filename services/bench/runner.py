"""The load generator: drives one engine with a workload under a load shape, and a whole
benchmark (several engines, sweep steps, the SLO search) on top of it.

Everything here runs inside one event loop (the benchmark worker's, or the CLI's); nothing
touches the database: finished requests go to a `RecordSink` (the job service writes them in
batches from another thread) and the stop flag is a plain callable polled a few times a
second. Accounting rule: every request that was handed to the HTTP layer produces exactly
one record (completed, failed, or cancelled = failed with class "cancelled"), so
completed + failed = sent holds for every engine and step, whatever happens.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from services import http
from services.bench.arrivals import LoadSpec, arrival_offsets, worker_start_offsets
from services.bench.selfcheck import SelfCheck, WorkerCheck
from services.bench.selfcheck import report as selfcheck_report
from services.bench.spec import BenchSpec, EngineTarget, SweepSpec
from services.bench.stats import RequestRecord, SloSpec, summarize_engine
from services.bench.workloads import (
    VOCABULARY,
    Calibration,
    Conversation,
    PromptText,
    WorkloadSpec,
    build_messages,
    calibrate_vocabulary,
    iter_conversations,
)
from services.client import (
    ChatRequest,
    StreamClient,
    StreamResult,
    chat_url,
    make_http_client,
    stream_chat,
)
from services.engines import SamplingParams, get_adapter

STOP_POLL_S = 0.2
#: After a request fails to connect, a closed-loop worker waits this long before the next
#: (a dead engine must not turn a duration-bounded run into a busy loop of failures).
CONNECT_FAILURE_BACKOFF_S = 0.1
CONNECT_ERRORS = frozenset({"connect_refused", "connect_error", "connect_timeout", "dns", "tls"})
MAX_ERROR_TEXT = 500
#: The client pool's own cap: the load shape (concurrency, rate cap) is what limits requests.
MAX_IN_FLIGHT = 100_000


async def connect_ahead(client: StreamClient, base_url: str, count: int, timeout_s: float = 10.0) -> int:
    """Open up to `count` keep-alive connections before the measured requests, so that they
    do not pay for connection set-up inside their TTFT; returns how many are ready."""
    return await client.open_ahead(chat_url(base_url), count, timeout_s)


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Move everything allocated so far (imports, the app's objects) out of the garbage
    collector's sight for the run: a full collection over them would stall the event loop
    for milliseconds and delay the timestamps of the tokens arriving meanwhile."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class RecordSink(Protocol):
    def add(self, record: RequestRecord) -> None: ...


class ListSink:
    """Keeps records in memory (tests, the CLI without a database)."""

    def __init__(self) -> None:
        self.records: list[RequestRecord] = []

    def add(self, record: RequestRecord) -> None:
        self.records.append(record)


def _never() -> bool:
    return False


@dataclass
class EngineOutcome:
    """What one engine did under one load (one step of a sweep, or the whole run)."""

    engine: str
    records: list[RequestRecord] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    cancelled: bool = False
    wall_start: float = 0.0
    wall_end: float = 0.0
    connections_ahead: int = 0
    max_streams: int = 0
    model: str | None = None
    #: perf_counter of the measured phase's start (record times are relative to it).
    origin: float = 0.0
    #: The generator's self-check of each worker (raw samples) and their merged report.
    checks: list[WorkerCheck] = field(default_factory=list)
    generator: dict[str, Any] = field(default_factory=dict)

    @property
    def measured(self) -> list[RequestRecord]:
        return [r for r in self.records if not r.warmup]


class _Budget:
    """Requests left and the deadline of the measured phase; claims are atomic in one loop."""

    def __init__(self, requests: int | None, deadline: float | None) -> None:
        self.left = requests
        self.deadline = deadline

    def claim(self) -> bool:
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            return False
        if self.left is None:
            return True
        if self.left <= 0:
            return False
        self.left -= 1
        return True

    def give_back(self) -> None:
        if self.left is not None:
            self.left += 1


@dataclass
class WorkerPlan:
    """One worker process's part of a load the coordinator drew (services/bench/pool.py):
    the shared clock origin, its share of connections, warm-ups and concurrency, the shared
    request budget, and where its requests come from."""

    worker: int
    origin: float
    #: Closed loop: this worker's slots (their start offsets); open loop: its share of the cap.
    start_offsets: list[float]
    concurrency_cap: int | None
    budget: Any
    #: After the warm-up: waits for the coordinator's common start, returns it (perf_counter).
    ready: Callable[[], Awaitable[float]]
    #: The next conversation the coordinator drew; None once the budget is spent (only
    #: where the transport claims first turns, below).
    next_conversation: Callable[[], Awaitable[Conversation | None]]
    #: Open loop: (seconds after the start, conversation) in order, as the coordinator drew them.
    schedule: Callable[[], AsyncIterator[tuple[float, Conversation]]]
    #: The transport claims each conversation's first turn from the budget as it hands the
    #: conversation out, in the coordinator's order (Ray: a claim is a network round trip,
    #: so one per batch instead of one per request on the event loop).
    claims_first_turns: bool = False
    #: A later turn's claim, awaited so that a round trip does not stall the event loop;
    #: None: `budget.claim()`.
    claim_turn: Callable[[], Awaitable[bool]] | None = None


class _SchemaChecker:
    def __init__(self) -> None:
        self._validators: dict[str, Any] = {}

    def valid(self, schema: dict[str, Any], text: str) -> bool:
        key = json.dumps(schema, sort_keys=True)
        validator = self._validators.get(key)
        if validator is None:
            import jsonschema

            validator = jsonschema.validators.validator_for(schema)(schema)
            self._validators[key] = validator
        try:
            instance = json.loads(text)
        except ValueError:
            return False
        return bool(validator.is_valid(instance))


def planned_arrivals(
    load: LoadSpec, conversations: Iterator[Conversation]
) -> Iterator[tuple[float, Conversation]]:
    """The open loop's whole schedule, drawn once: (seconds after the start, conversation)
    in order, from the seeded arrival process or the trace's own times."""
    if load.mode == "trace":
        first_arrival: float | None = None
        for conversation in conversations:
            arrival = conversation.arrival_s or 0.0
            first_arrival = arrival if first_arrival is None else first_arrival
            yield (arrival - first_arrival) / load.trace_speed, conversation
        return
    offsets = arrival_offsets(
        load.rate or 1.0,
        arrival=load.arrival,
        burstiness=load.burstiness,
        seed=load.seed,
        ramp_up_s=load.ramp_up_s,
        ramp_start_rate=load.ramp_start_rate,
    )
    yield from zip(offsets, conversations)


class EngineLoad:
    """One engine under one load shape: warm-up, then the measured requests."""

    def __init__(
        self,
        client: StreamClient,
        engine: EngineTarget,
        workload: WorkloadSpec,
        load: LoadSpec,
        *,
        sink: RecordSink,
        should_stop: Callable[[], bool] = _never,
        salt: str = "",
        text: PromptText | None = None,
        timeout_s: float = 600.0,
        temperature: float | None = 0.0,
        step: int | None = None,
        connect_ahead: bool = True,
        request_headers: Callable[[int], dict[str, str]] | None = None,
        plan: WorkerPlan | None = None,
    ) -> None:
        self.client = client
        self.plan = plan
        self.selfcheck: SelfCheck | None = None
        self.request_headers = request_headers
        self.engine = engine
        self.workload = workload
        self.load = load
        self.sink = sink
        self.should_stop = should_stop
        self.salt = salt
        self.text = text or PromptText()
        self.timeout_s = timeout_s
        self.temperature = temperature
        self.step = step
        self.connect_ahead = connect_ahead
        self.adapter = get_adapter(engine.kind)
        self.fixed_output = workload.uses_fixed_output
        self.outcome = EngineOutcome(engine.name, model=engine.model)
        self.schemas = _SchemaChecker()
        self.origin = 0.0
        self.measure_start = 0.0
        self.stopping = asyncio.Event()
        self.in_flight = 0
        self.done_count = 0

    # -- one request ------------------------------------------------------------------
    def _params(self, output_len: int) -> SamplingParams:
        return SamplingParams(
            temperature=self.temperature,
            max_tokens=output_len,
            min_tokens=output_len if self.fixed_output else None,
            ignore_eos=self.fixed_output,
        )

    async def _request(
        self,
        conversation: Conversation,
        turn_number: int,
        answers: list[str],
        scheduled: float | None,
        warmup: bool,
    ) -> RequestRecord:
        turn = conversation.turns[turn_number]
        request = ChatRequest(
            base_url=self.engine.base_url,
            model=self.engine.model or "",
            messages=build_messages(conversation, turn_number, answers),
            params=self._params(turn.output_len),
            kind=self.engine.kind,
            api_key_env=self.engine.api_key_env,
            response_schema=conversation.schema,
            read_timeout_s=self.timeout_s,
            total_timeout_s=self.timeout_s,
            headers=self.request_headers(turn.index) if self.request_headers else None,
        )
        result = StreamResult()
        self.in_flight += 1
        self.outcome.max_streams = max(self.outcome.max_streams, self.in_flight)
        try:
            await stream_chat(self.client, request, result=result)
        except asyncio.CancelledError:
            if result.error_class is None:
                result.ok, result.error_class, result.error = False, "cancelled", "Stopped by the user."
            record = self._record(result, turn.index, turn.output_len, conversation, scheduled, warmup)
            self._emit(record)
            raise
        except Exception as error:  # noqa: BLE001 - a bug of ours must not lose the request
            result.ok, result.error_class, result.error = (
                False,
                "error",
                f"{type(error).__name__}: {error}",
            )
        finally:
            self.in_flight -= 1
        record = self._record(result, turn.index, turn.output_len, conversation, scheduled, warmup)
        self._emit(record)
        if record.ok:
            answers.append(result.text)
        return record

    def _record(
        self,
        result: StreamResult,
        index: int,
        requested: int,
        conversation: Conversation,
        scheduled: float | None,
        warmup: bool,
    ) -> RequestRecord:
        start = result.start - self.origin if result.start else None
        metrics = result.metrics()
        itl = metrics.itl_s if result.ok else []
        e2e = metrics.e2e_s
        if not result.ok and result.end is not None and result.start:
            e2e = result.end - result.start
        schema_valid = None
        if result.ok and conversation.schema is not None:
            schema_valid = self.schemas.valid(conversation.schema, result.text)
        error = result.error[:MAX_ERROR_TEXT] if result.error else None
        record = RequestRecord(
            engine=self.engine.name,
            index=index,
            ok=bool(result.ok),
            warmup=warmup,
            scheduled_s=scheduled if scheduled is not None else start,
            start_s=start,
            ttft_s=metrics.ttft_s,
            e2e_s=e2e,
            itl_s=itl,
            input_tokens=metrics.prompt_tokens,
            output_tokens=metrics.output_tokens,
            cached_tokens=metrics.cached_tokens,
            requested_output_tokens=requested if self.fixed_output else None,
            error_class=result.error_class,
            error=error,
            finish_reason=result.finish_reason,
            schema_valid=schema_valid,
            step=self.step,
        )
        return record

    def _emit(self, record: RequestRecord) -> None:
        self.outcome.records.append(record)
        if not record.warmup:
            self.done_count += 1
        self.sink.add(record)

    # -- conversations ----------------------------------------------------------------
    async def _conversation(
        self,
        conversation: Conversation,
        budget: _Budget | None,
        scheduled: float | None,
        warmup: bool,
        first_claimed: bool,
        semaphore: asyncio.Semaphore | None,
    ) -> RequestRecord | None:
        answers: list[str] = []
        last: RequestRecord | None = None
        for turn_number in range(len(conversation.turns)):
            if self.stopping.is_set():
                return last
            if turn_number > 0 or not first_claimed:
                if budget is not None and not await self._claim_turn(budget):
                    return last
                scheduled = None
            if semaphore is not None:
                async with semaphore:
                    if self.stopping.is_set():
                        # Claimed but never sent: give the request back.
                        if budget is not None:
                            budget.give_back()
                        return last
                    last = await self._request(conversation, turn_number, answers, scheduled, warmup)
            else:
                last = await self._request(conversation, turn_number, answers, scheduled, warmup)
            if not last.ok:
                return last
        return last

    async def _claim_turn(self, budget: _Budget) -> bool:
        plan = self.plan
        if plan is not None and plan.claim_turn is not None and budget is plan.budget:
            return await plan.claim_turn()
        return budget.claim()

    def _claim_first(self, budget: _Budget) -> bool:
        """A conversation's first turn: claimed here, or already by the transport (then
        only the deadline can refuse it)."""
        if self.plan is not None and self.plan.claims_first_turns and budget is self.plan.budget:
            return budget.deadline is None or time.perf_counter() < budget.deadline
        return budget.claim()

    # -- phases -----------------------------------------------------------------------
    async def _warmup(self, count: int) -> None:
        conversations = iter_conversations(self.workload, salt=f"{self.salt}:warmup", text=self.text)
        budget = _Budget(count, None)
        width = max(1, min(count, self.load.concurrency or 1))

        async def worker() -> None:
            while not self.stopping.is_set():
                conversation = next(conversations)
                if not budget.claim():
                    return
                await self._conversation(conversation, budget, None, True, True, None)

        await asyncio.gather(*(worker() for _ in range(width)))

    async def _closed_loop(self, conversations: Iterator[Conversation], budget: _Budget) -> None:
        concurrency = self.load.concurrency or 1
        starts = worker_start_offsets(concurrency, self.load.ramp_up_s)
        if self.plan is not None:
            starts = self.plan.start_offsets

        async def worker(start_offset: float) -> None:
            if start_offset > 0:
                await self._sleep_until(self.measure_start + start_offset)
            while not self.stopping.is_set():
                if not self._claim_first(budget):
                    return
                if self.plan is not None:
                    handed = await self.plan.next_conversation()
                    if handed is None:  # the transport found the budget spent
                        return
                    conversation = handed
                else:
                    conversation = next(conversations)
                last = await self._conversation(conversation, budget, None, False, True, None)
                if last is not None and not last.ok and last.error_class in CONNECT_ERRORS:
                    await asyncio.sleep(CONNECT_FAILURE_BACKOFF_S)

        await asyncio.gather(*(worker(offset) for offset in starts))

    async def _planned(
        self, conversations: Iterator[Conversation]
    ) -> AsyncIterator[tuple[float, Conversation]]:
        for item in planned_arrivals(self.load, conversations):
            yield item

    async def _open_loop(self, conversations: Iterator[Conversation], budget: _Budget) -> None:
        schedule = self._planned(conversations) if self.plan is None else self.plan.schedule()
        await self._open_loop_from(schedule, budget)

    async def _open_loop_from(
        self, schedule: AsyncIterator[tuple[float, Conversation]], budget: _Budget
    ) -> None:
        load = self.load
        cap = self.plan.concurrency_cap if self.plan is not None else load.concurrency
        semaphore = asyncio.Semaphore(cap) if cap else None
        tasks: set[asyncio.Task[Any]] = set()
        try:
            async for offset, conversation in schedule:
                due = self.measure_start + offset
                if budget.deadline is not None and due >= budget.deadline:
                    break
                await self._sleep_until(due)
                if self.selfcheck is not None:
                    self.selfcheck.late_send(time.perf_counter() - due)
                if self.stopping.is_set() or not self._claim_first(budget):
                    break
                scheduled = due - self.origin
                task = asyncio.create_task(
                    self._conversation(conversation, budget, scheduled, False, True, semaphore)
                )
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
        except asyncio.CancelledError:
            # Stopped: every request already sent is cancelled and recorded, none is lost.
            for task in list(tasks):
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _sleep_until(self, target: float) -> None:
        while True:
            delay = target - time.perf_counter()
            if delay <= 0 or self.stopping.is_set():
                return
            try:
                await asyncio.wait_for(self.stopping.wait(), timeout=delay)
            except TimeoutError:
                return

    async def _watch_stop(self) -> None:
        while not self.stopping.is_set():
            if self.should_stop():
                self.outcome.cancelled = True
                self.stopping.set()
                return
            await asyncio.sleep(STOP_POLL_S)

    async def run(self) -> EngineOutcome:
        """Warm-up, then the measured phase; cancelled requests are recorded as failed."""
        self.outcome.unsupported = self.adapter.unsupported(self._params(1)) if self.fixed_output else []
        watcher = asyncio.create_task(self._watch_stop())
        main = asyncio.create_task(self._run_phases())
        try:
            done, _ = await asyncio.wait({main, watcher}, return_when=asyncio.FIRST_COMPLETED)
            if main not in done:
                main.cancel()
                await asyncio.gather(main, return_exceptions=True)
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            failure = main.exception() if main.done() and not main.cancelled() else None
            if failure is not None:
                raise failure
        self.outcome.wall_end = time.time()
        return self.outcome

    async def _run_phases(self) -> None:
        load = self.load
        if self.connect_ahead:
            width = load.concurrency or min(64, max(1, int((load.rate or 1) * 2)))
            self.outcome.connections_ahead = await connect_ahead(
                self.client, self.engine.base_url, width
            )
        # Record times count from here (warm-ups first); the load shape from measure_start.
        # A worker process counts from the coordinator's origin: one clock for all workers.
        self.origin = self.measure_start = (
            self.plan.origin if self.plan is not None else time.perf_counter()
        )
        self.outcome.wall_start = time.time()
        self.outcome.origin = self.origin
        if load.warmup_requests:
            await self._warmup(load.warmup_requests)
            self.measure_start = time.perf_counter()
        if self.plan is not None:
            self.measure_start = await self.plan.ready()
            budget = self.plan.budget
        else:
            deadline = self.measure_start + load.duration_s if load.duration_s else None
            budget = _Budget(load.requests, deadline)
        conversations = iter_conversations(self.workload, salt=self.salt, text=self.text)
        self.selfcheck = SelfCheck(
            lambda: self.client.open_connections, worker=self.plan.worker if self.plan is not None else 0
        ).start()
        try:
            if load.mode == "concurrency":
                await self._closed_loop(conversations, budget)
            else:
                await self._open_loop(conversations, budget)
        finally:
            await self._finish_selfcheck()

    async def _finish_selfcheck(self) -> None:
        if self.selfcheck is None:
            return
        check, self.selfcheck = await self.selfcheck.stop(), None
        self.outcome.checks = [check]
        self.outcome.generator = selfcheck_report([check], open_loop=self.load.mode != "concurrency")


# ---------------------------------------------------------------------------------------
# Preparing an engine: its model name and the prompt vocabulary
# ---------------------------------------------------------------------------------------


async def discover_model(engine: EngineTarget, timeout_s: float = 10.0) -> str | None:
    """The first model the engine lists in /v1/models (for engines given without one)."""
    from services.client import build_headers

    headers = build_headers(
        ChatRequest(base_url=engine.base_url, model="", messages=[], api_key_env=engine.api_key_env)
    )
    url = engine.base_url.rstrip("/")
    url = (url if url.endswith("/v1") else url + "/v1") + "/models"
    try:
        answer = await http.fetch_async(
            "GET",
            url,
            headers={k: v for k, v in headers.items() if k == "authorization"},
            deadline_s=timeout_s,
            max_bytes=1024 * 1024,
        )
        body = answer.json() if answer.status == 200 else None
    except http.HttpError:  # no model list: the request itself will say what is wrong
        return None
    data = body.get("data") if isinstance(body, dict) else None
    if isinstance(data, list) and data and isinstance(data[0], dict) and data[0].get("id"):
        return str(data[0]["id"])
    return None


async def calibrate_prompt_text(
    engines: tuple[EngineTarget, ...], timeout_s: float = 10.0
) -> tuple[PromptText, Calibration]:
    """Check the prompt vocabulary against the first engine that can tokenize."""
    for engine in engines:
        calibrated = await _calibrate_on(engine, timeout_s)
        if calibrated is not None:
            return calibrated
    return PromptText(), Calibration("none")


async def _calibrate_on(engine: EngineTarget, timeout_s: float) -> tuple[PromptText, Calibration] | None:
    """One engine's tokenizer asked about the vocabulary; None where it cannot tell (no
    tokenize endpoint, an error: calibration is an improvement, never a blocker)."""
    import httpx2

    adapter = get_adapter(engine.kind)
    if adapter.tokenize_path is None:
        return None
    url = engine.base_url.rstrip("/").removesuffix("/v1") + adapter.tokenize_path
    try:
        async with httpx2.AsyncClient(timeout=timeout_s) as client:

            async def count(text: str) -> int | None:
                answer = await http.fetch_async(
                    "POST",
                    url,
                    json=adapter.tokenize_body(text, engine.model),
                    deadline_s=timeout_s,
                    max_bytes=4 * 1024 * 1024,
                    client=client,
                )
                if answer.status != 200:
                    return None
                return adapter.tokenize_count(answer.json())

            baseline = await count("")
            whole = " " + " ".join(VOCABULARY)
            total = await count(whole)
            if baseline is None or total is None:
                return None
            if total - baseline == len(VOCABULARY):
                return PromptText(), Calibration(
                    "tokenize", engine.name, len(VOCABULARY), len(VOCABULARY)
                )
            semaphore = asyncio.Semaphore(16)

            async def one(word: str) -> tuple[str, int | None]:
                async with semaphore:
                    return word, await count(" " + word)

            counted = await asyncio.gather(*(one(word) for word in VOCABULARY))
    except Exception:  # noqa: BLE001 - calibration is an improvement, never a blocker
        return None
    counts = {" " + word: n for word, n in counted if n is not None}
    kept, dropped = calibrate_vocabulary(counts, baseline)
    return PromptText(vocabulary=kept), Calibration(
        "tokenize", engine.name, len(VOCABULARY), len(kept), dropped
    )


# ---------------------------------------------------------------------------------------
# A whole benchmark: engines x steps
# ---------------------------------------------------------------------------------------


@dataclass
class StepResult:
    engine: str
    dimension: str | None
    level: float | None
    step: int | None
    phase: str
    outcome: EngineOutcome
    summary: dict[str, Any]


@dataclass
class BenchOutcome:
    steps: list[StepResult] = field(default_factory=list)
    calibration: Calibration | None = None
    cancelled: bool = False
    models: dict[str, str | None] = field(default_factory=dict)
    slo_search: dict[str, Any] = field(default_factory=dict)
    stopped_early: dict[str, str] = field(default_factory=dict)


class EngineMetricsReader(Protocol):
    def __call__(self, engine: str, wall_start: float, wall_end: float) -> dict[str, Any]: ...


def _no_engine_metrics(engine: str, wall_start: float, wall_end: float) -> dict[str, Any]:
    return {"prefix_cache_hit_rate": None, "kv_cache_usage_max": None}


class Benchmark:
    """Runs a validated BenchSpec: engines one after another (or together), each sweep step."""

    def __init__(
        self,
        spec: BenchSpec,
        *,
        sink: RecordSink,
        should_stop: Callable[[], bool] = _never,
        progress: Callable[[float, str], None] | None = None,
        salt: str = "",
        engine_metrics: EngineMetricsReader = _no_engine_metrics,
    ) -> None:
        self.spec = spec
        self.sink = sink
        self.should_stop = should_stop
        self.progress = progress or (lambda fraction, message: None)
        self.salt = salt
        self.engine_metrics = engine_metrics
        self.result = BenchOutcome()
        self.text = PromptText()
        self._phases_total = 1
        self._phases_done = 0
        self._live: list[Any] = []
        self._last_generator: dict[str, dict[str, Any]] = {}
        self._auto_count: dict[str, int] = {}
        self.cancelled = False

    def _stop(self) -> bool:
        if not self.cancelled and self.should_stop():
            self.cancelled = True
        return self.cancelled

    # progress: finished phases plus the share of the phases now running
    def phase_fraction(self) -> float:
        running = 0.0
        for load in self._live:
            spec = load.load
            parts = []
            if spec.requests:
                parts.append(load.done_count / spec.requests)
            if spec.duration_s and load.measure_start:
                parts.append((time.perf_counter() - load.measure_start) / spec.duration_s)
            running += min(1.0, max(parts, default=0.0))
        return min(1.0, (self._phases_done + running) / max(1, self._phases_total))

    async def run(self) -> BenchOutcome:
        spec = self.spec
        engines = list(spec.engines)
        for position, engine in enumerate(engines):
            if not engine.model:
                model = await discover_model(engine)
                engines[position] = replace(engine, model=model)
        self.result.models = {e.name: e.model for e in engines}
        if spec.calibrate_prompts and spec.workload.kind not in ("file",):
            self.text, self.result.calibration = await calibrate_prompt_text(tuple(engines))
        else:
            self.result.calibration = Calibration("none")
        with quiet_gc():
            await self._run_levels(engines)
        self.result.cancelled = self.cancelled
        return self.result

    async def _run_levels(self, engines: list[EngineTarget]) -> None:
        spec = self.spec
        async with make_http_client(MAX_IN_FLIGHT, read_timeout_s=spec.timeout_s) as client:
            if spec.sweep.kind == "slo_search":
                await self._slo_search(client, engines)
            elif spec.sweep.active:
                await self._sweep(client, engines)
            else:
                self._phases_total = len(engines)
                await self._level(client, engines, spec.load, None, None, "run")

    async def _level(
        self,
        client: StreamClient,
        engines: list[EngineTarget],
        load: LoadSpec,
        step: int | None,
        level: float | None,
        phase: str,
    ) -> list[StepResult]:
        """Every engine at one load level (one after another, or together)."""
        spec = self.spec
        salt = f"{self.salt}:{step}" if step is not None else self.salt

        def make(engine: EngineTarget) -> Any:
            workers = self._workers_for(engine.name, load)
            if spec.ray_address:
                from services.bench.ray_pool import RayEngineLoad, ray_workers

                return RayEngineLoad(
                    engine,
                    spec.workload,
                    load,
                    workers=ray_workers(spec.ray_address, workers),
                    sink=self.sink,
                    should_stop=self._stop,
                    salt=salt,
                    text=self.text,
                    timeout_s=spec.timeout_s,
                    temperature=spec.temperature,
                    step=step,
                    connect_ahead=spec.connect_ahead,
                    address=spec.ray_address,
                )
            if workers > 1:
                from services.bench.pool import PooledEngineLoad

                return PooledEngineLoad(
                    engine,
                    spec.workload,
                    load,
                    workers=workers,
                    sink=self.sink,
                    should_stop=self._stop,
                    salt=salt,
                    text=self.text,
                    timeout_s=spec.timeout_s,
                    temperature=spec.temperature,
                    step=step,
                    connect_ahead=spec.connect_ahead,
                )
            return EngineLoad(
                client,
                engine,
                spec.workload,
                load,
                sink=self.sink,
                should_stop=self._stop,
                salt=salt,
                text=self.text,
                timeout_s=spec.timeout_s,
                temperature=spec.temperature,
                step=step,
                connect_ahead=spec.connect_ahead,
            )

        results: list[StepResult] = []
        if spec.parallel_engines:
            loads = [make(e) for e in engines]
            self._live = loads
            outcomes = await asyncio.gather(*(load_.run() for load_ in loads))
            self._live = []
            self._phases_done += len(loads)
            for outcome in outcomes:
                results.append(self._step_result(outcome, load, step, level, phase))
        else:
            for engine in engines:
                if self._stop():
                    break
                engine_load = make(engine)
                self._live = [engine_load]
                self.progress(self.phase_fraction(), f"{engine.name}: {load.label()}")
                outcome = await engine_load.run()
                self._live = []
                self._phases_done += 1
                results.append(self._step_result(outcome, load, step, level, phase))
        self.result.steps.extend(results)
        self.progress(self.phase_fraction(), "")
        return results

    def _workers_for(self, engine: str, load: LoadSpec) -> int:
        """The spec's worker count, or for auto: the self-check's choice, grown after a step
        of this engine that was client-bound."""
        from services.bench.spec import WORKERS_AUTO

        if self.spec.workers != WORKERS_AUTO:
            return self.spec.workers
        from services.bench.pool import auto_workers

        previous = self._last_generator.get(engine)
        chosen = auto_workers(load, previous, self._auto_count.get(engine))
        self._auto_count[engine] = chosen
        return chosen

    def _step_result(
        self, outcome: EngineOutcome, load: LoadSpec, step: int | None, level: float | None, phase: str
    ) -> StepResult:
        self._last_generator[outcome.engine] = outcome.generator
        summary = summarize_engine(
            outcome.records,
            slo=self.spec.slo,
            percentiles=self.spec.percentiles,
            fixed_output=self.spec.workload.uses_fixed_output,
            engine_metrics=self.engine_metrics(outcome.engine, outcome.wall_start, outcome.wall_end),
        )
        summary["unsupported_options"] = outcome.unsupported
        summary["cancelled"] = outcome.cancelled
        summary["max_streams"] = outcome.max_streams
        summary["connections_ahead"] = outcome.connections_ahead
        summary["model"] = outcome.model
        summary["started_at_unix"] = outcome.wall_start
        summary["generator"] = outcome.generator
        dimension = self.spec.sweep.dimension if self.spec.sweep.active else None
        return StepResult(outcome.engine, dimension, level, step, phase, outcome, summary)

    def _load_at(self, dimension: str, level: float) -> LoadSpec:
        load = self.spec.load
        if dimension == "concurrency":
            return replace(load, mode="concurrency", concurrency=max(1, round(level)), rate=None)
        capped = load.concurrency if load.mode == "rate" else None
        return replace(load, mode="rate", rate=level, concurrency=capped)

    async def _sweep(self, client: StreamClient, engines: list[EngineTarget]) -> None:
        sweep: SweepSpec = self.spec.sweep
        dimension = sweep.dimension
        values = sorted(sweep.values)
        self._phases_total = len(values) * len(engines)
        active = list(engines)
        history: dict[str, list[dict[str, Any]]] = {e.name: [] for e in engines}
        for step, level in enumerate(values):
            if not active or self._stop():
                break
            results = await self._level(
                client, active, self._load_at(dimension, level), step, level, "sweep"
            )
            for result in results:
                reason = _saturation(history[result.engine], result.summary, sweep)
                history[result.engine].append(result.summary)
                if reason:
                    self.result.stopped_early[result.engine] = f"{reason} at {dimension} {level:g}"
                    active = [e for e in active if e.name != result.engine]
                    self._phases_total -= len(values) - step - 1

    async def _slo_search(self, client: StreamClient, engines: list[EngineTarget]) -> None:
        sweep = self.spec.sweep
        dimension = sweep.dimension
        slo = self.spec.slo
        # Estimate: doubling steps plus the bisections, per engine.
        doubling = 1
        while sweep.start * 2**doubling <= sweep.max_value:
            doubling += 1
        self._phases_total = len(engines) * (doubling + sweep.search_steps)
        step_counter = itertools.count()
        for engine in engines:
            best: float | None = None
            worst: float | None = None
            best_summary: dict[str, Any] | None = None
            level = sweep.start
            while level <= sweep.max_value and not self._stop():
                summary = await self._probe(client, engine, dimension, level, next(step_counter))
                if _meets(summary, slo):
                    best, best_summary = level, summary
                    level *= 2
                else:
                    worst = level
                    break
            low, high = best, worst
            for _ in range(sweep.search_steps):
                if self._stop() or high is None:
                    break
                low_value = low if low is not None else 0.0
                middle = (low_value + high) / 2
                if dimension == "concurrency":
                    middle = round(middle)
                    if middle <= low_value or middle >= high:
                        break
                summary = await self._probe(client, engine, dimension, middle, next(step_counter))
                if _meets(summary, slo):
                    low, best, best_summary = middle, middle, summary
                else:
                    high = middle
            self.result.slo_search[engine.name] = {
                "dimension": dimension,
                "best": best,
                "first_failing": high,
                "attainment": best_summary.get("slo_attainment") if best_summary else None,
                "goodput_rps": best_summary.get("goodput_rps") if best_summary else None,
                "slo": slo.label(),
                "required_attainment": slo.attainment,
                "reached_maximum": best is not None and high is None,
            }

    async def _probe(
        self, client: StreamClient, engine: EngineTarget, dimension: str, level: float, step: int
    ) -> dict[str, Any]:
        results = await self._level(
            client, [engine], self._load_at(dimension, level), step, level, "search"
        )
        return results[0].summary if results else {}


def _meets(summary: dict[str, Any], slo: SloSpec) -> bool:
    attainment = summary.get("slo_attainment")
    return attainment is not None and attainment >= slo.attainment


def _saturation(history: list[dict[str, Any]], summary: dict[str, Any], sweep: SweepSpec) -> str | None:
    """Why an engine's sweep should stop after this step, or None to go on."""
    if summary.get("cancelled"):
        return "cancelled"
    if summary.get("error_rate", 0.0) > sweep.max_error_rate:
        return f"error rate {summary['error_rate']:.0%} over {sweep.max_error_rate:.0%}"
    first = history[0] if history else None
    if first is not None:
        base = (first.get("ttft_s") or {}).get("p90")
        now = (summary.get("ttft_s") or {}).get("p90")
        if base and now and now > sweep.latency_factor * base:
            return f"p90 TTFT {now * 1000:.0f} ms over {sweep.latency_factor:g}x the first step's"
    if sweep.stop_on_plateau and len(history) >= 2:
        best_before = max(h.get("request_throughput_rps", 0.0) for h in history[:-1])
        previous = history[-1].get("request_throughput_rps", 0.0)
        current = summary.get("request_throughput_rps", 0.0)
        if previous < 1.05 * best_before and current < 1.05 * max(best_before, previous):
            return "throughput stopped rising (saturated)"
    return None


def execute_load(
    engine: EngineTarget,
    workload: WorkloadSpec,
    load: LoadSpec,
    *,
    salt: str = "",
    timeout_s: float = 600.0,
    sink: RecordSink | None = None,
    should_stop: Callable[[], bool] = _never,
    request_headers: Callable[[int], dict[str, str]] | None = None,
    connect_ahead: bool = True,
    workers: int = 1,
    ray_address: str = "",
) -> EngineOutcome:
    """One engine under one load, synchronously, on the client's fast loop (benchmarks, tests);
    with `workers` > 1 spread over that many processes (services/bench/pool.py), with a
    `ray_address` over that Ray cluster's nodes (services/bench/ray_pool.py)."""
    from services.client import run_blocking

    if ray_address:
        from services.bench.ray_pool import RayEngineLoad, ray_workers

        return RayEngineLoad(
            engine,
            workload.validate(),
            load.validate(),
            workers=ray_workers(ray_address, workers),
            sink=sink or ListSink(),
            should_stop=should_stop,
            salt=salt,
            timeout_s=timeout_s,
            connect_ahead=connect_ahead,
            address=ray_address,
        )._coordinate()

    if workers > 1:
        from services.bench.pool import PooledEngineLoad

        pooled = PooledEngineLoad(
            engine,
            workload.validate(),
            load.validate(),
            workers=workers,
            sink=sink or ListSink(),
            should_stop=should_stop,
            salt=salt,
            timeout_s=timeout_s,
            connect_ahead=connect_ahead,
        )
        return pooled._coordinate()

    async def main() -> EngineOutcome:
        with quiet_gc():
            async with make_http_client(MAX_IN_FLIGHT, read_timeout_s=timeout_s) as client:
                return await EngineLoad(
                    client,
                    engine,
                    workload.validate(),
                    load.validate(),
                    sink=sink or ListSink(),
                    salt=salt,
                    timeout_s=timeout_s,
                    should_stop=should_stop,
                    request_headers=request_headers,
                    connect_ahead=connect_ahead,
                ).run()

    return run_blocking(main())
