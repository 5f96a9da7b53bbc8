"""A run's findings: what its requests showed that its figures must not hide (issue 55).

Built once per engine (per sweep step) from the stored request records when the summary is
written (services/bench/jobs/summarize.py) and kept in that block under `findings`; every reader
takes them back through `Finding.from_json` (`BenchSummary.findings`). A run stored before
findings has none, read as none found.

- `usage_vs_stream` (fail): the usage's completion_tokens disagreed with the stream beyond the
  tolerance of services/core/counts.py; the figures used the stream's count.
- `impossible_counter` (fail): a counter no answer can have (below 0, cached above the prompt,
  completion above the max_tokens asked), refused and never published.
- `ignored_max_tokens` (fail): the stream itself ran past the max_tokens asked: the engine broke
  the workload (its counter may well be right).
- `identical_answers` (warn): the same answer for distinct prompts, as a response cache in front
  of a broken model gives, or a model that ignores its prompt.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from services.bench.blocks import FindingJson
from services.bench.results import EngineResults
from services.bench.stats import RequestRecord
from services.core import stored_json
from services.core.counts import RULES, Refusal

#: The key of an engine block (and of a sweep row) that holds its findings.
SUMMARY_KEY = "findings"

USAGE_VS_STREAM = "usage_vs_stream"
IMPOSSIBLE_COUNTER = "impossible_counter"
IGNORED_MAX_TOKENS = "ignored_max_tokens"
IDENTICAL_ANSWERS = "identical_answers"
CHECKS = (USAGE_VS_STREAM, IMPOSSIBLE_COUNTER, IGNORED_MAX_TOKENS, IDENTICAL_ANSWERS)

FAIL = "fail"
WARN = "warn"

#: Identical answers are judged over at least this many distinct prompts, on answers of at
#: least `IDENTICAL_MIN_TOKENS` tokens (one- or two-token answers agree by nature), and said
#: when one answer was given to at least `IDENTICAL_SHARE` of the prompts.
IDENTICAL_MIN_PROMPTS = 5
IDENTICAL_MIN_TOKENS = 4
IDENTICAL_SHARE = 0.9

#: What the figures use in place of a refused counter.
_INSTEAD = {
    "completion_tokens": "the stream's count is used",
    "prompt_tokens": "its prompt tokens are not counted",
    "cached_tokens": "its cached tokens are not counted",
    "reasoning_tokens": "the reasoning tokens are the stream's",
}


@dataclass(frozen=True)
class Finding:
    """One finding of one engine (one sweep step) of a run."""

    #: One of `CHECKS`.
    check: str
    #: `FAIL` (the figures broke the workload or its counters) or `WARN`.
    severity: str
    engine: str
    #: One line, plain words: the engine, the field and both counts.
    message: str
    step: int | None = None
    #: The counter concerned ("completion_tokens", "cached_tokens", ...), None for answers.
    field: str | None = None
    #: The requests it concerns (for identical answers: the distinct prompts that got the
    #: most common answer), of the ones judged.
    requests: int = 0
    of: int = 0
    #: The engine's count over those requests, and the stream's (for cached tokens: the
    #: prompt tokens it exceeded); None where it has none.
    reported: int | None = None
    stream: int | None = None

    @property
    def failing(self) -> bool:
        return self.severity == FAIL

    def to_json(self) -> FindingJson:
        return FindingJson(
            check=self.check,
            severity=self.severity,
            engine=self.engine,
            step=self.step,
            field=self.field,
            requests=self.requests,
            of=self.of,
            reported=self.reported,
            stream=self.stream,
            message=self.message,
        )

    @classmethod
    def from_json(cls, data: Any) -> Finding | None:
        """A stored finding back; None for anything that is not one (never raises)."""
        data = stored_json.mapping(data)
        check, severity = data.get("check"), data.get("severity")
        engine, message = stored_json.text(data.get("engine")), stored_json.text(data.get("message"))
        if check not in CHECKS or severity not in (FAIL, WARN) or engine is None or message is None:
            return None
        return cls(
            check=str(check),
            severity=str(severity),
            engine=engine,
            message=message,
            step=_whole(data.get("step")),
            field=stored_json.nonempty_text(data.get("field")),
            requests=_whole(data.get("requests")) or 0,
            of=_whole(data.get("of")) or 0,
            reported=_whole(data.get("reported")),
            stream=_whole(data.get("stream")),
        )


def stored_findings(block: EngineResults) -> list[Finding]:
    """The findings an engine block (or a sweep row) stored; none for a block from before them."""
    return [found for item in block.findings or () if (found := Finding.from_json(item)) is not None]


def findings_of(engine: str, records: Sequence[RequestRecord], step: int | None = None) -> list[Finding]:
    """The findings of one engine's (one step's) records: the measured, completed requests."""
    done = [r for r in records if r.ok and not r.warmup]
    found = [*_count_findings(engine, done, step), *_identical_answers(engine, done, step)]
    return found


def _count_findings(engine: str, done: Sequence[RequestRecord], step: int | None) -> list[Finding]:
    groups: dict[tuple[str, str], list[tuple[RequestRecord, Refusal]]] = {}
    for record in done:
        for refusal in record.refused:
            groups.setdefault((refusal.field, refusal.rule), []).append((record, refusal))
    found = []
    judged = len(done)
    for (field, rule), pairs in groups.items():
        reported = sum(refusal.reported for _, refusal in pairs)
        count = len(pairs)
        if field == "completion_tokens":
            streamed = sum(_stream_tokens(record) for record, _ in pairs)
        elif field == "cached_tokens" and rule == "above_prompt":
            streamed = sum(refusal.against or 0 for _, refusal in pairs)
        else:
            streamed = None
        if field == "completion_tokens" and rule in ("above_stream", "below_stream"):
            found.append(
                Finding(
                    check=USAGE_VS_STREAM,
                    severity=FAIL,
                    engine=engine,
                    step=step,
                    field=field,
                    requests=count,
                    of=judged,
                    reported=reported,
                    stream=streamed,
                    message=(
                        f"{engine}: the usage's completion_tokens disagree with the stream in "
                        f"{count} of {judged} requests: usage {reported:,} tokens against the "
                        f"stream's {streamed:,}; the stream's count is used"
                    ),
                )
            )
            continue
        example = pairs[0][1]
        against = (
            f" ({example.against:,})"
            if example.against is not None and rule in ("above_max_tokens", "above_prompt")
            else ""
        )
        what = f"{field} {RULES.get(rule, rule)}{against}"
        counted = (
            f" ({streamed:,} in all)" if streamed is not None and field == "completion_tokens" else ""
        )
        found.append(
            Finding(
                check=IMPOSSIBLE_COUNTER,
                severity=FAIL,
                engine=engine,
                step=step,
                field=field,
                requests=count,
                of=judged,
                reported=reported,
                stream=streamed,
                message=(
                    f"{engine}: impossible counter refused, never published: {what} in {count} "
                    f"of {judged} requests (e.g. {example.reported:,}); "
                    f"{_INSTEAD.get(field, 'it is not counted')}{counted}"
                ),
            )
        )
    over = [record for record in done if record.over_max_tokens]
    if over:
        streamed = sum(_stream_tokens(record) for record in over)
        found.append(
            Finding(
                check=IGNORED_MAX_TOKENS,
                severity=FAIL,
                engine=engine,
                step=step,
                field="max_tokens",
                requests=len(over),
                of=judged,
                reported=None,
                stream=streamed,
                message=(
                    f"{engine} ignored max_tokens: {len(over)} of {judged} answers streamed more "
                    f"tokens than asked ({streamed:,} tokens in all)"
                ),
            )
        )
    return found


def _identical_answers(engine: str, done: Sequence[RequestRecord], step: int | None) -> list[Finding]:
    # Bounded: one digest per request (services/client), one dict entry per distinct prompt.
    answers: dict[str, str] = {}
    for record in done:
        if (
            record.answer_digest
            and record.prompt_digest
            and (_stream_tokens(record) >= IDENTICAL_MIN_TOKENS)
        ):
            answers.setdefault(record.prompt_digest, record.answer_digest)
    prompts = len(answers)
    if prompts < IDENTICAL_MIN_PROMPTS:
        return []
    _, same = Counter(answers.values()).most_common(1)[0]
    if same < 2 or same < IDENTICAL_SHARE * prompts:
        return []
    return [
        Finding(
            check=IDENTICAL_ANSWERS,
            severity=WARN,
            engine=engine,
            step=step,
            requests=same,
            of=prompts,
            message=(
                f"{engine} gave the same answer to {same} of {prompts} distinct prompts: a "
                "response cache, or a model that ignores its prompt; its figures are not the "
                "model's work on these prompts"
            ),
        )
    ]


def _stream_tokens(record: RequestRecord) -> int:
    """The stream's count of a request (its output tokens when the stream was not counted)."""
    if record.stream_tokens is not None:
        return record.stream_tokens
    return record.output_tokens or 0


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
