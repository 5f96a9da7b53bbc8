"""The `file` workload's JSONL prompt files (`{"prompt": ...}` or `{"messages": [...]}`,
optional `max_tokens`), read with one clear message for the first bad line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.core.errors import ValidationError


@dataclass(frozen=True)
class PromptFileEntry:
    prompt: str | None
    messages: tuple[dict[str, Any], ...] | None
    max_tokens: int | None


def load_prompt_file(path: str) -> list[PromptFileEntry]:
    """Read a JSONL prompt file; one clear ValidationError for the first bad line."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ValidationError(f"Prompt file {path!r} does not exist.")
    entries: list[PromptFileEntry] = []
    with file.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValidationError(f"{file.name} line {number}: not JSON ({error.msg}).") from None
            if not isinstance(row, dict):
                raise ValidationError(f"{file.name} line {number}: expected a JSON object.")
            prompt = row.get("prompt")
            messages = row.get("messages")
            if not isinstance(prompt, str) and not (isinstance(messages, list) and messages):
                raise ValidationError(
                    f'{file.name} line {number}: needs a "prompt" string or a "messages" list.'
                )
            if messages is not None and not all(isinstance(m, dict) and "role" in m for m in messages):
                raise ValidationError(
                    f"{file.name} line {number}: each message needs a role and content."
                )
            max_tokens = row.get("max_tokens", row.get("output_len"))
            if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
                raise ValidationError(
                    f"{file.name} line {number}: max_tokens must be a positive integer."
                )
            entries.append(
                PromptFileEntry(
                    prompt=prompt if isinstance(prompt, str) else None,
                    messages=tuple(messages) if isinstance(messages, list) else None,
                    max_tokens=max_tokens,
                )
            )
    if not entries:
        raise ValidationError(f"Prompt file {file.name} holds no prompts.")
    return entries
