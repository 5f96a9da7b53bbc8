"""What a parity run shows: the per-engine summary, the per-prompt table, the divergence
of two answers, read back from the stored rows (pages, the CLI, reports and the demo)."""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import cast

from sqlalchemy import select

from db.models import RequestResult, Run
from db.session import session_scope
from services.bench.results import Distribution
from services.core import units
from services.core.errors import NotFoundError
from services.core.json_types import JsonOut
from services.core.measure import describe
from services.core.safe_text import spreadsheet_rows
from services.engines import get_adapter
from services.parity.metrics import Answer, PromptComparison, TokenChoice, compare, summarise
from services.parity.records import AnswerExtra, ParityConfig
from services.parity.summary import ParityComparison, ParityEngine, ParitySummary
from services.parity.tasks import Task
from services.runstate.lifecycle import ACTIVE_STATUSES, RunKind
from services.runstate.run_kinds import notice_gone_workers
from services.runstate.stored import StoredEngine, engine_named, stored_engines

#: Tokens of each answer shown after the shared prefix at the divergence.
CONTINUATION_TOKENS = 6
PREFIX_CHARS = 80


@dataclass(frozen=True)
class StoredAnswer:
    label: str
    index: int
    ok: bool
    answer: Answer
    score: bool | None
    e2e_s: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    error_class: str | None
    error: str | None


def _answer(extra: AnswerExtra) -> Answer:
    tokens = extra.get("tokens")
    parsed = None
    if isinstance(tokens, list):
        parsed = tuple(
            TokenChoice(
                str(t[0]),
                t[1] if len(t) > 1 and isinstance(t[1], (int, float)) else None,
                dict(t[2]) if len(t) > 2 and isinstance(t[2], dict) else {},
            )
            for t in tokens
            if isinstance(t, list) and t
        )
    return Answer(text=str(extra.get("text") or ""), tokens=parsed)


def load_answers(run_id: int) -> dict[str, dict[int, StoredAnswer]]:
    """label -> prompt index -> the stored answer."""
    with session_scope() as session:
        rows = session.execute(
            select(
                RequestResult.engine_name,
                RequestResult.index,
                RequestResult.ok,
                RequestResult.e2e_s,
                RequestResult.input_tokens,
                RequestResult.output_tokens,
                RequestResult.finish_reason,
                RequestResult.error_class,
                RequestResult.error,
                RequestResult.extra,
            )
            .where(RequestResult.run_id == run_id)
            .order_by(RequestResult.id)
        ).all()
    out: dict[str, dict[int, StoredAnswer]] = {}
    for label, index, ok, e2e, prompt, completion, finish, error_class, error, stored in rows:
        # The one boundary: RequestResult.extra as services/parity/runner.py wrote it.
        extra = cast(AnswerExtra, stored or {})
        out.setdefault(label, {})[index] = StoredAnswer(
            label=label,
            index=index,
            ok=bool(ok),
            answer=_answer(extra),
            score=extra.get("score"),
            e2e_s=e2e,
            prompt_tokens=prompt,
            completion_tokens=completion,
            finish_reason=finish,
            error_class=error_class,
            error=error,
        )
    return out


