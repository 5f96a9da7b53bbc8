"""Prompts with checkable answers: the project's own task set, and users' JSONL prompt files.

The task set is written for this project and generated from a seed, so a version and a
seed name the same prompts everywhere: arithmetic, unit conversion, copying and formatting,
short facts and JSON shapes, interleaved so that any first N prompts cover every category.
Each task says how its answer is checked:

| check | passes when the answer |
|---|---|
| `number` | contains the expected number as a number of its own ("2 + 3 = 5" passes for 5) |
| `contains` | contains the expected text, case and surrounding space ignored |
| `exact` | contains the expected text exactly (copying) |
| `json` | holds a JSON object (the first `{...}`, code fences allowed) with the expected keys and values |

A prompt file is JSONL, one object a line: `{"prompt": ...}` or `{"messages": [...]}`, an optional
`max_tokens`, and optionally `expected` with `check` (default `contains`); prompts without
`expected` are compared between engines but not scored.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from services.core.errors import ValidationError
from services.core.json_types import ForeignJson

TASK_SET_VERSION = "v1"
DEFAULT_SEED = 7
TASK_SET_SIZE = 60
Check = Literal["number", "contains", "exact", "json"]
CHECKS: tuple[str, ...] = ("number", "contains", "exact", "json")
MAX_FILE_PROMPTS = 2000


class TaskJson(TypedDict, total=False):
    """A task as a parity run's config stores it (`Task.to_dict`)."""

    id: str
    category: str
    #: OpenAI chat messages (a prompt file's are the user's own).
    messages: list[ForeignJson]
    expected: object
    check: Check
    max_tokens: int | None


@dataclass(frozen=True)
class Task:
    """One prompt, and how to score its answer (`expected` None: not scored)."""

    id: str
    category: str
    messages: tuple[ForeignJson, ...]
    expected: Any = None
    check: Check = "contains"
    max_tokens: int | None = None

    @property
    def prompt_text(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.messages)

    @property
    def scored(self) -> bool:
        return self.expected is not None

    def to_dict(self) -> TaskJson:
        return {
            "id": self.id,
            "category": self.category,
            "messages": list(self.messages),
            "expected": self.expected,
            "check": self.check,
            "max_tokens": self.max_tokens,
        }

    @classmethod
    def from_dict(cls, data: TaskJson) -> Task:
        return cls(
            id=str(data["id"]),
            category=str(data.get("category", "")),
            messages=tuple(data["messages"]),
            expected=data.get("expected"),
            check=data.get("check", "contains"),
            max_tokens=data.get("max_tokens"),
        )


def _user(text: str) -> tuple[ForeignJson, ...]:
    return ({"role": "user", "content": text},)


_NUMBER_ONLY = "Answer with the number only."

_FACTS: tuple[tuple[str, str, Check], ...] = (
    ("What is the capital of France? Answer with one word.", "Paris", "contains"),
    ("What is the capital of Japan? Answer with one word.", "Tokyo", "contains"),
    ("What is the capital of Italy? Answer with one word.", "Rome", "contains"),
    ("What is the capital of Germany? Answer with one word.", "Berlin", "contains"),
    ("How many days are in a week? " + _NUMBER_ONLY, "7", "number"),
    ("How many legs does a spider have? " + _NUMBER_ONLY, "8", "number"),
    ("How many minutes are in an hour? " + _NUMBER_ONLY, "60", "number"),
    ("What colour is the sky on a clear day? Answer with one word.", "blue", "contains"),
    ("What is the chemical formula of water?", "H2O", "contains"),
    ("Which planet is known as the Red Planet? Answer with one word.", "Mars", "contains"),
    ("How many continents are there on Earth? " + _NUMBER_ONLY, "7", "number"),
    ("What is the largest ocean on Earth? Answer with one word.", "Pacific", "contains"),
    ("What gas do plants take in from the air for photosynthesis?", "carbon dioxide", "contains"),
    ("What is the freezing point of water in degrees Celsius? " + _NUMBER_ONLY, "0", "number"),
    ("How many sides does a triangle have? " + _NUMBER_ONLY, "3", "number"),
)
_UNITS: tuple[tuple[str, str, int], ...] = (
    ("metres", "centimetres", 100),
    ("kilometres", "metres", 1000),
    ("kilograms", "grams", 1000),
    ("hours", "minutes", 60),
    ("minutes", "seconds", 60),
    ("days", "hours", 24),
    ("litres", "millilitres", 1000),
)
_WORDS = (
    "apple",
    "river",
    "stone",
    "cloud",
    "garden",
    "silver",
    "window",
    "forest",
    "candle",
    "harbour",
    "pencil",
    "meadow",
    "rocket",
    "violet",
    "lantern",
    "marble",
)
_NAMES = ("Ada", "Bruno", "Chen", "Dara", "Elif", "Femi", "Greta", "Hugo", "Ines", "Jun")


