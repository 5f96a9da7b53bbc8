"""Stored benchmark runs, as the planner needs them: achieved decode tokens/s per engine,
with the batch and context they ran at, to set against the roofline bound.

Reads `Run.summary["engines"][name]`; runs or engines without an output throughput
(older runs, failed runs, other kinds) are skipped rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from db.models import Run
from db.session import session_scope


@dataclass(frozen=True)
class StoredThroughput:
    run_id: int
    run_name: str
    engine: str
    model: str | None
    created_at: datetime | None
    output_tok_s: float
    batch: int
    context: int | None

    @property
    def label(self) -> str:
        name = self.run_name or f"run {self.run_id}"
        return f"#{self.run_id} {name} · {self.engine} · {self.output_tok_s:,.1f} tok/s (batch ≈ {self.batch})"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _batch(block: dict[str, Any], config: dict[str, Any]) -> int:
    """The concurrency the engine actually ran at: time-weighted mean, else max, else configured."""
    for value in (block.get("concurrency_mean"), block.get("concurrency_max"), config.get("concurrency")):
        number = _number(value)
        if number and number > 0:
            return max(1, round(number))
    return 1


def _context(block: dict[str, Any]) -> int | None:
    """Mean tokens in context during decode: the prompt plus half the answer."""
    completed = _number(block.get("completed"))
    prompt = _number(block.get("input_tokens"))
    output = _number(block.get("output_tokens"))
    if not completed or prompt is None or output is None:
        return None
    return max(1, round((prompt + output / 2) / completed))


def stored_throughputs(limit: int = 200) -> list[StoredThroughput]:
    """Newest first: one entry per engine of each stored run that recorded output tokens/s."""
    entries: list[StoredThroughput] = []
    with session_scope() as session:
        runs = session.scalars(
            select(Run).where(Run.archived.is_(False)).order_by(Run.created_at.desc()).limit(limit)
        ).all()
        for run in runs:
            summary = run.summary if isinstance(run.summary, dict) else {}
            engines = summary.get("engines")
            if not isinstance(engines, dict):
                continue
            config = run.config if isinstance(run.config, dict) else {}
            for engine, block in engines.items():
                if not isinstance(block, dict):
                    continue
                rate = _number(block.get("output_throughput_tok_s"))
                if not rate or rate <= 0:
                    continue
                entries.append(
                    StoredThroughput(
                        run_id=run.id,
                        run_name=run.name or "",
                        engine=str(engine),
                        model=run.model,
                        created_at=run.created_at,
                        output_tok_s=rate,
                        batch=_batch(block, config),
                        context=_context(block),
                    )
                )
    return entries