def _kind_label(run_engines: Sequence[StoredEngine], label: str) -> str:
    engine = engine_named(run_engines, label)
    return get_adapter(engine.get("kind")).label if engine is not None else label


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def engine_summary(
    label: str,
    answers: dict[int, StoredAnswer],
    reference: dict[int, StoredAnswer] | None,
    kind_label: str,
    prompts: int,
) -> ParityEngine:
    """One engine's block of the run summary (`reference` None: this engine is the reference)."""
    done = [a for a in answers.values() if a.ok]
    failed = [a for a in answers.values() if not a.ok]
    scored = [a for a in done if a.score is not None]
    timed = [a for a in done if a.e2e_s and a.completion_tokens is not None]
    seconds = math.fsum(a.e2e_s or 0.0 for a in timed)
    tokens = sum(a.completion_tokens or 0 for a in timed)
    with_logprobs = any(a.answer.has_logprobs for a in done)
    with_top = any(a.answer.has_top_logprobs for a in done)
    parity = None
    if reference is not None:
        comparisons = [
            compare(reference[i].answer, a.answer)
            for i, a in sorted(answers.items())
            if a.ok and i in reference and reference[i].ok
        ]
        parity = ParityComparison.pooled(summarise(comparisons), prompts - len(comparisons))
    return ParityEngine(
        prompts=prompts,
        sent=len(answers),
        completed=len(done),
        failed=len(failed),
        task_score=_share(sum(1 for a in scored if a.score), len(scored)),
        scored=len(scored),
        output_throughput_tok_s=tokens / seconds if seconds > 0 else None,
        completion_tokens=tokens,
        prompt_tokens=sum(a.prompt_tokens or 0 for a in done),
        e2e_s=Distribution(describe([a.e2e_s for a in done if a.e2e_s is not None])),
        logprobs="reported" if with_logprobs else f"not reported by {kind_label}",
        top_logprobs="reported" if with_top else f"not reported by {kind_label}",
        errors=dict(Counter(a.error_class or "error" for a in failed)),
        first_errors=list(dict.fromkeys(a.error or "" for a in failed))[:3],
        is_reference=reference is None,
        parity=parity,
    )


def headline(summary: ParitySummary) -> str:
    """One line for the Runs list and the demo: each engine's match rate, divergence and score."""
    reference = summary.reference
    parts = []
    for label, block in summary.engines.items():
        if block.is_reference:
            parts.append(f"{label} (reference): score {units.percent(block.task_score, signed=False)}")
            continue
        parity = summary.comparison(label)
        if not parity.compared:
            parts.append(f"{label}: nothing compared with {reference} yet")
            continue
        median = parity.divergence_median
        where = (
            "no divergence"
            if not parity.diverged or median is None
            else f"median divergence at token {median:g}"
        )
        parts.append(
            f"{label}: {units.percent(parity.exact_match_rate, signed=False)} exact match vs "
            f"{reference}, {where}, "
            f"score {units.percent(block.task_score, signed=False)}"
        )
    return "; ".join(parts)


def _config(run: Run) -> ParityConfig:
    # The one boundary: Run.config as services/parity/runner.py stored it.
    return cast(ParityConfig, dict(run.config or {}))


def build_summary(run_id: int) -> ParitySummary:
    """The run's summary from its stored rows (the worker writes it at the end; an interrupted
    run's summary is rebuilt from what it stored)."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"No parity run #{run_id}.")
        config, snapshots = _config(run), stored_engines(run.engines)
    answers = load_answers(run_id)
    reference = config.get("reference")
    prompts = len(config.get("tasks") or [])
    engines: dict[str, ParityEngine] = {}
    for engine in config.get("engines") or []:
        label = engine["label"]
        engines[label] = engine_summary(
            label,
            answers.get(label, {}),
            None if label == reference else answers.get(reference or "", {}),
            _kind_label(snapshots, label),
            prompts,
        )
    summary = ParitySummary(reference=reference, engines=engines)
    return replace(summary, conclusion_headline=headline(summary))


# ---------------------------------------------------------------- the page's records


@dataclass(frozen=True)
class Divergence:
    """Where two answers part: the shared text before, and each side's next tokens."""

    position: int
    unit: str
    shared_tail: str
    reference_next: str
    other_next: str


@dataclass(frozen=True)
class PromptRow:
    index: int
    task: Task
    answers: dict[str, StoredAnswer]
    comparisons: dict[str, PromptComparison]

    @property
    def diverged(self) -> bool:
        return any(c.diverged for c in self.comparisons.values())