def task_set(
    count: int = TASK_SET_SIZE, seed: int = DEFAULT_SEED, version: str = TASK_SET_VERSION
) -> list[Task]:
    """The first `count` prompts of the project's task set, generated from `seed`."""
    if version != TASK_SET_VERSION:
        raise ValidationError(
            f"Unknown task set version {version!r}; this build ships {TASK_SET_VERSION}."
        )
    if not 1 <= count <= TASK_SET_SIZE:
        raise ValidationError(
            f"The task set has {TASK_SET_SIZE} prompts; ask for 1 to {TASK_SET_SIZE} (got {count})."
        )
    rng = random.Random(f"parity-{version}-{seed}")
    arithmetic: list[Task] = []
    for i in range(15):
        a, b = rng.randint(2, 60), rng.randint(2, 40)
        op = ("+", "-", "*")[i % 3]
        value = a + b if op == "+" else a - b if op == "-" else a * b
        shown = {"+": "+", "-": "-", "*": "times"}[op]
        arithmetic.append(
            Task(
                f"arith-{i + 1}",
                "arithmetic",
                _user(f"What is {a} {shown} {b}? {_NUMBER_ONLY}"),
                str(value),
                "number",
            )
        )
    units: list[Task] = []
    for i in range(10):
        big, small, factor = _UNITS[i % len(_UNITS)]
        amount = rng.randint(2, 9)
        units.append(
            Task(
                f"unit-{i + 1}",
                "unit conversion",
                _user(f"How many {small} are in {amount} {big}? {_NUMBER_ONLY}"),
                str(amount * factor),
                "number",
            )
        )
    copying: list[Task] = []
    for i in range(10):
        picked = rng.sample(_WORDS, 3)
        if i % 2 == 0:
            phrase = " ".join(picked)
            copying.append(
                Task(
                    f"copy-{i + 1}",
                    "copying and formatting",
                    _user(f"Repeat exactly, with nothing else: {phrase}"),
                    phrase,
                    "exact",
                )
            )
        else:
            copying.append(
                Task(
                    f"format-{i + 1}",
                    "copying and formatting",
                    _user(f"Write the word {picked[0]} in capital letters."),
                    picked[0].upper(),
                    "exact",
                )
            )
    facts = [
        Task(f"fact-{i + 1}", "short facts", _user(q), expected, check)
        for i, (q, expected, check) in enumerate(_FACTS)
    ]
    shapes: list[Task] = []
    for i in range(10):
        name, age = rng.choice(_NAMES), rng.randint(18, 80)
        shapes.append(
            Task(
                f"json-{i + 1}",
                "JSON shapes",
                _user(
                    f'Reply with only a JSON object with the key "name" set to "{name}" and the key "age" '
                    f"set to the number {age}."
                ),
                {"name": name, "age": age},
                "json",
            )
        )
    ordered = _interleave([arithmetic, units, copying, facts, shapes])
    return ordered[:count]


def _interleave(groups: list[list[Task]]) -> list[Task]:
    out: list[Task] = []
    for i in range(max(len(g) for g in groups)):
        out.extend(g[i] for g in groups if i < len(g))
    return out


def load_prompt_lines(lines: Iterable[str], name: str = "the prompt file") -> list[Task]:
    """Tasks from a JSONL prompt file; one clear ValidationError for the first bad line."""
    tasks: list[Task] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{name} line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValidationError(f"{where}: not JSON ({error.msg}).") from None
        if not isinstance(row, dict):
            raise ValidationError(f"{where}: expected a JSON object.")
        prompt, messages = row.get("prompt"), row.get("messages")
        if isinstance(prompt, str) and prompt.strip():
            chat = _user(prompt)
        elif (
            isinstance(messages, list)
            and messages
            and all(
                isinstance(m, dict)
                and isinstance(m.get("role"), str)
                and isinstance(m.get("content"), str)
                for m in messages
            )
        ):
            chat = tuple(messages)
        else:
            raise ValidationError(
                f'{where}: needs a non-empty "prompt" string or a "messages" list of '
                '{"role", "content"} objects.'
            )
        max_tokens = row.get("max_tokens")
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise ValidationError(f"{where}: max_tokens must be a positive integer.")
        check = row.get("check", "json" if isinstance(row.get("expected"), dict) else "contains")
        if check not in CHECKS:
            raise ValidationError(f"{where}: check must be one of {', '.join(CHECKS)} (got {check!r}).")
        tasks.append(
            Task(
                id=str(row.get("id") or f"line-{number}"),
                category=str(row.get("category") or "file"),
                messages=chat,
                expected=row.get("expected"),
                check=check,
                max_tokens=max_tokens,
            )
        )
        if len(tasks) > MAX_FILE_PROMPTS:
            raise ValidationError(
                f"{name} holds more than {MAX_FILE_PROMPTS:,} prompts; a parity run takes at most that many."
            )
    if not tasks:
        raise ValidationError(f"{name} holds no prompts.")
    return tasks


# ---------------------------------------------------------------- scoring

_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")


def _numbers(text: str) -> list[float]:
    found = []
    for match in _NUMBER.findall(text):
        try:
            found.append(float(match.replace(",", "")))
        except ValueError:
            continue
    return found


def _json_object(text: str) -> Any:
    start = text.find("{")
    while start >= 0:
        depth = 0
        for end in range(start, len(text)):
            if text[end] == "{":
                depth += 1
            elif text[end] == "}":
                depth -= 1
                if depth == 0:
                    try:
                        return json.loads(text[start : end + 1])
                    except ValueError:
                        break
        start = text.find("{", start + 1)
    return None


def score(task: Task, answer: str) -> bool | None:
    """Whether the answer passes the task's check; None for a task without an expected answer."""
    if task.expected is None:
        return None
    text = answer or ""
    if task.check == "number":
        try:
            expected = float(str(task.expected).replace(",", ""))
        except ValueError:
            return False
        return any(abs(n - expected) < 1e-9 for n in _numbers(text))
    if task.check == "exact":
        return str(task.expected) in text
    if task.check == "json":
        value = _json_object(text)
        if not isinstance(value, dict) or not isinstance(task.expected, dict):
            return False
        return all(value.get(key) == wanted for key, wanted in task.expected.items())
    return str(task.expected).strip().casefold() in " ".join(text.split()).casefold()
