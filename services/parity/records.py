"""What a parity run stores and reads back beside its summary: its Run.config and each answer's
RequestResult row (services/parity/runner.py writes them, services/parity/results.py reads them).

Both are our own JSON, stored in the database: a run of an older version may lack a key, so the
readers take each one with `.get` and a default.
"""

from __future__ import annotations

from typing import TypedDict

from services.parity.tasks import TaskJson


class EngineChoice(TypedDict):
    """One engine of the run: its label in the run ("name#2" for a repeat) and registered name."""

    label: str
    name: str


class ParityConfig(TypedDict, total=False):
    """Run.config of a parity run."""

    engines: list[EngineChoice]
    reference: str
    #: Where the prompts came from, in words.
    source: str
    tasks: list[TaskJson]
    max_tokens: int
    seed: int
    top_logprobs: int
    temperature: float


class AnswerExtra(TypedDict, total=False):
    """RequestResult.extra of a parity answer."""

    task_id: str
    text: str
    #: [token, logprob, {alternative: logprob}] per token; None where the engine gave none.
    tokens: list[list[object]] | None
    #: Whether the answer passed its task's check (None: not scored).
    score: bool | None


class AnswerRow(TypedDict, total=False):
    """One answer as a RequestResult row's columns (the row's run, engine and index aside)."""

    ok: bool
    e2e_s: float | None
    input_tokens: int | None
    output_tokens: int | None
    finish_reason: str | None
    error_class: str | None
    error: str | None
    extra: AnswerExtra
