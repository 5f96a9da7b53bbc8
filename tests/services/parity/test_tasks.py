"""The shipped task set (seeded, versioned, every category early) and the scoring of answers."""

from __future__ import annotations

import pytest

from services.core.errors import ValidationError
from services.parity.tasks import TASK_SET_SIZE, Task, load_prompt_lines, score, task_set


def test_the_task_set_is_seeded_versioned_and_mixes_categories() -> None:
    tasks = task_set()
    assert len(tasks) == TASK_SET_SIZE and len({t.id for t in tasks}) == TASK_SET_SIZE
    assert task_set() == tasks
    assert task_set(seed=8) != tasks
    assert {t.category for t in tasks[:5]} == {
        "arithmetic",
        "unit conversion",
        "copying and formatting",
        "short facts",
        "JSON shapes",
    }
    assert all(t.scored for t in tasks)
    with pytest.raises(ValidationError, match="v1"):
        task_set(version="v0")
    with pytest.raises(ValidationError, match="1 to 60"):
        task_set(count=0)


@pytest.mark.parametrize(
    ("check", "expected", "answer", "passes"),
    [
        ("number", "5", "2 + 3 = 5", True),
        ("number", "5", "2 + 3", False),
        ("number", "1200", "1,200 metres", True),
        ("contains", "Paris", "The capital is paris.", True),
        ("contains", "carbon dioxide", "Carbon\n dioxide", True),
        ("exact", "apple river", "Apple river", False),
        ("exact", "APPLE", "APPLE", True),
        ("json", {"name": "Ada", "age": 30}, '```json\n{"name": "Ada", "age": 30}\n```', True),
        ("json", {"name": "Ada", "age": 30}, '{"name": "Ada", "age": "30"}', False),
        ("json", {"name": "Ada", "age": 30}, "no json {here", False),
    ],
)
def test_scoring(check: str, expected: object, answer: str, passes: bool) -> None:
    task = Task("t", "c", ({"role": "user", "content": "q"},), expected, check)  # type: ignore[arg-type]
    assert score(task, answer) is passes


def test_a_task_without_an_expected_answer_is_not_scored() -> None:
    assert score(Task("t", "c", ({"role": "user", "content": "q"},)), "anything") is None


def test_prompt_files_read_prompts_messages_and_expected_answers() -> None:
    tasks = load_prompt_lines(
        [
            '{"prompt": "2+2?", "expected": 4, "check": "number"}',
            "",
            '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}',
        ]
    )
    assert [t.id for t in tasks] == ["line-1", "line-3"]
    assert tasks[0].scored and not tasks[1].scored and tasks[1].max_tokens == 5


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "holds no prompts"),
        (["", "  "], "holds no prompts"),
        (["not json"], "line 1: not JSON"),
        (['{"prompt": ""}'], "line 1: needs a non-empty"),
        (['{"prompt": "x", "check": "regex"}'], "check must be one of"),
        (['{"prompt": "x", "max_tokens": 0}'], "max_tokens must be a positive integer"),
    ],
)
def test_bad_prompt_files_say_which_line(lines: list[str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        load_prompt_lines(lines, "prompts.jsonl")
