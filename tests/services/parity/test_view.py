"""The Parity page's service side without a browser or engines: the form turned into engines and
prompts, the run's header, and one prompt's answers compared (built from records, no database)."""

from __future__ import annotations

import pytest

from services.core.errors import ValidationError
from services.engines.endpoints import EngineRecord
from services.parity import view as page
from services.parity.metrics import Answer, compare
from services.parity.results import ParityView, PromptRow, StoredAnswer
from services.parity.summary import ParitySummary
from services.parity.tasks import Task


def _form(**changes: object) -> page.ParityForm:
    fields: dict = {
        "engines": ["b", "c"],
        "reference": "a",
        "compare_with_itself": False,
        "source": page.TASK_SET_SOURCE,
        "count": 3,
        "max_tokens": 8,
        "seed": 0,
        "top_logprobs": 0,
    }
    return page.ParityForm(**(fields | changes))


def _engine(name: str, kind: str) -> EngineRecord:
    return EngineRecord(
        id=0,
        name=name,
        base_url="http://127.0.0.1:9",
        kind=kind,
        model=None,
        api_key_env=None,
        metrics_url=None,
        local_id=None,
    )


def test_the_default_pair_is_vllm_and_another_kind_vllm_the_reference() -> None:
    """The local engines sort as two llama.cpp before vLLM: the form used to start with the
    two llama.cpp ones, leaving out the engine a parity check is usually made against."""
    local = [
        _engine("llamacpp-1slot", "llamacpp"),
        _engine("llamacpp-4slot", "llamacpp"),
        _engine("vllm-cpu", "vllm"),
    ]
    assert page.default_engines(local) == ["vllm-cpu", "llamacpp-1slot"]
    same_kind = [_engine("a", "llamacpp"), _engine("b", "llamacpp"), _engine("c", "sglang")]
    # No vLLM: SGLang, then another kind (issue 47: the same pick on every comparing page).
    assert page.default_engines(same_kind) == ["c", "a"]
    assert page.default_engines([_engine("v1", "vllm"), _engine("v2", "vllm")]) == ["v1", "v2"]
    assert page.default_engines([_engine("solo", "vllm")]) == ["solo"]
    assert page.default_engines([]) == []


def test_with_sglang_registered_the_pair_is_vllm_and_sglang() -> None:
    """vLLM and SGLang serve the same converted HF weights here: the natural parity pair, even
    when other kinds sort first."""
    local = [
        _engine("llamacpp-1slot", "llamacpp"),
        _engine("llamacpp-4slot", "llamacpp"),
        _engine("router", "router"),
        _engine("sglang-cpu", "sglang"),
        _engine("vllm-cpu", "vllm"),
    ]
    assert page.default_engines(local) == ["vllm-cpu", "sglang-cpu"]


def test_the_reference_answers_first_and_its_second_self_right_after() -> None:
    assert page.engine_order(_form()) == ["a", "b", "c"]
    assert page.engine_order(_form(engines=["b", "a"], compare_with_itself=True)) == ["b", "a", "a"]


def test_the_task_set_and_a_file_are_described_for_the_run() -> None:
    prompts, label = page.prompts_of(_form())
    assert len(prompts) == 3 and label.startswith("task set v1") and "3 prompts" in label
    upload = ("mine.jsonl", b'{"prompt": "Say hi", "expected": "hi"}\n')
    prompts, label = page.prompts_of(_form(source=page.FILE_SOURCE, upload=upload))
    assert [t.prompt_text for t in prompts] == ["Say hi"] and label == "file mine.jsonl"


def test_a_file_source_without_a_file_or_an_unknown_source_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="Choose a JSONL prompt file"):
        page.prompts_of(_form(source=page.FILE_SOURCE))
    with pytest.raises(ValidationError, match="Unknown prompt source"):
        page.prompts_of(_form(source="clipboard"))


def _stored(label: str, text: str | None, error: str | None = None) -> StoredAnswer:
    return StoredAnswer(
        label=label,
        index=0,
        ok=error is None,
        answer=Answer(text=text or ""),
        score=None,
        e2e_s=0.1,
        prompt_tokens=3,
        completion_tokens=4,
        finish_reason="stop",
        error_class="HTTPError" if error else None,
        error=error,
    )


def _view(reference_text: str | None, other_text: str | None, error: str | None = None) -> ParityView:
    task = Task(id="t1", category="c", messages=({"role": "user", "content": "Count *up*"},), expected=3)
    answers = {}
    if reference_text is not None:
        answers["ref"] = _stored("ref", reference_text)
    if other_text is not None or error:
        answers["other"] = _stored("other", other_text, error)
    comparisons = {}
    if "ref" in answers and "other" in answers and answers["other"].ok:
        comparisons["other"] = compare(answers["ref"].answer, answers["other"].answer)
    row = PromptRow(index=0, task=task, answers=answers, comparisons=comparisons)
    return ParityView(
        run_id=4,
        name="ref vs *other*",
        status="finished",
        progress=1.0,
        reference="ref",
        labels=["ref", "other"],
        source="task set v1",
        max_tokens=8,
        seed=0,
        summary=ParitySummary(conclusion_headline="other: 0% exact match"),
        rows=[row],
        error=None,
        created_at=None,
    )


def test_the_header_escapes_the_run_name_and_links_to_runs() -> None:
    header = page.run_header(_view("one two", "one two"))
    assert header.title == r"Run #4: ref vs \*other\*"
    assert (
        "[open in Runs](/runs?run=4)" in header.caption and header.progress_text == "100% of the answers"
    )
    assert header.headline and header.headline.endswith("0% exact match")


def test_prompt_choices_follow_the_only_diverged_toggle() -> None:
    assert page.prompt_choices(_view("one two", "one two"), only_diverged=True) == {}
    assert page.prompt_choices(_view("one two", "one three"), only_diverged=True) == {0: "1. Count *up*"}


def test_a_prompt_detail_for_each_state() -> None:
    same = page.prompt_detail(_view("one two", "one two"), 0, "other")
    assert same.state == "same" and same.message == "Identical answers." and same.diff_html
    assert same.expected and same.expected.startswith("Expected (contains): `") and "3" in same.expected
    diverged = page.prompt_detail(_view("one two three", "one four"), 0, "other")
    assert diverged.state == "diverged" and diverged.message.startswith("First divergence at word 1")
    assert diverged.divergence_html and "parity-divergence" in diverged.divergence_html
    assert page.prompt_detail(_view("one", None), 0, "other").state == "unanswered"
    failed = page.prompt_detail(_view("one", None, error="boom *x*"), 0, "other")
    assert failed.state == "not_compared" and failed.message.endswith(r"boom \*x\*")
    assert failed.diff_html is None
    with pytest.raises(ValidationError, match="no prompt 2"):
        page.prompt_detail(_view("one", "one"), 1, "other")
