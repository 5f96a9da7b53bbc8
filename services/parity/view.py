"""What the Parity page asks of services beyond the stored view: the new-run form turned into a
started run, the run's header, and one prompt's answers compared side by side. No Streamlit
here. Text meant for markdown escapes every untrusted piece (engine names, answers, errors)
with services.core.safe_text; HTML goes through html.escape (views.divergence_html, diff_html)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from services.core.errors import ValidationError
from services.core.safe_text import code_span, md_line, md_text
from services.engines.endpoints import default_picks, list_engines
from services.parity import runner, tasks
from services.parity.charts import divergence_figure, quality_speed_figure
from services.parity.results import (
    ParityListItem,
    ParityView,
    PromptRow,
    divergence,
    divergence_html,
    list_parity_runs,
    parity_view,
    prompt_rows,
    summary_rows,
)
from services.parity.runner import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TOP_LOGPROBS,
    MAX_TOP_LOGPROBS,
    cancel_parity,
)
from services.parity.tasks import TASK_SET_SIZE
from services.playground.text import diff_html
from services.team.owners import may_control_run

#: What the page reads: this module's own, and what it passes on from the feature's others.
__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TOP_LOGPROBS",
    "FILE_SOURCE",
    "MAX_TOP_LOGPROBS",
    "SOURCES",
    "TASK_SET_SIZE",
    "TASK_SET_SOURCE",
    "ParityForm",
    "ParityListItem",
    "PromptDetail",
    "RunHeader",
    "cancel_parity",
    "default_engines",
    "divergence_figure",
    "engine_order",
    "list_engines",
    "list_parity_runs",
    "may_control_run",
    "parity_view",
    "prompt_choices",
    "prompt_detail",
    "prompt_rows",
    "prompts_of",
    "quality_speed_figure",
    "run_header",
    "start_from_form",
    "summary_rows",
]

if TYPE_CHECKING:  # as in runner: access is only a type here
    from services.engines.endpoints import EngineRecord
    from services.team.access import Viewer

TASK_SET_SOURCE = "Task set (checkable answers)"
FILE_SOURCE = "JSONL file"
SOURCES = (TASK_SET_SOURCE, FILE_SOURCE)


@dataclass(frozen=True)
class ParityForm:
    """The new-run form as the user left it (`upload`: the chosen file's name and bytes)."""

    engines: list[str]
    reference: str
    compare_with_itself: bool
    source: str
    count: int
    max_tokens: int
    seed: int
    top_logprobs: int
    upload: tuple[str, bytes] | None = None


def default_engines(engines: list[EngineRecord]) -> list[str]:
    """The engines the form starts with, the first one its reference: the pick every comparing
    page starts with (services.engines.endpoints.default_picks: vLLM, then SGLang, which serves
    the same HF weights, so any difference is the engine's, then the others)."""
    return default_picks(engines, 2)


def engine_order(form: ParityForm) -> list[str]:
    """The engines in the order they answer: the reference first unless chosen elsewhere, and
    right after it its second self when it is compared with itself."""
    names = list(form.engines)
    if form.reference not in names:
        names.insert(0, form.reference)
    if form.compare_with_itself:
        names.insert(names.index(form.reference) + 1, form.reference)
    return names


def prompts_of(form: ParityForm) -> tuple[list[tasks.Task], str]:
    """The prompt set the form names, and how the run describes it."""
    if form.source == FILE_SOURCE:
        if form.upload is None:
            raise ValidationError("Choose a JSONL prompt file, or pick the task set.")
        name, content = form.upload
        lines = content.decode("utf-8", "replace").splitlines()
        return tasks.load_prompt_lines(lines, name), f"file {name}"
    if form.source != TASK_SET_SOURCE:
        raise ValidationError(f"Unknown prompt source {form.source!r}; known: {', '.join(SOURCES)}.")
    count = int(form.count)
    label = f"task set {tasks.TASK_SET_VERSION} (seed {tasks.DEFAULT_SEED}, {count} prompts)"
    return tasks.task_set(count), label


def start_from_form(form: ParityForm, viewer: Viewer) -> int:
    """Start the run the form describes in a worker; its id. Bad input is a ValidationError."""
    prompt_set, label = prompts_of(form)
    return runner.start_parity(
        engine_order(form),
        reference=form.reference,
        tasks=prompt_set,
        source=label,
        max_tokens=int(form.max_tokens),
        seed=int(form.seed),
        top_logprobs=int(form.top_logprobs),
        viewer=viewer,
    )


@dataclass(frozen=True)
class RunHeader:
    """The run's title, its settings line and its one-line conclusion, as markdown."""

    title: str
    caption: str
    progress_text: str
    headline: str | None


def run_header(view: ParityView) -> RunHeader:
    headline = view.summary.conclusion_headline
    return RunHeader(
        title=f"Run #{view.run_id}: {md_line(view.name)}",
        caption=(
            f"{md_line(view.status)} · {md_line(view.source)} · reference {code_span(view.reference)} · "
            f"max tokens {view.max_tokens} · seed {view.seed} · temperature 0 · "
            f"[open in Runs](/runs?run={view.run_id})"
        ),
        progress_text=f"{view.progress * 100:.0f}% of the answers",
        headline=md_text(headline) if headline else None,
    )


def prompt_choices(view: ParityView, *, only_diverged: bool) -> dict[int, str]:
    """Prompt index -> its label in the picker; empty when there is nothing to compare."""
    if not view.others:
        return {}
    return {
        row.index: f"{row.index + 1}. {row.task.prompt_text[:80]}"
        for row in view.rows
        if row.diverged or not only_diverged
    }


@dataclass(frozen=True)
class PromptDetail:
    """One prompt's answers from the reference and one other engine, ready to draw.

    state: "unanswered" (one has not answered), "not_compared" (an answer failed: `message`),
    "same" (`message` says how alike), "diverged" (`message` says where, `divergence_html`
    shows it); `diff_html` and `diff_caption` whenever both answered and were compared."""

    prompt_text: str
    expected: str | None
    state: Literal["unanswered", "not_compared", "same", "diverged"]
    message: str
    divergence_html: str | None = None
    diff_html: str | None = None
    diff_caption: str | None = None


def _row(view: ParityView, index: int) -> PromptRow:
    for row in view.rows:
        if row.index == index:
            return row
    raise ValidationError(f"Run #{view.run_id} has no prompt {index + 1}.")


def prompt_detail(view: ParityView, index: int, other: str) -> PromptDetail:
    """Prompt `index` as the reference and `other` answered it, and where they part."""
    row = _row(view, index)
    expected = None
    if row.task.expected is not None:
        expected = f"Expected ({md_line(row.task.check)}): {code_span(str(row.task.expected))}"
    unanswered = PromptDetail(
        prompt_text=row.task.prompt_text,
        expected=expected,
        state="unanswered",
        message="Not answered yet.",
    )
    reference_answer, other_answer = row.answers.get(view.reference), row.answers.get(other)
    comparison = row.comparisons.get(other)
    if reference_answer is None or other_answer is None:
        return unanswered
    if comparison is None:
        why = reference_answer.error or other_answer.error or "an answer failed"
        return replace(unanswered, state="not_compared", message=md_text(f"Not compared: {why}"))
    words = diff_html(reference_answer.answer.text, other_answer.answer.text)
    caption = (
        f"Whole answers, word by word: struck through only in {md_line(view.reference)}, "
        f"underlined only in {md_line(other)}."
    )
    point = divergence(reference_answer.answer, other_answer.answer, comparison)
    if point is None:
        message = "Identical answers." if comparison.exact_match else "The same text."
        return replace(unanswered, state="same", message=message, diff_html=words, diff_caption=caption)
    margin = comparison.divergence_margin
    near = "" if margin is None else f" ({md_line(other)} preferred its token by {margin:.3f} nats)"
    return replace(
        unanswered,
        state="diverged",
        message=f"First divergence at {point.unit} {point.position}{near}:",
        divergence_html=divergence_html(point, view.reference, other),
        diff_html=words,
        diff_caption=caption,
    )
