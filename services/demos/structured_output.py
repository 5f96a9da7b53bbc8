"""Scenario 4: structured output (guided decoding / grammars).

The same request asking for a JSON object is sent to every engine, first as a plain
instruction, then with the JSON schema as a constraint (`response_format` json_schema;
the engine masks every token that would break the schema). Per engine: the share of
answers that parse and validate against the schema, TTFT, and decode tokens/s.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict, get_args

from services.core import json_schema, stored_json, units
from services.core.json_types import ForeignJson
from services.core.stored_json import stored
from services.demos import common
from services.demos.base import (
    Conclusion,
    DemoVerdict,
    OptionSpec,
    Scenario,
    StepOutcome,
    StepPlan,
    kind,
)
from services.demos.context import DemoContext, Sent
from services.demos.readout import BigNumber, ChartSpec, EngineFigures, change, median
from services.demos.summary import StepBlock
from services.engines.endpoints import EngineRecord

#: A JSON Schema (the standard's shape, not ours), sent to the engines and checked against.
SCHEMA: ForeignJson = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 40},
        "country": {"type": "string", "maxLength": 40},
        "population": {"type": "integer", "minimum": 0},
    },
    "required": ["city", "country", "population"],
    "additionalProperties": False,
}
CITIES = ("Paris", "Tokyo", "Lima", "Cairo", "Oslo", "Delhi", "Quito", "Rome")
#: A cost change smaller than this (relative) is "about the same".
SAME = 0.10


def schema_valid(text: str) -> tuple[bool, str]:
    """(valid, why not): the answer parses as JSON and validates against SCHEMA."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").removeprefix("json").strip()
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return False, "not JSON"
    check = json_schema.check(SCHEMA, value)
    if check.valid is None:  # the check went over its budget, or a pattern was too slow
        return False, check.message
    if not check.valid:
        return False, f"JSON, but {check.message}"
    return True, ""


def judge(sent: Sequence[Sent]) -> EngineFigures:
    answered = [s for s in sent if s.ok]
    checks = [schema_valid(s.result.text) for s in answered]
    valid = sum(1 for ok, _ in checks if ok)
    reasons = sorted({why for ok, why in checks if not ok})
    return {
        "requests": len(sent),
        "answered": len(answered),
        "valid": valid,
        "valid_rate": valid / len(sent) if sent else None,
        "why_invalid": reasons,
        # Medians: one slow request (a busy machine) must not decide the comparison.
        "ttft_s": median(s.result.ttft_s for s in answered),
        "decode_tok_s": median(s.decode_tok_s for s in answered),
        "example": answered[0].result.text[:300] if answered else None,
        "error": common.first_error(sent),
    }


class SchemaOptions(TypedDict):
    requests: int
    max_tokens: int


SchemaKind = Literal["enforced", "partial", "not_enforced", "rejected", "failed"]


@dataclass(frozen=True)
class SchemaVerdict(DemoVerdict):
    """One engine's answers with and without the schema: the valid shares and what the
    constraint cost in TTFT and decode speed."""

    verdict: SchemaKind = stored(kind(*get_args(SchemaKind)), default="failed")
    valid_free: float | None = stored(stored_json.number, default=None)
    valid_constrained: float | None = stored(stored_json.number, default=None)
    ttft_free_s: float | None = stored(stored_json.number, default=None)
    ttft_constrained_s: float | None = stored(stored_json.number, default=None)
    ttft_change: float | None = stored(stored_json.number, default=None)
    tok_s_free: float | None = stored(stored_json.number, default=None)
    tok_s_constrained: float | None = stored(stored_json.number, default=None)
    tok_s_change: float | None = stored(stored_json.number, default=None)
    error: str | None = stored(stored_json.text, default=None)


def engine_verdict(free: EngineFigures | None, constrained: EngineFigures | None) -> SchemaVerdict:
    """ "enforced": every constrained answer valid; "partial": better than free but not all;
    "not_enforced": no better than without the schema; "rejected": the engine refused it."""
    free, constrained = free or {}, constrained or {}
    valid_free, valid_constrained = free.get("valid_rate"), constrained.get("valid_rate")
    verdict: SchemaKind
    if constrained.get("answered", 0) == 0:
        verdict = "rejected" if constrained.get("error") else "failed"
    elif valid_constrained == 1.0:
        verdict = "enforced"
    elif (valid_constrained or 0) > (valid_free or 0):
        verdict = "partial"
    else:
        verdict = "not_enforced"
    return SchemaVerdict(
        verdict=verdict,
        valid_free=valid_free,
        valid_constrained=valid_constrained,
        ttft_free_s=free.get("ttft_s"),
        ttft_constrained_s=constrained.get("ttft_s"),
        ttft_change=change(free.get("ttft_s"), constrained.get("ttft_s")),
        tok_s_free=free.get("decode_tok_s"),
        tok_s_constrained=constrained.get("decode_tok_s"),
        tok_s_change=change(free.get("decode_tok_s"), constrained.get("decode_tok_s")),
        error=constrained.get("error") or free.get("error"),
    )


def _cost(what: str, value: float | None, before: str, after: str) -> str:
    if value is None:
        return ""
    if abs(value) < SAME:
        return f"{what} about the same ({before} to {after})"
    return f"{what} {units.percent(value)} ({before} to {after})"


