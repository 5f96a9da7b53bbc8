"""The playground's records: what a send asks for, and what the page reads back."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TypedDict

from services.client.records import Timings, Usage
from services.core.json_schema import SchemaCheck
from services.core.json_types import ForeignJson, JsonOut
from services.core.measure import EngineTimes, TimeSplit
from services.engines import SamplingParams

MIN_ENGINES = 2
MAX_ENGINES = 6
EXTRA_KEYS = ("top_k", "min_tokens", "ignore_eos")


class StoredParams(TypedDict, total=False):
    """Sampling parameters as an exchange stores them (services/playground/params.py)."""

    temperature: float | None
    top_p: float | None
    max_tokens: int | None
    seed: int | None
    stop: list[str]
    n: int
    top_k: int | None
    min_tokens: int | None
    ignore_eos: bool


class ExchangeParams(StoredParams, total=False):
    """Exchange.params: what one engine was sent, with the schema, its extra body and kind."""

    schema: ForeignJson | None
    extra_body: JsonOut | None
    kind: str


class ReasoningFigures(TypedDict):
    """An answer's timing beside its TTFT, as an exchange's metrics keep it
    (services/core/measure.py)."""

    ttfat_s: float | None
    reasoning_tokens: int
    reasoning_tokens_source: str
    answer_tokens: int
    reasoning_tok_s: float | None
    answer_tok_s: float | None
    ttft_includes_reasoning: bool


class ExchangeMetrics(ReasoningFigures, total=False):
    """Exchange.metrics: an answer's figures as the worker writes them while it streams (an
    exchange of an older version may lack any key: read with `.get`)."""

    ttft_s: float | None
    e2e_s: float | None
    tpot_s: float | None
    itl_mean_s: float | None
    itl_p90_s: float | None
    output_tokens: int
    tokens_per_s: float | None
    #: What the engine was not sent (services/playground/params.py `engine_params`).
    notes: list[str]
    #: The thinking the engine streamed (absent: none).
    thinking: str
    #: Written with the final row only.
    itl_s: list[float]
    chunk_times_s: list[float]
    engine_times: JsonOut
    schema_check: JsonOut


class ExchangeUsage(Usage, total=False):
    """Exchange.usage: the engine's usage block, and llama.cpp's timings where it sent them."""

    timings: Timings


class ExchangeValues(TypedDict, total=False):
    """The columns of one Exchange row the worker writes (status and errors: final rows only)."""

    answer: str
    choices: list[str]
    metrics: ExchangeMetrics
    usage: ExchangeUsage
    finish_reason: str | None
    status: str
    error_class: str | None
    error: str | None


class PlaygroundEngine(TypedDict, total=False):
    """One engine of an exchange as its Run.config stores it (an `EngineChoice`)."""

    engine: str
    model: str | None
    extra_body: JsonOut | None


class PlaygroundConfig(TypedDict, total=False):
    """Run.config of an exchange (services/playground/sending.py `send`). A blind one also
    holds its columns' order (services/runstate/blind.py ORDER_KEY) and, once shown,
    "revealed"."""

    conversation_id: str
    turn: int
    prompt: str
    system: str
    params: StoredParams
    schema: ForeignJson | None
    blind: bool
    revealed: bool
    engines: list[PlaygroundEngine]


@dataclass(frozen=True)
class EngineChoice:
    """One column: a registered engine, optionally another model and raw `extra_body` fields."""

    engine: str
    model: str | None = None
    #: The viewer's JSON, sent as it is.
    extra_body: JsonOut | None = None


@dataclass(frozen=True)
class SendRequest:
    engines: tuple[EngineChoice, ...]
    prompt: str
    system: str = ""
    params: SamplingParams = field(default_factory=SamplingParams)
    #: The viewer's JSON Schema for the answers.
    schema: ForeignJson | None = None
    #: Continue this conversation (None starts one).
    conversation_id: str | None = None
    #: Hide which engine wrote what until a vote (stored with the exchange: it stays blind at
    #: its address for every viewer, whatever their own toggle says).
    blind: bool = False


@dataclass(frozen=True)
class SendHandle:
    run_id: int
    conversation_id: str
    turn: int


@dataclass
class Column:
    """One engine's answer with its live measurements (what a page column shows)."""

    engine: str
    model: str | None
    kind: str
    status: str
    answer: str
    choices: list[str]
    ttft_s: float | None = None
    itl_mean_s: float | None = None
    itl_p90_s: float | None = None
    tokens_per_s: float | None = None
    e2e_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    #: A reasoning model's answer timing (services/core/measure.py); for a model that does not
    #: think, TTFAT is its TTFT and there are no reasoning tokens.
    ttfat_s: float | None = None
    reasoning_tokens: int | None = None
    reasoning_tokens_source: str | None = None
    answer_tokens: int | None = None
    reasoning_tok_s: float | None = None
    answer_tok_s: float | None = None
    ttft_includes_reasoning: bool = False
    #: The thinking the engine streamed ("" when none), shown collapsed above the answer.
    thinking: str = ""
    finish_reason: str | None = None
    error_class: str | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    schema_check: SchemaCheck | None = None
    #: Turn 1's figures of the same engine in this conversation (the prefix-cache effect).
    first_turn_ttft_s: float | None = None
    first_turn_cached_tokens: int | None = None
    #: The engine's own times of this answer (None: not reported), and the split they give.
    engine_times: EngineTimes | None = None
    time_split: TimeSplit | None = None


@dataclass
class ExchangeView:
    run_id: int
    conversation_id: str
    turn: int
    prompt: str
    system: str
    status: str
    active: bool
    columns: list[Column]
    params: StoredParams
    schema: ForeignJson | None
    created_at: datetime | None = None
    #: Sent in blind mode, and whether an operator revealed its engines without a vote (or a
    #: vote was withdrawn after its names were seen): either way no vote may be cast any more.
    blind: bool = False
    revealed: bool = False

    @property
    def first_token_engine(self) -> str | None:
        timed = [c for c in self.columns if c.ttft_s is not None]
        return min(timed, key=lambda c: c.ttft_s or 0).engine if timed else None

    @property
    def fastest_engine(self) -> str | None:
        """Highest decode rate among the answers that finished."""
        timed = [c for c in self.columns if c.tokens_per_s is not None and c.status == "finished"]
        return max(timed, key=lambda c: c.tokens_per_s or 0).engine if timed else None


@dataclass
class Turn:
    run_id: int
    turn: int
    prompt: str
    answers: dict[str, str]


@dataclass
class HistoryItem:
    run_id: int
    conversation_id: str
    turn: int
    prompt: str
    engines: list[str]
    status: str
    created_at: datetime
    #: A blind exchange still hidden from the reader: `engines` is empty.
    engines_hidden: bool = False
