"""Checks before a send (engine count, prompt, sampling ranges) and of JSON answers
against a user's schema."""

from __future__ import annotations

from services.core import json_schema
from services.core.errors import ValidationError
from services.core.json_schema import SchemaCheck
from services.core.json_types import ForeignJson
from services.playground.records import MAX_ENGINES, MIN_ENGINES, SendRequest
from services.team import limits


def parse_schema(text: str) -> ForeignJson:
    """A JSON schema typed by the user, checked to be one answers can be checked against
    without reaching outside it (services/core/json_schema.py)."""
    return json_schema.parse_schema(text)


def check_answer(text: str, schema: ForeignJson) -> SchemaCheck:
    """An answer against the schema: valid, where and why not, or why it could not be checked."""
    return json_schema.check_text(text, schema)


def validate(request: SendRequest) -> None:
    count = len(request.engines)
    if count < MIN_ENGINES or count > MAX_ENGINES:
        raise ValidationError(f"Choose {MIN_ENGINES} to {MAX_ENGINES} engines (got {count}).")
    names = [c.engine for c in request.engines]
    if len(set(names)) != len(names):
        raise ValidationError("Each engine can appear once.")
    if not request.prompt.strip():
        raise ValidationError("Type a prompt first.")
    limits.check_prompt(request.prompt, request.system)
    p = request.params
    if p.temperature is not None and not 0 <= p.temperature <= 2:
        raise ValidationError("Temperature must be between 0 and 2.")
    if p.top_p is not None and not 0 < p.top_p <= 1:
        raise ValidationError("top_p must be above 0 and at most 1.")
    if p.max_tokens is not None and p.max_tokens < 1:
        raise ValidationError("Max tokens must be at least 1.")
    if not 1 <= p.n <= 8:
        raise ValidationError("n (parallel samples) must be between 1 and 8.")
