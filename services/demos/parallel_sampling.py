"""Scenario 6: parallel sampling (n answers from one prompt).

With `n = 4`, vLLM prefills the prompt once and forks four sequences that share the
prompt's KV blocks (copy-on-write: a block is copied only when a sequence writes to
it), then decodes them in one batch. Per engine: one request with n = 1, then one with
n = 4 on a fresh prompt of the same length: latency, throughput and, where reported, KV usage.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict, get_args

from services.client import StreamResult
from services.core import stored_json, units
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
from services.demos.context import DemoContext, words_prompt
from services.demos.readout import BigNumber, ChartSpec, EngineFigures
from services.demos.summary import StepBlock
from services.engines import get_adapter
from services.engines.endpoints import EngineRecord

WATCH_INTERVAL_S = 0.2
#: Throughput with n answers at least this many times that of one answer: the n sequences shared the work.
SHARED = 2.0
#: Latency at least this share of n times the one-answer latency: the answers were made one after another.
SERIAL_SHARE = 0.75


def answer_tokens(result: StreamResult) -> int:
    """Tokens of all the answers. Usage may cover only one of them (llama.cpp sends one usage
    trailer per choice, the client keeps the last), so never less than the content chunks
    received over all choices (at least one token each)."""
    chunks = sum(len(choice.times) for choice in result.choices.values())
    return max(result.output_tokens or 0, chunks)


class SamplingOptions(TypedDict):
    n: int
    prompt_tokens: int
    max_tokens: int


SamplingKind = Literal["shared", "serial", "some", "ignored_n", "unsupported", "failed"]


@dataclass(frozen=True)
class SamplingVerdict(DemoVerdict):
    """One engine's request with n = 1 against its request with n answers."""

    verdict: SamplingKind = stored(kind(*get_args(SamplingKind)), default="failed")
    n: int | None = stored(stored_json.optional_int, default=None)
    e2e_n1_s: float | None = stored(stored_json.number, default=None)
    e2e_nN_s: float | None = stored(stored_json.number, default=None)
    ttft_n1_s: float | None = stored(stored_json.number, default=None)
    ttft_nN_s: float | None = stored(stored_json.number, default=None)
    tok_s_n1: float | None = stored(stored_json.number, default=None)
    tok_s_nN: float | None = stored(stored_json.number, default=None)
    choices_nN: int | None = stored(stored_json.optional_int, default=None)
    kv_peak_n1: float | None = stored(stored_json.number, default=None)
    kv_peak_nN: float | None = stored(stored_json.number, default=None)
    kv_reason: str | None = stored(stored_json.text, default=None)
    error: str | None = stored(stored_json.text, default=None)
    throughput_gain: float | None = stored(stored_json.number, default=None)
    latency_ratio: float | None = stored(stored_json.number, default=None)


def engine_verdict(n: int, one: EngineFigures | None, many: EngineFigures | None) -> SamplingVerdict:
    """ "shared" (throughput >= SHARED x), "serial" (latency >= SERIAL_SHARE x n), "some" between;
    "ignored_n" when fewer than n answers came back; "failed"/"unsupported" otherwise."""
    one, many = one or {}, many or {}
    e2e_1, e2e_n = one.get("e2e_s"), many.get("e2e_s")
    tok_s_1, tok_s_n = one.get("throughput_tok_s"), many.get("throughput_tok_s")
    gain = tok_s_n / tok_s_1 if tok_s_1 and tok_s_n else None
    ratio = e2e_n / e2e_1 if e2e_1 and e2e_n else None
    verdict: SamplingKind
    if many.get("unsupported"):
        verdict = "unsupported"
    elif gain is None or ratio is None:
        verdict = "failed"
    elif (many.get("choices") or 0) < n:
        verdict = "ignored_n"
    elif gain >= SHARED:
        verdict = "shared"
    elif ratio >= SERIAL_SHARE * n:
        verdict = "serial"
    else:
        verdict = "some"
    return SamplingVerdict(
        verdict=verdict,
        n=n,
        e2e_n1_s=e2e_1,
        e2e_nN_s=e2e_n,
        ttft_n1_s=one.get("ttft_s"),
        ttft_nN_s=many.get("ttft_s"),
        tok_s_n1=tok_s_1,
        tok_s_nN=tok_s_n,
        choices_nN=many.get("choices"),
        kv_peak_n1=one.get("kv_peak"),
        kv_peak_nN=many.get("kv_peak"),
        kv_reason=many.get("kv_reason") or one.get("kv_reason"),
        error=many.get("error") or one.get("error"),
        throughput_gain=gain,
        latency_ratio=ratio,
    )


