"""What an engine adapter is: how to recognise an engine kind from its HTTP answers,
which request extras it understands, and where its metrics live.

Adapters are pure: they read a `ProbeEvidence` gathered by `services.engines.probe`
and never do I/O themselves. Add a kind by writing one module with one subclass
decorated with `@register` (see `services.engines.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypedDict

from services.core.json_types import ForeignJson, JsonOut
from services.core.measure import EngineTimes
from services.engines.prometheus import Families
from services.engines.run_split import RunSplit

MetricsFormat = Literal["prometheus", "json", "none"]
#: How requests are sent: OpenAI chat completions, or Triton's generate extension
#: (`generate_stream`, one SSE event per response).
WireFormat = Literal["openai", "triton_generate"]


@dataclass
class HttpAnswer:
    """One probe GET: status (None when the request failed), parsed JSON or text."""

    status: int | None
    json: Any = None
    text: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    #: services.core.http's class of the failure: "unreachable", "deadline", "too_large", ...
    error_reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass
class ProbeEvidence:
    """Answers of an endpoint to the probe's GETs, keyed by path ("/v1/models", ...)."""

    base_url: str
    answers: dict[str, HttpAnswer] = field(default_factory=dict)

    def get(self, path: str) -> HttpAnswer:
        return self.answers.get(path) or HttpAnswer(status=None, error="not probed")

    def value(self, path: str, *keys: str) -> Any:
        """The JSON answer to `path`, followed down `keys` through objects; None where a step
        is missing or not an object."""
        value = self.get(path).json
        for key in keys:
            if not isinstance(value, dict):
                return None
            value = value.get(key)
        return value

    def says(self, path: str, text: str) -> bool:
        """Whether `path` answered with success and `text` in its body."""
        answer = self.get(path)
        return answer.ok and text in (answer.text or "")

    def owned_by(self) -> str | None:
        data = self.value("/v1/models", "data")
        first = data[0] if isinstance(data, list) and data else None
        value = first.get("owned_by") if isinstance(first, dict) else None
        return None if value is None else str(value)

    def header(self, name: str) -> str:
        for answer in self.answers.values():
            for key, value in answer.headers.items():
                if key.lower() == name.lower():
                    return value
        return ""


@dataclass(frozen=True)
class SamplingParams:
    """Parameters shared by every engine in a comparison; None means "engine default"."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    n: int = 1
    top_k: int | None = None
    min_tokens: int | None = None
    ignore_eos: bool = False

    def extras(self) -> dict[str, int | bool]:
        """The options beyond OpenAI's it asks for, with their values (for `extra_body`)."""
        asked = {
            "top_k": self.top_k,
            "min_tokens": self.min_tokens,
            "ignore_eos": True if self.ignore_eos else None,
        }
        return {name: value for name, value in asked.items() if value is not None}


#: What each adapter reads from its metrics: a signal name to its sources, best first.
TelemetrySignals = Mapping[str, tuple[Any, ...]]


@dataclass
class JsonMetricsState:
    """What a kind's reader of JSON metrics keeps between two reads of one endpoint (the scraper
    holds one per endpoint; only the kind's `telemetry_from_json` reads and fills it)."""

    #: Running totals of amounts each read reports only since the previous one, by name.
    totals: dict[str, float] = field(default_factory=dict)
    #: The newest read's KV-cache gauges as the engine sent them (None: none read yet).
    kv: ForeignJson | None = None


@dataclass(frozen=True)
class UntimedQueue:
    """How an engine that times no queue still has one: a request that finds all its slots busy
    waits, untimed, until one frees, and its own times (prefill, decode) begin only then. The
    wait is read on the client's clock by services/bench/time_split.py (`engine_queue`): from
    the send to the end of the load's last other request that ended before this one's prefill
    began (the request whose slot it took). A kind declares it on its adapter
    (`EngineAdapter.untimed_queue`); without it the gap before prefill stays in the rest."""

    #: What the wait is, in words ("the wait for a free slot").
    what: str
    #: The engine's own count of the requests that waited, in its words ("llamacpp:requests_deferred"),
    #: read as the normalised `requests_waiting` signal: said beside the queue as corroboration.
    waiting_metric: str = ""


@dataclass(frozen=True)
class BatchCap:
    """The setting that caps how many requests an engine runs at once (llama.cpp's slots, SGLang's
    max running requests, vLLM's max sequences), and where a run finds its value: in what the
    engine reported of itself (a path into services/engines/reported.py's settings, "/props" then
    its keys) or in the command line Shootout launched it with. An explanation names the setting
    only when it has the value this way and the engine's running count reached it."""

    #: The setting in the engine's words ("--parallel").
    setting: str
    #: Paths into the reported settings, each a tuple of keys.
    reported: tuple[tuple[str, ...], ...] = ()
    #: Launch flags that set it ("--parallel", "-np").
    flags: tuple[str, ...] = ()

    def value(self, reported: Mapping[str, Any], command: Sequence[str]) -> tuple[int, str] | None:
        """(the cap, where it was read: "reported by the engine" or "launched with"), or None."""
        for path in self.reported:
            found: Any = reported
            for key in path:
                found = found.get(key) if isinstance(found, Mapping) else None
            if isinstance(found, int) and not isinstance(found, bool) and found > 0:
                return found, "reported by the engine"
        for index, word in enumerate(command):
            for flag in self.flags:
                text = None
                if word == flag and index + 1 < len(command):
                    text = command[index + 1]
                elif word.startswith(flag + "="):
                    text = word.split("=", 1)[1]
                if text is not None and text.isdigit() and int(text) > 0:
                    return int(text), "launched with"
        return None


