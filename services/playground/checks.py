"""Checks before a send (engine count, prompt, sampling ranges) and of JSON answers
against a user's schema."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema

from services.core.errors import ValidationError
from services.playground.records import MAX_ENGINES, MIN_ENGINES, SchemaCheck, SendRequest
from services.team import limits


def parse_schema(text: str) -> dict[str, Any]:
    """A JSON schema typed by the user, checked to be a schema."""
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValidationError(
            f"The schema is not JSON: {error.msg} at line {error.lineno}, column {error.colno}."
        ) from None
    if not isinstance(schema, dict):
        raise ValidationError("The schema must be a JSON object.")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as error:
        raise ValidationError(f"Not a valid JSON schema: {error.message}") from None
    return schema


def check_answer(text: str, schema: dict[str, Any]) -> SchemaCheck:
    """Validate an answer against the schema: valid, or where and why not."""
    stripped = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", stripped, flags=re.DOTALL)
    if fenced:
        stripped = fenced.group(1)
    try:
        instance = json.loads(stripped)
    except json.JSONDecodeError as error:
        return SchemaCheck(
            False, "$", f"not JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        )
    validator = jsonschema.validators.validator_for(schema)(schema)
    violation = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if violation is None:
        return SchemaCheck(True)
    return SchemaCheck(False, violation.json_path, violation.message)


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