def verdict_sentence(name: str, v: SamplingVerdict) -> str:
    n = common.whole(v.n)
    if v.verdict == "unsupported":
        return f"{name}: does not take n (left out)."
    if v.verdict == "failed":
        return common.not_measured(name, v.error)
    if v.verdict == "ignored_n":
        return f"{name}: asked for {n} answers, returned {common.whole(v.choices_nN)}: it ignores n."
    base = (
        f"{name}: {n} answers took {units.duration(v.e2e_nN_s)} against "
        f"{units.duration(v.e2e_n1_s)} for one "
        f"(×{common.fixed(v.latency_ratio, 1)}), so throughput went from {units.rate(v.tok_s_n1)} to "
        f"{units.rate(v.tok_s_nN)} (×{common.fixed(v.throughput_gain, 1)})"
    )
    if v.verdict == "shared":
        base += f": the {n} answers were decoded together, in one batch."
    elif v.verdict == "serial":
        base += ": the answers were made one after another."
    else:
        base += "."
    if v.kv_peak_n1 is not None and v.kv_peak_nN is not None:
        base += (
            f" KV usage peaked at {units.share(v.kv_peak_n1)} with one answer and "
            f"{units.share(v.kv_peak_nN)} with {n}"
        )
        if v.kv_peak_n1 > 0 and v.kv_peak_nN < v.kv_peak_n1 * (v.n or 0) * 0.75:
            base += ": far less than n separate copies, the prompt's blocks were shared."
        else:
            base += "."
    return base


def _throughput(figures: EngineFigures) -> float | None:
    return figures.get("throughput_tok_s")