def verdict_sentence(name: str, v: SchemaVerdict, requests: int) -> str:
    if v.verdict in ("rejected", "failed"):
        return f"{name}: the constrained request failed ({v.error or 'no answer'})."
    free = round((v.valid_free or 0) * requests)
    constrained = round((v.valid_constrained or 0) * requests)
    costs = [
        c
        for c in (
            _cost(
                "TTFT",
                v.ttft_change,
                units.duration(v.ttft_free_s),
                units.duration(v.ttft_constrained_s),
            ),
            _cost(
                "decode speed",
                v.tok_s_change,
                units.rate(v.tok_s_free),
                units.rate(v.tok_s_constrained),
            ),
        )
        if c
    ]
    cost = "; " + ", ".join(costs) if costs else ""
    if v.verdict == "enforced":
        return f"{name}: {constrained}/{requests} schema-valid with the constraint against {free}/{requests} without{cost}."
    if v.verdict == "partial":
        return (
            f"{name}: the constraint helped but did not guarantee it: {constrained}/{requests} valid against "
            f"{free}/{requests}{cost}."
        )
    return f"{name}: the schema was not enforced: {constrained}/{requests} valid with it, {free}/{requests} without{cost}."


def _step_sentence(name: str, v: EngineFigures) -> str:
    if v["answered"] == 0:
        return f"{name}: no answer ({v.get('error')})."
    why = f" (the others: {', '.join(v['why_invalid'])})" if v["why_invalid"] else ""
    return (
        f"{name}: {v['valid']}/{v['requests']} schema-valid{why}, TTFT {units.duration(v['ttft_s'])}, "
        f"{units.rate(v['decode_tok_s'])}."
    )


def _valid_rate(figures: EngineFigures) -> float | None:
    return figures.get("valid_rate")


class StructuredOutput(Scenario[SchemaOptions]):
    name = "structured-output"
    title = "Structured output"
    mechanism = "guided decoding · JSON schema grammars (vLLM xgrammar/guidance, llama.cpp GBNF)"
    explanation = (
        "Asking a model for JSON in the prompt works most of the time, and a parser downstream breaks the "
        "rest. With a JSON schema as a constraint, the engine masks, at every step, each token that would "
        "break the schema, so the answer is valid by construction. The masks cost some work per token, and "
        "the grammar must be compiled first. We send every engine the same requests for a small JSON object, "
        "first as a plain instruction, then with the schema, and count the answers that validate."
    )
    default_engines = ("llamacpp-4slot", "vllm-cpu", "sglang-cpu")
    duration_hint = "about 40 seconds on the local CPU engines"
    verdict_record = SchemaVerdict
    options = (
        OptionSpec(
            "requests", "Requests per engine and mode", 4, "int", "One city each.", 1, len(CITIES)
        ),
        OptionSpec(
            "max_tokens", "Answer tokens (at most)", 64, "int", "Room for the whole object.", 16, 1024
        ),
    )

    def plan(self, engines: Sequence[EngineRecord], options: SchemaOptions) -> list[StepPlan]:
        return [
            StepPlan(
                "free",
                "JSON asked for in the prompt only",
                "The instruction says which keys to return; nothing enforces it.",
                lambda ctx: self._run(ctx, options, constrained=False),
            ),
            StepPlan(
                "constrained",
                "The same requests with the JSON schema enforced",
                "response_format: json_schema. Every answer should now validate.",
                lambda ctx: self._run(ctx, options, constrained=True),
            ),
        ]

    def _run(self, ctx: DemoContext, options: SchemaOptions, *, constrained: bool) -> StepOutcome:
        def measure(engine: EngineRecord) -> EngineFigures:
            if not constrained:
                common.warm_up(ctx, engine)
            requests = []
            for city in CITIES[: options["requests"]]:
                prompt = (
                    f"Describe {city} as a JSON object with exactly the keys city, country and population "
                    "(an integer). Answer with the JSON object only."
                )
                requests.append(
                    ctx.chat_request(
                        engine,
                        [{"role": "user", "content": prompt}],
                        max_tokens=options["max_tokens"],
                        schema=SCHEMA if constrained else None,
                    )
                )
            # One at a time: TTFT then measures the engine, not a queue of our own requests.
            sent = ctx.send(engine, requests, concurrency=1, labels={"constrained": constrained})
            return judge(sent)

        return common.each_engine(ctx, measure, lambda results: self._outcome(ctx, results, constrained))

    def _outcome(
        self, ctx: DemoContext, results: dict[str, EngineFigures], constrained: bool
    ) -> StepOutcome:
        names, share = list(results), functools.partial(units.percent, signed=False)
        free = common.step_engines(ctx.steps, "free")
        series = (
            [common.engine_series("prompt only", free, _valid_rate, share, names)] if constrained else []
        )
        label = "schema enforced" if constrained else "prompt only"
        series.append(common.engine_series(label, results, _valid_rate, share))
        chart = ChartSpec(
            title="Answers that validate against the schema",
            x_title="engine",
            y_title="schema-valid share",
            series=series,
        )
        numbers = [
            number
            for n, v in results.items()
            for number in (
                BigNumber(f"{n} · schema-valid", f"{v['valid']}/{v['requests']}", v["valid_rate"]),
                BigNumber(f"{n} · TTFT", units.duration(v["ttft_s"]), v["ttft_s"]),
            )
        ]
        return common.engines_outcome(numbers, chart, results, _step_sentence)

    def conclude(
        self, steps: Sequence[StepBlock], engines: Sequence[str], options: SchemaOptions
    ) -> Conclusion:
        verdicts = common.paired_verdicts(steps, engines, ("free", "constrained"), engine_verdict)
        lines = [verdict_sentence(n, v, options["requests"]) for n, v in verdicts.items()]
        enforced = [n for n, v in verdicts.items() if v.verdict == "enforced"]
        if enforced and len(enforced) == len(verdicts):
            headline = "With the schema enforced, every answer of every engine was valid JSON of the right shape."
        elif enforced:
            headline = f"The schema was enforced by {', '.join(enforced)}; not by every engine."
        else:
            headline = "No engine in this run guaranteed schema-valid answers."
        return Conclusion(headline, lines, verdicts)