#: What an answer carried, for `EngineAdapter.engine_times`: the stream's non-OpenAI top-level
#: fields (the last value of each), its usage (`Usage`), and the response headers (lower-case names).
Fields = ForeignJson
Headers = Mapping[bytes, bytes]


class Usage(TypedDict, total=False):
    """An answer's usage block (OpenAI's `usage` trailer), each counter as the engine sent it:
    services/core/counts.py holds them against the stream before any is published, so none is
    trusted to be a count here. Other keys an engine adds are kept as they came."""

    prompt_tokens: object
    completion_tokens: object
    total_tokens: object
    #: `cached_tokens` inside.
    prompt_tokens_details: object
    #: `reasoning_tokens` inside.
    completion_tokens_details: object
    #: Ours: how many per-choice blocks were added up (services/client/records.py
    #: `merge_choice_usage`; absent: one). Read through its `usage_reports`: an engine's own
    #: block could name it too.
    usage_reports: object


class Timings(TypedDict, total=False):
    """llama.cpp's `timings` of an answer, as it sent them (its adapter and
    services/core/counts.py read them through token_count / milliseconds)."""

    prompt_n: object
    prompt_ms: object
    cache_n: object
    predicted_n: object
    predicted_ms: object


class EngineAdapter:
    """Base adapter: a generic OpenAI-compatible server. Subclasses override what differs."""

    kind: ClassVar[str] = "openai"
    label: ClassVar[str] = "OpenAI-compatible"
    #: Higher runs first when several adapters could claim the same evidence.
    priority: ClassVar[int] = 0
    metrics_path: ClassVar[str | None] = None
    #: Which of `SamplingParams.extras` it takes.
    takes_extras: ClassVar[frozenset[str]] = frozenset()
    supports_n: ClassVar[bool] = True
    #: Where the engine reports cached prompt tokens, in words for the UI.
    cached_tokens_source: ClassVar[str] = "usage.prompt_tokens_details.cached_tokens"
    #: How to turn on the metrics this dashboard reads, for docs/remote-engines.md and the Engines page.
    metrics_hint: ClassVar[str] = ""
    #: Whether its metrics are off the base URL, so they need a metrics URL set by hand (Triton's
    #: port 8002): its card shows the hint until one is set, read or not.
    metrics_need_url: ClassVar[bool] = False
    #: Whether its chat completions return `logprobs.content` (the chosen tokens' log-probabilities)
    #: and `top_logprobs` alternatives when asked (answer parity, services/parity).
    reports_logprobs: ClassVar[bool] = True
    reports_top_logprobs: ClassVar[bool] = True

    # --- where the time went: the engine's own per-request times (services.core.measure) ---
    #: Where it reports them, in words for the UI; "" when it does not (an answer then says
    #: "not reported by <label>").
    engine_times_source: ClassVar[str] = ""
    #: Server flags it needs to report them (the local engines start with them).
    engine_times_flags: ClassVar[tuple[str, ...]] = ()

    def engine_times(self, fields: Fields, usage: Usage | None, headers: Headers) -> EngineTimes | None:
        """This engine's own times for one request, from what its answer carried (`Fields`,
        `Usage`, `Headers`). None: it reported none."""
        return None

    #: Its queue when it times none (llama.cpp's wait for a free slot); None: an engine that
    #: times its queue, or one whose gap before prefill is not known to be a queue.
    untimed_queue: ClassVar[UntimedQueue | None] = None

    #: The setting that caps its batch (services/bench/explain reads it); None: not known.
    batch_cap: ClassVar[BatchCap | None] = None

    #: Its run totals of queue, first-token and request time (services/engines/run_split.py),
    #: for a kind that times no single request; None: it counts none.
    run_split: ClassVar[RunSplit | None] = None

    def run_split_for(self, model: str | None) -> RunSplit | None:
        """The run split of one served model (a server with several labels its totals per model)."""
        return self.run_split

    #: Settings it reports (flattened as Compare lists them: "/props.media_marker") that take a
    #: new value at every start of the process, such as a random token: two runs always differ
    #: by them, so no comparison lists them (issue 56).
    volatile_settings: ClassVar[frozenset[str]] = frozenset()

    #: How the client talks to it (services.client): OpenAI chat unless the kind says otherwise.
    wire: ClassVar[WireFormat] = "openai"
    #: The path that answers 200 once it serves (the probe's health).
    health_path: ClassVar[str] = "/health"

    #: The `owned_by` of its /v1/models entries, where that names it.
    owned_by: ClassVar[str | None] = None
    #: Where its version is, tried in order: (path, key) of a JSON object the probe got.
    version_at: ClassVar[tuple[tuple[str, str], ...]] = (("/version", "version"),)

    def detect(self, evidence: ProbeEvidence) -> bool:
        """True when the evidence shows this kind of engine (by default: its `owned_by`)."""
        return self.owned_by is not None and evidence.owned_by() == self.owned_by

    def describe(self, evidence: ProbeEvidence) -> str:
        """The label of this server as probed (a kind may add what it serves with)."""
        return self.label

    def extra_probes(self, evidence: ProbeEvidence) -> list[tuple[str, str]]:
        """(method, path) the probe asks next once this kind is detected (answers kept in the
        evidence under "METHOD path" for a POST, the path for a GET)."""
        return []

    def more_probes(self, evidence: ProbeEvidence) -> list[tuple[str, str]]:
        """A second round after `extra_probes` (e.g. one path per model they listed)."""
        return []

    def stream_path(self, model: str) -> str | None:
        """The streaming request's path from the server root; None: OpenAI chat completions."""
        return None

    def stream_body(self, model: str, messages: list[ForeignJson], params: SamplingParams) -> JsonOut:
        """The request body of a kind whose `wire` is not OpenAI."""
        raise NotImplementedError

    def signals_for(self, model: str | None) -> TelemetrySignals:
        """The signals of one served model (a server with several may label its series)."""
        return self.telemetry_signals

    def version(self, evidence: ProbeEvidence) -> str | None:
        for path, key in self.version_at:
            value = evidence.value(path, key)
            if value:
                return str(value)
        return None

    def context_length(self, evidence: ProbeEvidence) -> int | None:
        for model in evidence.value("/v1/models", "data") or []:
            if isinstance(model, dict):
                for key in ("max_model_len", "context_length", "max_context_length"):
                    if isinstance(model.get(key), int):
                        return int(model[key])
        return None

    def models(self, evidence: ProbeEvidence) -> list[str]:
        data = evidence.value("/v1/models", "data")
        if not isinstance(data, list):
            return []
        return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]

    def request_extras(self, params: SamplingParams) -> dict[str, int | bool]:
        """Non-OpenAI fields for `extra_body`; silently drops what the kind does not take."""
        return {name: value for name, value in params.extras().items() if name in self.takes_extras}

    def unsupported(self, params: SamplingParams) -> list[str]:
        """Names of requested options this kind ignores (said in the UI and reports)."""
        missing = [name for name in params.extras() if name not in self.takes_extras]
        if params.n > 1 and not self.supports_n:
            missing.append("n")
        return missing

    def response_format(self, schema: ForeignJson, name: str = "answer") -> JsonOut:
        """The `response_format` body field that constrains output to a JSON schema."""
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}

    # --- tokenizing: exact prompt lengths for benchmarks (services.bench) -------------

    #: POST path (from the server root) that counts the tokens of a text; None: no such endpoint.
    tokenize_path: ClassVar[str | None] = None

    def tokenize_body(self, text: str, model: str | None) -> JsonOut:
        """The JSON body asking `tokenize_path` for the tokens of plain `text` (no chat template,
        no special tokens): vLLM's and SGLang's shape; llama.cpp has its own."""
        body: JsonOut = {"prompt": text, "add_special_tokens": False}
        if model:
            body["model"] = model
        return body

    def tokenize_count(self, answer: Any) -> int | None:
        """The token count in the tokenize endpoint's JSON answer."""
        if isinstance(answer, dict):
            if isinstance(answer.get("count"), int):
                return int(answer["count"])
            if isinstance(answer.get("tokens"), list):
                return len(answer["tokens"])
        return None

    # --- telemetry: how this kind's metrics map to the normalised signals -------------
    # (services.engines.signals names the signals; services.engines.normalise has the
    # spec types and the windowing.)

    #: Metric-name prefixes that identify this kind from a metrics scrape alone.
    metric_markers: ClassVar[tuple[str, ...]] = ()
    #: Signal name -> alternatives, tried in order (specs from services.engines.normalise).
    #: A signal absent here, or whose alternatives match nothing, is "not reported by <label>".
    telemetry_signals: ClassVar[TelemetrySignals] = {}
    #: A JSON metrics endpoint used when `metrics_path` is missing (trtllm-serve).
    json_metrics_path: ClassVar[str | None] = None

    @property
    def metrics_format(self) -> MetricsFormat:
        """Prometheus text wherever it has a `metrics_path` (a JSON one is `json_metrics_path`)."""
        return "prometheus" if self.metrics_path else "none"

    def telemetry_from_json(self, payload: Any, state: JsonMetricsState) -> Families:
        """Turn a JSON metrics answer into series the `telemetry_signals` can read.
        `state` persists between reads of one endpoint (for reads that consume data)."""
        return Families()