@dataclass(frozen=True)
class ParityView:
    run_id: int
    name: str
    status: str
    progress: float
    reference: str
    labels: list[str]
    source: str
    max_tokens: int
    seed: int
    summary: ParitySummary
    rows: list[PromptRow]
    error: str | None
    created_at: datetime | None
    engines: list[StoredEngine] = field(default_factory=list)

    @property
    def live(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def others(self) -> list[str]:
        return [label for label in self.labels if label != self.reference]


def divergence(reference: Answer, other: Answer, comparison: PromptComparison) -> Divergence | None:
    """The divergence of two answers in words a person reads; None when they agree."""
    position = comparison.first_divergence
    if position is None:
        return None
    if comparison.unit == "token" and reference.tokens is not None and other.tokens is not None:
        ref_units = [t.token for t in reference.tokens]
        other_units = [t.token for t in other.tokens]
        join = "".join
    else:
        ref_units, other_units = reference.text.split(), other.text.split()
        join = " ".join
    shared = join(ref_units[:position])
    return Divergence(
        position=position,
        unit=comparison.unit,
        shared_tail=("…" + shared[-PREFIX_CHARS:]) if len(shared) > PREFIX_CHARS else shared,
        reference_next=join(ref_units[position : position + CONTINUATION_TOKENS]),
        other_next=join(other_units[position : position + CONTINUATION_TOKENS]),
    )


def parity_view(run_id: int) -> ParityView:
    """A parity run as the page and the CLI show it (live: the summary is computed from the rows so far)."""
    notice_gone_workers(RunKind.PARITY)  # a killed worker's run shows interrupted
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != RunKind.PARITY:
            raise NotFoundError(f"No parity run #{run_id}.")
        config, stored_summary = _config(run), ParitySummary.from_json(run.summary)
        status, progress, name, error, created = (
            run.status,
            run.progress,
            run.name,
            run.error,
            run.created_at,
        )
        snapshots = stored_engines(run.engines)
    summary = stored_summary if stored_summary.engines else build_summary(run_id)
    answers = load_answers(run_id)
    reference = config.get("reference", "")
    labels = [e["label"] for e in config.get("engines") or []]
    rows = []
    for index, data in enumerate(config.get("tasks") or []):
        task = Task.from_dict(data)
        here = {label: answers[label][index] for label in labels if index in answers.get(label, {})}
        comparisons = {}
        ref = here.get(reference)
        if ref is not None and ref.ok:
            for label, answer in here.items():
                if label != reference and answer.ok:
                    comparisons[label] = compare(ref.answer, answer.answer)
        rows.append(PromptRow(index=index, task=task, answers=here, comparisons=comparisons))
    return ParityView(
        run_id=run_id,
        name=name,
        status=status,
        progress=progress or 0.0,
        reference=reference,
        labels=labels,
        source=str(config.get("source", "")),
        max_tokens=int(config.get("max_tokens", 0)),
        seed=int(config.get("seed", 0)),
        summary=summary,
        rows=rows,
        error=error,
        created_at=created,
        engines=snapshots,
    )


@dataclass(frozen=True)
class ParityListItem:
    run_id: int
    name: str
    status: str
    created_at: datetime

    @property
    def label(self) -> str:
        return f"#{self.run_id} {self.name} · {self.created_at:%Y-%m-%d %H:%M} · {self.status}"


def list_parity_runs(limit: int = 30) -> list[ParityListItem]:
    notice_gone_workers(RunKind.PARITY)
    with session_scope() as session:
        rows = session.execute(
            select(Run.id, Run.name, Run.status, Run.created_at)
            .where(Run.kind == RunKind.PARITY)
            .order_by(Run.id.desc())
            .limit(limit)
        ).all()
    return [ParityListItem(*row) for row in rows]


def to_json(view: ParityView) -> JsonOut:
    """The CLI's --json: the summary, and per prompt each engine's answer and comparison."""
    return {
        "run_id": view.run_id,
        "status": view.status,
        "reference": view.reference,
        "engines": view.labels,
        "source": view.source,
        "max_tokens": view.max_tokens,
        "seed": view.seed,
        "summary": view.summary.to_json(),
        "prompts": [
            {
                "index": row.index,
                "id": row.task.id,
                "category": row.task.category,
                "prompt": row.task.prompt_text,
                "expected": row.task.expected,
                "answers": {
                    label: {
                        "ok": a.ok,
                        "text": a.answer.text,
                        "score": a.score,
                        "error": a.error,
                        "completion_tokens": a.completion_tokens,
                        "e2e_s": a.e2e_s,
                    }
                    for label, a in row.answers.items()
                },
                "comparisons": {label: c.to_dict() for label, c in row.comparisons.items()},
            }
            for row in view.rows
        ],
    }


# ---------------------------------------------------------------- tables (plain rows)


def _fixed(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def summary_rows(view: ParityView) -> list[JsonOut]:
    """One row per engine: quality next to speed, and the parity figures against the reference."""
    rows = []
    for label, block in view.summary.engines.items():
        parity = view.summary.comparison(label)
        reference = block.is_reference
        median = parity.divergence_median
        rows.append(
            {
                "Engine": label + (" (reference)" if reference else ""),
                "Task score": units.percent(block.task_score, signed=False),
                "Output tok/s": _fixed(block.output_throughput_tok_s, 1),
                "Exact match": "—"
                if reference
                else units.percent(parity.exact_match_rate, signed=False),
                "Diverged": "—" if reference else f"{parity.diverged} of {parity.compared}",
                "First divergence p50": "—" if reference or median is None else f"token {median:g}",
                "Token agreement": "—"
                if reference
                else units.percent(parity.token_agreement_mean, signed=False),
                "Mean |Δ logprob|": "—" if reference else _fixed(parity.logprob_diff_mean),
                "Ref. token in top-k": "—"
                if reference
                else units.percent(parity.topk_rate, signed=False),
                "Log-probabilities": block.logprobs,
                "Answered": f"{block.completed} of {block.prompts}",
                "Errors": "; ".join(block.first_errors),
            }
        )
    # Engines' labels and errors are their text: the table's "Download as CSV" must not run it.
    return spreadsheet_rows(rows)


def prompt_rows(view: ParityView, *, only_diverged: bool = False) -> list[JsonOut]:
    """One row per prompt: its answers' scores and, per compared engine, where it diverged."""
    rows = []
    for row in view.rows:
        if only_diverged and not row.diverged:
            continue
        record: JsonOut = {
            "#": row.index + 1,
            "Task": row.task.id,
            "Prompt": row.task.prompt_text[:120],
        }
        for label in view.labels:
            answer = row.answers.get(label)
            if answer is None:
                record[f"{label} score"] = "…"
            elif not answer.ok:
                record[f"{label} score"] = f"error: {answer.error_class}"
            else:
                record[f"{label} score"] = {True: "pass", False: "fail", None: "—"}[answer.score]
        for label in view.others:
            comparison = row.comparisons.get(label)
            if comparison is None:
                record[f"{label} divergence"] = "not compared"
            elif comparison.first_divergence is None:
                record[f"{label} divergence"] = "identical" if comparison.exact_match else "same text"
            else:
                record[f"{label} divergence"] = f"{comparison.unit} {comparison.first_divergence}"
        rows.append(record)
    return spreadsheet_rows(rows)


_SHARED_STYLE = (
    "white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.6; font-family: monospace"
)
_NEXT_STYLES = (
    "background: rgba(255, 75, 75, 0.22); border-radius: 3px",
    "background: rgba(33, 195, 84, 0.22); border-radius: 3px",
)


def divergence_html(point: Divergence, reference_label: str, other_label: str) -> str:
    """The divergence as one HTML block for st.html: the shared text, then each engine's next
    tokens on its own line. Every piece of the answers and names goes through html.escape."""
    shared = html.escape(point.shared_tail, quote=True)
    lines = []
    for label, text, style in (
        (reference_label, point.reference_next, _NEXT_STYLES[0]),
        (other_label, point.other_next, _NEXT_STYLES[1]),
    ):
        lines.append(
            f"<div><strong>{html.escape(label, quote=True)}</strong>: {shared}"
            f'<span style="{style}">{html.escape(text, quote=True) or "(the answer ends)"}</span></div>'
        )
    return f'<div class="parity-divergence" style="{_SHARED_STYLE}">{"".join(lines)}</div>'
