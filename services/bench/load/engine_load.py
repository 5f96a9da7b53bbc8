"""One engine under one load shape (`EngineLoad`): the warm-up, then the measured requests
in a closed loop (conversations per slot) or an open loop (arrivals on a schedule), each
request streamed, timed and recorded once, whatever happens to it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from services.bench.arrivals import LoadSpec, worker_start_offsets
from services.bench.load.outcome import EngineOutcome, RecordSink, WorkerPlan, never_stop
from services.bench.load.pacing import Budget, connect_ahead, planned_arrivals
from services.bench.selfcheck import SelfCheck
from services.bench.selfcheck import report as selfcheck_report
from services.bench.spec import EngineTarget, RequestSettings
from services.bench.stats import RequestRecord
from services.bench.workloads import (
    Conversation,
    WorkloadSpec,
    build_messages,
    iter_conversations,
)
from services.client import ChatRequest, StreamClient, StreamResult, stream_chat
from services.core.json_types import ForeignJson
from services.engines import SamplingParams, get_adapter

STOP_POLL_S = 0.2
#: After a request fails to connect, a closed-loop worker waits this long before the next
#: (a dead engine must not turn a duration-bounded run into a busy loop of failures).
CONNECT_FAILURE_BACKOFF_S = 0.1
CONNECT_ERRORS = frozenset({"connect_refused", "connect_error", "connect_timeout", "dns", "tls"})
MAX_ERROR_TEXT = 500


class _SchemaChecker:
    def valid(self, schema: ForeignJson, text: str) -> bool | None:
        """Valid, invalid, or None: not checked (a slow pattern, or the check over its budget
        of time and memory: services/core/json_schema.py)."""
        # jsonschema costs 0.05-0.1 s: only a worker that checks structured output loads it.
        from services.core import json_schema

        # The same bound as the Playground's, in the same checking process (it keeps each
        # schema's validator for the next answer).
        return json_schema.check_text(text, schema, fenced=False).valid


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
        should_stop: Callable[[], bool] = never_stop,
        settings: RequestSettings | None = None,
        plan: WorkerPlan | None = None,
    ) -> None:
        self.client = client
        self.plan = plan
        self.selfcheck: SelfCheck | None = None
        self.settings = settings or RequestSettings()
        self.engine = engine
        self.workload = workload
        self.load = load
        self.sink = sink
        self.should_stop = should_stop
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
            temperature=self.settings.temperature,
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
            read_timeout_s=self.settings.timeout_s,
            total_timeout_s=self.settings.timeout_s,
            headers=self.settings.request_headers(turn.index) if self.settings.request_headers else None,
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
        schema_valid = None
        if result.ok and conversation.schema is not None:
            # Off the event loop (the match lets go of the GIL): a slow pattern, bounded as it
            # is, must not delay the other streams' chunks and their timestamps.
            schema_valid = await asyncio.to_thread(self.schemas.valid, conversation.schema, result.text)
        record = self._record(
            result,
            turn.index,
            turn.output_len,
            conversation,
            scheduled,
            warmup,
            schema_valid,
            prompt_digest=request.prompt_digest() if result.ok and not warmup else None,
        )
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
        schema_valid: bool | None = None,
        prompt_digest: str | None = None,
    ) -> RequestRecord:
        start = result.start - self.origin if result.start else None
        metrics = result.metrics()
        itl = metrics.itl_s if result.ok else []
        e2e = metrics.e2e_s
        if not result.ok and result.end is not None and result.start:
            e2e = result.end - result.start
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
            ttfat_s=metrics.ttfat_s,
            reasoning_tokens=metrics.reasoning_tokens,
            reasoning_source=metrics.reasoning_tokens_source,
            ttft_includes_reasoning=metrics.ttft_includes_reasoning,
            requested_output_tokens=requested if self.fixed_output else None,
            error_class=result.error_class,
            error=error,
            finish_reason=result.finish_reason,
            schema_valid=schema_valid,
            step=self.settings.step,
            engine_times=result.engine_times,
            stream_tokens=metrics.stream_tokens,
            refused=metrics.refused,
            over_max_tokens=metrics.over_max_tokens,
            answer_digest=result.answer_digest() if result.ok and not warmup else None,
            prompt_digest=prompt_digest,
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
        budget: Budget | None,
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

    async def _claim_turn(self, budget: Budget) -> bool:
        plan = self.plan
        if plan is not None and plan.claim_turn is not None and budget is plan.budget:
            return await plan.claim_turn()
        return budget.claim()

    def _claim_first(self, budget: Budget) -> bool:
        """A conversation's first turn: claimed here, or already by the transport (then
        only the deadline can refuse it)."""
        if self.plan is not None and self.plan.claims_first_turns and budget is self.plan.budget:
            return budget.deadline is None or time.perf_counter() < budget.deadline
        return budget.claim()

    # -- phases -----------------------------------------------------------------------
    async def _warmup(self, count: int) -> None:
        conversations = iter_conversations(
            self.workload, salt=f"{self.settings.salt}:warmup", text=self.settings.text
        )
        budget = Budget(count, None)
        width = max(1, min(count, self.load.concurrency or 1))

        async def worker() -> None:
            while not self.stopping.is_set():
                conversation = next(conversations)
                if not budget.claim():
                    return
                await self._conversation(conversation, budget, None, True, True, None)

        await asyncio.gather(*(worker() for _ in range(width)))

    async def _closed_loop(self, conversations: Iterator[Conversation], budget: Budget) -> None:
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

    async def _open_loop(self, conversations: Iterator[Conversation], budget: Budget) -> None:
        schedule = self._planned(conversations) if self.plan is None else self.plan.schedule()
        await self._open_loop_from(schedule, budget)

    async def _open_loop_from(
        self, schedule: AsyncIterator[tuple[float, Conversation]], budget: Budget
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
        if self.settings.connect_ahead:
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
            budget = Budget(load.requests, deadline)
        conversations = iter_conversations(
            self.workload, salt=self.settings.salt, text=self.settings.text
        )
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
