"""The `file` workload's JSONL prompt files (`{"prompt": ...}` or `{"messages": [...]}`,
optional `max_tokens`), read with one clear message for the first bad line, and the files a
page's user uploads: checked in memory before a byte is written, kept readable by the app's
user only (0600), and deleted UPLOAD_KEEP_S after their last upload."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from services.core.errors import ValidationError
from services.core.json_types import ForeignJson


@dataclass(frozen=True)
class PromptFileEntry:
    prompt: str | None
    messages: tuple[ForeignJson, ...] | None
    max_tokens: int | None


#: An uploaded prompt file is deleted this long after its last upload (a run started from it
#: reads it when it starts; running it again later needs the file uploaded again).
UPLOAD_KEEP_S = 7 * 24 * 3600


def load_prompt_file(path: str) -> list[PromptFileEntry]:
    """Read a JSONL prompt file; one clear ValidationError for the first bad line."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ValidationError(f"Prompt file {path!r} does not exist.")
    with file.open(encoding="utf-8") as handle:
        return parse_prompt_lines(handle, file.name)


def parse_prompt_lines(lines: Iterable[str], name: str) -> list[PromptFileEntry]:
    """A prompt file's lines as entries; one clear ValidationError for the first bad line."""
    entries: list[PromptFileEntry] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValidationError(f"{name} line {number}: not JSON ({error.msg}).") from None
        except RecursionError:
            raise ValidationError(f"{name} line {number}: nested too deeply.") from None
        if not isinstance(row, dict):
            raise ValidationError(f"{name} line {number}: expected a JSON object.")
        prompt = row.get("prompt")
        messages = row.get("messages")
        if not isinstance(prompt, str) and not (isinstance(messages, list) and messages):
            raise ValidationError(f'{name} line {number}: needs a "prompt" string or a "messages" list.')
        if messages is not None and not all(isinstance(m, dict) and "role" in m for m in messages):
            raise ValidationError(f"{name} line {number}: each message needs a role and content.")
        max_tokens = row.get("max_tokens", row.get("output_len"))
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise ValidationError(f"{name} line {number}: max_tokens must be a positive integer.")
        entries.append(
            PromptFileEntry(
                prompt=prompt if isinstance(prompt, str) else None,
                messages=tuple(messages) if isinstance(messages, list) else None,
                max_tokens=max_tokens,
            )
        )
    if not entries:
        raise ValidationError(f"Prompt file {name} holds no prompts.")
    return entries


def store_upload(folder: Path, name: str, content: bytes) -> Path:
    """An uploaded prompt file, checked in memory, then written 0600 into `folder` (0700), named
    by its content so a second upload of it is the same file; older uploads past UPLOAD_KEEP_S
    are deleted first."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError(f"{name[:100]!r} is not UTF-8 text.") from None
    parse_prompt_lines(text.splitlines(), name[:100])
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    expire_uploads(folder)
    stem = (
        "".join(c if c.isalnum() or c in "-_" else "_" for c in name.rsplit(".", 1)[0])[:60] or "prompts"
    )
    path = folder / f"{stem}-{hashlib.sha256(content).hexdigest()[:12]}.jsonl"
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".upload-")  # mode 0600
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.replace(temporary, path)  # also refreshes the time a second upload is kept from
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path


def expire_uploads(folder: Path, now: float | None = None) -> list[Path]:
    """Delete the uploads (and a crashed write's leftovers) last written over UPLOAD_KEEP_S ago."""
    cutoff = (time.time() if now is None else now) - UPLOAD_KEEP_S
    gone = []
    for path in folder.glob("*"):
        with contextlib.suppress(OSError):  # another session deleted it first
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                gone.append(path)
    return gone
