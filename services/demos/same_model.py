"""Scenario 7: same model, different engines (answer parity).

llama.cpp serves SmolLM2 as a Q4_1 GGUF file; vLLM serves the same weights in BF16/FP32. The
same prompts go greedily (temperature 0, one seed) to both, with log-probabilities; the
first engine is the reference. Measured: exact-match rate, where the answers first part,
how far apart the engines' log-probabilities are before that, whether the reference's token
was still in the other's top-k where they parted, and each engine's task score and tokens/s.
The metrics are services/parity's, the same as the Parity page's.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict, get_args

from services.core import stored_json, units
from services.core.measure import percentile
from services.core.stored_json import stored
from services.demos import common
from services.demos.base import (
    Conclusion,
    DemoVerdict,
    OptionSpec,
    Scenario,
    StepOutcome,
    StepPlan,
    engine_data,
    kind,
)
from services.demos.context import DemoContext
from services.demos.readout import BigNumber, ChartSpec, EngineFigures, ParityFigures, Series
from services.demos.summary import StepBlock
from services.engines.endpoints import EngineRecord
from services.parity.metrics import Answer, PooledComparison, TokenChoice, compare, summarise
from services.parity.records import AnswerRow
from services.parity.runner import send_one
from services.parity.tasks import TASK_SET_SIZE, task_set

#: Below this mean |Δ logprob| (nats) before the divergence, two engines compute "the same" distribution.
CLOSE_LOGPROBS = 0.1


def _answer(row: AnswerRow) -> Answer:
    extra = row.get("extra") or {}
    tokens = extra.get("tokens")
    return Answer(
        text=extra.get("text") or "",
        tokens=tuple(_token(t) for t in tokens) if isinstance(tokens, list) else None,
    )


def _task_score(figures: EngineFigures) -> float | None:
    return figures.get("task_score")


_share = functools.partial(units.percent, signed=False)


def _token(entry: list[object]) -> TokenChoice:
    """[token, logprob, {alternative: logprob}] as services/parity's `send_one` writes it."""
    token, logprob, top = entry[0], entry[1], entry[2]
    return TokenChoice(
        str(token),
        logprob if isinstance(logprob, int | float) else None,
        top if isinstance(top, dict) else {},
    )


def parity_figures(pooled: PooledComparison, margin_median: float | None) -> ParityFigures:
    """One engine's pooled comparison as its step stores it: services/parity's own
    `to_dict()`, then the median margin at the divergence."""
    return {
        "compared": pooled.compared,
        "exact_match_rate": pooled.exact_match_rate,
        "diverged": pooled.diverged,
        "divergence_positions": list(pooled.divergence_positions),
        "divergence_median": pooled.divergence_median,
        "divergence_p10": pooled.divergence_p10,
        "divergence_p90": pooled.divergence_p90,
        "token_agreement_mean": pooled.token_agreement_mean,
        "logprob_diff_mean": pooled.logprob_diff_mean,
        "topk_rate": pooled.topk_rate,
        "units": list(pooled.units),
        "margin_median": margin_median,
    }


class SameModelOptions(TypedDict):
    prompts: int
    max_tokens: int


ParityKind = Literal["identical", "rounding", "different", "not_compared"]


@dataclass(frozen=True)
class ParityVerdict(DemoVerdict):
    """One engine's answers against the reference engine's, by services/parity's metrics."""

    verdict: ParityKind = stored(
        kind(*get_args(ParityKind), neutral="not_compared"), default="not_compared"
    )
    exact_match_rate: float | None = stored(stored_json.number, default=None)
    divergence_median: float | None = stored(stored_json.number, default=None)
    logprob_diff_mean: float | None = stored(stored_json.number, default=None)
    topk_rate: float | None = stored(stored_json.number, default=None)
    task_score: float | None = stored(stored_json.number, default=None)
    tok_s: float | None = stored(stored_json.number, default=None)