class ParallelSampling(Scenario[SamplingOptions]):
    name = "parallel-sampling"
    title = "Parallel sampling"
    mechanism = "n > 1 · copy-on-write sharing of the prompt's KV cache (vLLM)"
    explanation = (
        "Asking for several answers to one prompt (n = 4: best-of, self-consistency, code candidates) "
        "does not need four times the work. The engine reads the prompt once, then forks four sequences "
        "that share the prompt's KV cache blocks (a block is copied only when a sequence writes to it) "
        "and decodes them together in one batch. We send each engine one request with n = 1, then one "
        "with n = 4 on a fresh prompt of the same length, and compare latency, throughput and KV usage."
    )
    default_engines = ("vllm-cpu", "llamacpp-4slot")
    duration_hint = "about 30 seconds on the local CPU engines"
    verdict_record = SamplingVerdict
    options = (
        OptionSpec("n", "Answers in the second request", 4, "int", "", 2, 16),
        OptionSpec("prompt_tokens", "Prompt length (tokens, about)", 400, "int", "", 20, 100_000),
        OptionSpec("max_tokens", "Tokens per answer", 32, "int", "", 4, 1024),
    )

    def plan(self, engines: Sequence[EngineRecord], options: SamplingOptions) -> list[StepPlan]:
        n = options["n"]
        return [
            StepPlan(
                "n1",
                "One answer (n = 1)",
                f"A fresh ~{options['prompt_tokens']}-token prompt, one answer of "
                f"{options['max_tokens']} tokens.",
                lambda ctx: self._sample(ctx, options, 1),
            ),
            StepPlan(
                f"n{n}",
                f"{n} answers from one request (n = {n})",
                f"Another fresh prompt of the same length, {n} answers of {options['max_tokens']} tokens each.",
                lambda ctx: self._sample(ctx, options, n),
            ),
        ]

    def _sample(self, ctx: DemoContext, options: SamplingOptions, n: int) -> StepOutcome:
        def measure(engine: EngineRecord) -> EngineFigures:
            if n > 1 and not get_adapter(engine.kind).supports_n:
                return {"unsupported": True}
            if n == 1:
                common.warm_up(ctx, engine)
            messages = [
                {"role": "system", "content": words_prompt(options["prompt_tokens"], ctx.fresh_nonce())},
                {"role": "user", "content": "Invent a short name for rule 2."},
            ]
            request = ctx.chat_request(
                engine, messages, max_tokens=options["max_tokens"], n=n, ignore_eos=True, temperature=0.8
            )
            with ctx.watch(engine, interval_s=WATCH_INTERVAL_S) as watch:
                sent = ctx.send(engine, [request], concurrency=1, labels={"n": n})[0]
            r = sent.result
            tokens = answer_tokens(r) if sent.ok else None
            return {
                "e2e_s": r.e2e_s if sent.ok else None,
                "ttft_s": r.ttft_s if sent.ok else None,
                "tokens": tokens,
                "choices": len(r.choices) if sent.ok else 0,
                "throughput_tok_s": (tokens / r.e2e_s) if tokens and r.e2e_s else None,
                "kv_peak": watch.peak("kv_cache_usage"),
                "kv_reason": watch.reason("kv_cache_usage"),
                "error": common.first_error([sent]),
            }

        return common.each_engine(ctx, measure, lambda results: self._outcome(ctx, results, n))

    def _outcome(self, ctx: DemoContext, results: dict[str, EngineFigures], n: int) -> StepOutcome:
        names = [name for name, v in results.items() if not v.get("unsupported")]
        first = common.step_engines(ctx.steps, "n1")
        series = [common.engine_series("n = 1", first, _throughput, units.rate, names)] if n > 1 else []
        series.append(common.engine_series(f"n = {n}", results, _throughput, units.rate, names))
        chart = ChartSpec(
            title="Output throughput of one request", x_title="engine", y_title="tokens/s", series=series
        )
        numbers, parts = [], []
        for name in names:
            v = results[name]
            numbers.append(
                BigNumber(
                    f"{name} · latency",
                    units.duration(v["e2e_s"]),
                    v["e2e_s"],
                    help=f"one request with n = {n}",
                )
            )
            numbers.append(
                BigNumber(
                    f"{name} · tok/s",
                    units.rate(v["throughput_tok_s"]),
                    v["throughput_tok_s"],
                    help=f"all answers' tokens / latency, n = {n}",
                )
            )
            if v["e2e_s"] is None:
                parts.append(f"{name}: no answer ({v.get('error')}).")
            else:
                kv = f", KV peak {units.share(v['kv_peak'])}" if v.get("kv_peak") is not None else ""
                parts.append(
                    f"{name}: {v['choices']} answer(s), {v['tokens']} tokens in "
                    f"{units.duration(v['e2e_s'])} "
                    f"({units.rate(v['throughput_tok_s'])}){kv}."
                )
        parts += [f"{name}: does not take n." for name, v in results.items() if v.get("unsupported")]
        errors = common.engine_errors(results)
        return StepOutcome(numbers, chart, " ".join(parts), {"n": n, "engines": results}, errors)

    def conclude(
        self, steps: Sequence[StepBlock], engines: Sequence[str], options: SamplingOptions
    ) -> Conclusion:
        n = options["n"]
        verdicts = common.paired_verdicts(
            steps, engines, ("n1", f"n{n}"), functools.partial(engine_verdict, n)
        )
        lines = [verdict_sentence(name, v) for name, v in verdicts.items()]
        shared = common.best(verdicts, lambda v: v.verdict == "shared", lambda v: v.throughput_gain)
        if shared:
            best, v = shared
            headline = (
                f"{n} answers from one prompt cost {best} only ×{common.fixed(v.latency_ratio, 1)} the time "
                f"of one: ×{common.fixed(v.throughput_gain, 1)} the throughput."
            )
        else:
            headline = (
                f"No engine in this run produced {n} answers much faster than {n} single requests would."
            )
        return Conclusion(headline, lines, verdicts)