class SameModel(Scenario[SameModelOptions]):
    name = "same-model"
    title = "Same model, different engines"
    mechanism = "quantisation and kernels (answer parity)"
    explanation = (
        "llama.cpp runs SmolLM2 from a Q4_1 GGUF file (weights rounded to 4 bits in blocks of 32); vLLM runs the "
        "same weights unrounded. Both answer the same prompts greedily: at temperature 0 each picks its most likely "
        "next token, so any difference in the numbers can flip a near-tie and send the answer down another path. "
        "We count how often the answers are identical, where they first part, and whether the first engine's "
        "token was still among the other's top choices there."
    )
    default_engines = ("llamacpp-4slot", "vllm-cpu")
    min_engines = 2
    duration_hint = "about a minute on the local CPU engines"
    verdict_record = ParityVerdict
    options = (
        OptionSpec(
            "prompts",
            "Prompts from the task set",
            12,
            "int",
            "Arithmetic, units, copying, facts, JSON.",
            2,
            TASK_SET_SIZE,
        ),
        OptionSpec(
            "max_tokens", "Answer tokens (at most)", 32, "int", "Longer answers part more often.", 4, 512
        ),
    )

    def plan(self, engines: Sequence[EngineRecord], options: SameModelOptions) -> list[StepPlan]:
        return [
            StepPlan(
                "answers",
                "The same prompts, greedily, to each engine",
                f"Temperature 0, seed 0, {options['max_tokens']} tokens at most, log-probabilities on; "
                f"{engines[0].name} is the reference.",
                lambda ctx: self._run(ctx, options),
            )
        ]

    def _run(self, ctx: DemoContext, options: SameModelOptions) -> StepOutcome:
        tasks = task_set(options["prompts"])

        def answers(engine: EngineRecord) -> list[AnswerRow]:
            rows = []
            for task in tasks:
                ctx.check_stop()
                rows.append(
                    send_one(engine, task, max_tokens=options["max_tokens"], seed=0, top_logprobs=5)
                )
            return rows

        return common.each_engine(ctx, answers, lambda answered: self._outcome(ctx, answered))

    def _outcome(self, ctx: DemoContext, answers: dict[str, list[AnswerRow]]) -> StepOutcome:
        reference = ctx.engines[0].name
        results: dict[str, EngineFigures] = {}
        errors = []
        for name, rows in answers.items():
            done = [r for r in rows if r["ok"]]
            scored = [r for r in done if r["extra"]["score"] is not None]
            seconds = math.fsum(r["e2e_s"] or 0.0 for r in done)
            tokens = sum(r["output_tokens"] or 0 for r in done)
            result: EngineFigures = {
                "answered": len(done),
                "sent": len(rows),
                "task_score": sum(1 for r in scored if r["extra"]["score"]) / len(scored)
                if scored
                else None,
                "tok_s": tokens / seconds if seconds > 0 else None,
            }
            failed = [r for r in rows if not r["ok"]]
            if failed:
                errors.append(f"{name}: {failed[0]['error']}")
            if name != reference and reference in answers:
                pairs = [(a, b) for a, b in zip(answers[reference], rows) if a["ok"] and b["ok"]]
                comparisons = [compare(_answer(a), _answer(b)) for a, b in pairs]
                margins = [c.divergence_margin for c in comparisons if c.divergence_margin is not None]
                result["parity"] = parity_figures(
                    summarise(comparisons), percentile(margins, 50) if margins else None
                )
            results[name] = result
        names = list(results)
        chart = ChartSpec(
            title=f"Quality beside sameness (reference: {reference})",
            x_title="engine",
            y_title="share of prompts",
            series=[
                common.engine_series("task score", results, _task_score, _share),
                Series(
                    f"identical to {reference}",
                    names,
                    [
                        1.0
                        if n == reference
                        else (results[n].get("parity") or {}).get("exact_match_rate")
                        for n in names
                    ],
                    [
                        "reference"
                        if n == reference
                        else units.percent(
                            (results[n].get("parity") or {}).get("exact_match_rate"), False
                        )
                        for n in names
                    ],
                ),
            ],
        )
        numbers = []
        for name, result in results.items():
            parity = result.get("parity")
            if parity:
                numbers.append(
                    BigNumber(
                        f"{name} · identical answers",
                        units.percent(parity["exact_match_rate"], False),
                        parity["exact_match_rate"],
                    )
                )
                median = parity["divergence_median"]
                numbers.append(
                    BigNumber(
                        f"{name} · first divergence",
                        "none" if median is None else f"token {median:g}",
                        median,
                        help="median token position where the answers first differ",
                    )
                )
            numbers.append(
                BigNumber(
                    f"{name} · task score",
                    units.percent(result["task_score"], False),
                    result["task_score"],
                )
            )
            numbers.append(BigNumber(f"{name} · speed", units.rate(result["tok_s"]), result["tok_s"]))
        finding = "; ".join(
            f"{n}: score {units.percent(r['task_score'], False)}, {units.rate(r['tok_s'])}"
            for n, r in results.items()
        )
        return StepOutcome(
            numbers, chart, finding + ".", {"engines": results, "reference": reference}, errors
        )

    def conclude(
        self, steps: Sequence[StepBlock], engines: Sequence[str], options: SameModelOptions
    ) -> Conclusion:
        data = engine_data(steps, "answers")
        results = data.get("engines") or {}
        reference = data.get("reference") or (engines[0] if engines else "")
        lines: list[str] = []
        verdicts: dict[str, ParityVerdict] = {}
        for name, result in results.items():
            parity = result.get("parity")
            if not parity:
                continue
            verdict: ParityKind
            match, median = parity.get("exact_match_rate"), parity.get("divergence_median")
            diff, topk, margin = (
                parity.get("logprob_diff_mean"),
                parity.get("topk_rate"),
                parity.get("margin_median"),
            )
            if not parity.get("compared"):
                verdict, line = "not_compared", f"{name}: no prompt answered by both engines."
            elif match == 1.0:
                verdict = "identical"
                line = f"{name} gave {reference}'s answer to every one of {parity['compared']} prompts."
            elif diff is not None and diff < CLOSE_LOGPROBS and (topk or 0) >= 0.9:
                verdict = "rounding"
                line = (
                    f"{name} matched {reference} on {units.percent(match, False)} of "
                    f"{parity['compared']} prompts; the rest "
                    f"part at token {median:g} (median), and before that the two engines' log-probabilities differ "
                    f"by {diff:.3f} on average, with {reference}'s token in {name}'s top 5 "
                    f"{units.percent(topk, False)} of "
                    "the time: the same model, with near-ties flipped by rounding"
                    + (
                        f" (at the divergence {name} preferred its own token by {margin:.2f} nats, median)."
                        if margin is not None
                        else "."
                    )
                )
            else:
                verdict = "different"
                line = (
                    f"{name} matched {reference} on {units.percent(match, False)} of "
                    f"{parity['compared']} prompts and parts "
                    f"early (token {median:g}, median) with log-probabilities "
                    f"{'not comparable' if diff is None else f'{diff:.2f} apart'}: more than rounding. Check the chat "
                    "template, the tokenizer and the quantisation."
                )
            scores = (
                f" Task score: {units.percent(results.get(reference, {}).get('task_score'), False)} for "
                f"{reference}, "
                f"{units.percent(result.get('task_score'), False)} for {name}."
            )
            lines.append(line + scores)
            verdicts[name] = ParityVerdict(
                verdict=verdict,
                exact_match_rate=match,
                divergence_median=median,
                logprob_diff_mean=diff,
                topk_rate=topk,
                task_score=result.get("task_score"),
                tok_s=result.get("tok_s"),
            )
        kinds = {v.verdict for v in verdicts.values()}
        if kinds == {"identical"}:
            headline = "Same model, same answers: every engine answered exactly as the reference."
        elif "different" in kinds:
            headline = (
                "Not the same answers, and not just rounding: an engine behaves like a different model."
            )
        elif kinds:
            headline = "Same model, different answers: rounding flips near-ties, and the answers part from there."
        else:
            headline = "No two engines answered the same prompts, so nothing could be compared."
        return Conclusion(headline, lines, verdicts)
