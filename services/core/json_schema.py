"""The one way to check JSON against a user's schema (the Playground, `ask --schema`, benchmark
workloads and their workers' per-response check, the structured-output demo).

Everything that reads a schema or checks an answer against it runs in a child process under
BUDGET, time and memory (services/core/sandbox.py), never in the caller's process: the `regex`
package expands nested counts as it compiles (`((((a{40}){40}){40}){40})`, 30 characters, took a
server from 208 MB to 985 MB for good), and forty `$defs` levels, each an `allOf` of two
references to the next, pass every static check and take 2^40 steps on one answer. A schema
that overruns when entered is refused in one line; a check that overruns comes back as not
checked, "over its budget", and its answer is kept as any other. The caller's own part is
bounded by the text's size: parsing JSON (at most MAX_SCHEMA_BYTES for a schema), `unfenced`.

No schema reaches anything outside itself. Its validator resolves `$ref` in a registry whose
retrieve always refuses (jsonschema's default fetched http(s) URLs, and urlopen reads file://),
and `check_schema`, run when a schema is entered, refuses with one line: a `$ref` that is not a
fragment of the schema itself (`#...`), anywhere in it, data keywords included (an engine's
schema compiler may resolve every `$ref` it finds), an `$id` below the top that moves the base,
an unknown `$schema`, a schema over MAX_SCHEMA_BYTES or MAX_SCHEMA_DEPTH levels, a pattern that
does not compile (within the budget), and a `$ref` that leads back to itself without going into
the answer (a RecursionError on every check otherwise).

Its regexes (`pattern`, `patternProperties`, which `additionalProperties` and
`unevaluatedProperties` match too) run on the `regex` package under a deadline: one check matches
for at most CHECK_DEADLINE_S (the package counts the process's CPU time), then says it could not
be checked (a slow pattern), inside the check's budget. jsonschema has no hook for its regex
engine; the three modules of it that match call `re.search` and nothing else of `re`, so
they get `_BoundedRe` instead, which outside a check is `re.search` itself and has nothing else
(a new use of `re` in a jsonschema upgrade fails loudly: tests/services/core/test_json_schema.py).
"""

from __future__ import annotations

import contextvars
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import jsonschema
import jsonschema._keywords
import jsonschema._legacy_keywords
import jsonschema._utils
import regex
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

from services.core import sandbox
from services.core.errors import ValidationError
from services.core.json_types import ForeignJson, JsonOut
from services.core.sandbox import Budget, OverBudget, SandboxError

MAX_SCHEMA_BYTES = 64 * 1024
MAX_SCHEMA_DEPTH = 32
MAX_PATTERN_CHARS = 1000
CHECK_DEADLINE_S = 1.0
#: What checking a schema, or an answer against it, may take: wall-clock seconds and memory in
#: the checking process (the patterns' CHECK_DEADLINE_S is spent inside it).
BUDGET = Budget(seconds=3.0, memory_mb=256)
#: Keys whose value is data (an instance), not subschemas: their objects are only searched for
#: references, never read as schemas (a "pattern" in an example is no pattern).
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})
#: Keys whose value maps names to subschemas: a name there is anything, "default" or "enum" too.
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
_ANCHOR_KEYS = ("$anchor", "$dynamicAnchor")

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "json_schema_deadline", default=None
)


class _BoundedRe:
    """What jsonschema's matching modules see as `re`: `search`, under the check's deadline."""

    @staticmethod
    def search(pattern: str, string: str) -> Any:
        deadline = _deadline.get()
        if deadline is None:
            return re.search(pattern, string)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("regular expression time-out")
        # concurrent: the match lets go of the GIL (a benchmark worker's event loop runs on).
        return regex.search(pattern, string, timeout=remaining, concurrent=True)


for _module in (jsonschema._keywords, jsonschema._legacy_keywords, jsonschema._utils):
    _module.re = _BoundedRe


def _refuse(uri: str) -> Resource[Any]:
    raise LookupError(f"{uri} is outside the schema")


#: Every validator's registry: the metaschemas (jsonschema adds them, from its own files) and
#: the schema itself; anything else is refused, never fetched or read.
# referencing's attrs field is `_retrieve`, its argument `retrieve`: mypy's attrs plugin misses that.
NO_RETRIEVAL: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]  # an attrs field mypy does not see


@dataclass(frozen=True)
class SchemaCheck:
    """One answer against a schema: valid, invalid (where and why), or not checked (why)."""

    #: None: it could not be checked (too slow, too deep, a reference it cannot follow).
    valid: bool | None
    #: Where it fails ("$.items[0].price"), and why, in words.
    path: str = ""
    message: str = ""

    def to_json(self) -> JsonOut:
        return {"valid": self.valid, "path": self.path, "message": self.message}

    @classmethod
    def from_json(cls, value: Any) -> SchemaCheck | None:
        if not isinstance(value, dict) or value.get("valid") not in (True, False, None):
            return None
        return cls(value["valid"], str(value.get("path") or ""), str(value.get("message") or ""))


def parse_schema(text: str) -> ForeignJson:
    """A JSON schema typed or uploaded by a user, checked (`check_schema`)."""
    if len(text.encode("utf-8", "replace")) > MAX_SCHEMA_BYTES:
        raise ValidationError(f"The schema is larger than {MAX_SCHEMA_BYTES // 1024} KiB.")
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValidationError(
            f"The schema is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}."
        ) from None
    except RecursionError:
        raise ValidationError(f"The schema nests deeper than {MAX_SCHEMA_DEPTH} levels.") from None
    return check_schema(schema)


def check_schema(schema: Any) -> ForeignJson:
    """The schema if it is one this app checks answers against, else one line why not. The
    check runs in the checking process, within BUDGET."""
    if not isinstance(schema, dict):
        raise ValidationError("The schema must be a JSON object.")
    try:
        size = len(json.dumps(schema))
    except RecursionError:
        raise ValidationError(f"The schema nests deeper than {MAX_SCHEMA_DEPTH} levels.") from None
    except (TypeError, ValueError) as error:
        raise ValidationError(f"The schema is not JSON: {error}"[:300]) from None
    if size > MAX_SCHEMA_BYTES:
        raise ValidationError(f"The schema is larger than {MAX_SCHEMA_BYTES // 1024} KiB.")
    try:
        problem = sandbox.call(f"{__name__}.schema_problem", schema, budget=BUDGET)
    except OverBudget:
        raise ValidationError(
            f"The schema could not be checked within {BUDGET.words()}{_costly(schema)}"
        ) from None
    except SandboxError as error:
        raise ValidationError(f"The schema could not be checked: {error}"[:300]) from None
    if problem is not None:
        raise ValidationError(str(problem))
    return schema


def _costly(schema: ForeignJson) -> str:
    """The end of the message of a check over budget: what is the likely cause (the walk is
    bounded by the schema's size and depth)."""
    try:
        patterns = [p for node in _walk(schema) for p in _patterns(node)]
    except ValidationError:
        patterns = []
    if not patterns:
        return "."
    which = (
        f"its pattern {patterns[0][:100]!r}"
        if len(patterns) == 1
        else f"one of its {len(patterns)} patterns"
    )
    return f": {which} could not be compiled within them (nested counts such as (a{{40}}){{40}} expand as they compile)."


def schema_problem(schema: ForeignJson) -> str | None:
    """In the checking process: why the schema is refused, or None (`check_schema`)."""
    try:
        _check_here(schema)
    except ValidationError as error:
        return str(error)
    return None


def _check_here(schema: ForeignJson) -> None:
    nodes = _walk(schema)
    cls = jsonschema.validators.validator_for(schema, default=None)
    if "$schema" not in schema:
        cls = jsonschema.Draft202012Validator
    elif cls is None:
        raise ValidationError(
            f"Unknown $schema {str(schema.get('$schema'))[:100]!r}: use a JSON Schema draft's "
            "address (draft-04 to 2020-12) or leave it out."
        )
    anchors: dict[str, ForeignJson] = {}
    for node in nodes:
        _check_node(node, node is schema, anchors)
    _refuse_ref_cycles(schema, nodes, anchors)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise ValidationError(f"Not a valid JSON schema: {error.message}") from None


def _walk(schema: ForeignJson) -> list[ForeignJson]:
    """Every subschema of the schema; refuses one nested too deep, and a reference outside it
    anywhere, data included. A value is read by where it sits: a schema (the top, a keyword's
    value), a map of names to schemas (`properties`: its names are names, "default" too), or
    data (`enum`, `const`, `default`, `examples`: searched for references only)."""
    nodes: list[ForeignJson] = []
    stack: list[tuple[Any, int, str]] = [(schema, 1, "schema")]
    while stack:
        value, depth, kind = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            raise ValidationError(f"The schema nests deeper than {MAX_SCHEMA_DEPTH} levels.")
        if isinstance(value, list):
            stack.extend((v, depth + 1, kind) for v in value)
            continue
        if not isinstance(value, dict):
            continue
        _refuse_outside_refs(value)
        if kind == "schema":
            nodes.append(value)
            stack.extend((v, depth + 1, _kind_of(k)) for k, v in value.items())
        else:
            stack.extend((v, depth + 1, "schema" if kind == "map" else "data") for v in value.values())
    return nodes


def _kind_of(key: str) -> str:
    if key in _DATA_KEYS:
        return "data"
    return "map" if key in _SCHEMA_MAPS else "schema"


def _refuse_outside_refs(value: ForeignJson) -> None:
    for key in _REF_KEYS:
        ref = value.get(key)
        if isinstance(ref, str) and not ref.startswith("#"):
            raise ValidationError(
                f"The schema's {key} {ref[:100]!r} points outside it: only references inside the "
                "schema (#/...) are followed."
            )


def _patterns(node: ForeignJson) -> list[str]:
    patterns = []
    if isinstance(node.get("pattern"), str):
        patterns.append(node["pattern"])
    if isinstance(node.get("patternProperties"), dict):
        patterns.extend(node["patternProperties"])
    return patterns


def _check_node(node: ForeignJson, top: bool, anchors: dict[str, ForeignJson]) -> None:
    for key in ("$id", "id"):
        ident = node.get(key)
        if isinstance(ident, str) and ident.startswith("#"):
            anchors[ident[1:]] = node  # draft 4 to 7's plain-name anchor
        elif isinstance(ident, str) and not top:
            raise ValidationError(
                f"The schema's {key} {ident[:100]!r} below its top changes where references point: "
                "use $defs and #/... references instead."
            )
    for key in _ANCHOR_KEYS:
        if isinstance(node.get(key), str):
            anchors[node[key]] = node
    for pattern in _patterns(node):
        if len(pattern) > MAX_PATTERN_CHARS:
            raise ValidationError(
                f"A pattern of the schema is longer than {MAX_PATTERN_CHARS} characters."
            )
        try:
            regex.compile(pattern)
        except (regex.error, OverflowError, RecursionError) as error:
            raise ValidationError(
                f"The pattern {pattern[:100]!r} is not a regular expression: {error}"
            ) from None


def _in_place(node: ForeignJson, root: ForeignJson, anchors: dict[str, ForeignJson]) -> Iterator[Any]:
    """The subschemas applied to the same value as `node` (no step into the answer)."""
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            yield from node[key]
    for key in ("not", "if", "then", "else"):
        yield node.get(key)
    for key in ("dependentSchemas", "dependencies"):
        if isinstance(node.get(key), dict):
            yield from node[key].values()
    for key in _REF_KEYS:
        if isinstance(node.get(key), str):
            yield _resolve(node[key], root, anchors, key)


def _resolve(ref: str, root: ForeignJson, anchors: dict[str, ForeignJson], key: str) -> Any:
    fragment = unquote(ref[1:])
    if fragment and not fragment.startswith("/"):
        if fragment not in anchors:
            raise ValidationError(f"The schema's {key} {ref[:100]!r} names no anchor in it.")
        return anchors[fragment]
    target: Any = root
    for part in fragment.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and len(part) < 10 and int(part) < len(target):
            target = target[int(part)]
        else:
            raise ValidationError(f"The schema's {key} {ref[:100]!r} points at nothing in it.")
    return target


def _children(
    node: ForeignJson, root: ForeignJson, anchors: dict[str, ForeignJson]
) -> Iterator[ForeignJson]:
    return iter([child for child in _in_place(node, root, anchors) if isinstance(child, dict)])


def _refuse_ref_cycles(
    root: ForeignJson, nodes: list[ForeignJson], anchors: dict[str, ForeignJson]
) -> None:
    """A loop of references and in-place keywords never reaches the answer: it would recurse
    until Python's limit on every check."""
    done: set[int] = set()
    for start in nodes:
        if id(start) in done:
            continue
        path = {id(start)}
        stack = [(start, _children(start, root, anchors))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            while child is not None and id(child) in done:
                child = next(children, None)
            if child is None:
                stack.pop()
                path.discard(id(node))
                done.add(id(node))
                continue
            if id(child) in path:
                raise ValidationError(
                    "The schema refers to itself in a loop that never goes into the answer "
                    "(a $ref back to where it is, directly or through allOf/anyOf/oneOf/not/if)."
                )
            path.add(id(child))
            stack.append((child, _children(child, root, anchors)))


def _validator(schema: ForeignJson) -> Validator:
    """A validator of the (checked) schema that follows references inside it only."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, registry=NO_RETRIEVAL)


def unfenced(text: str) -> str:
    """An answer's JSON without the ```json fence a model may put around it, in one pass (the
    regex it replaces backtracked: "```" and 1,000 spaces took 3 s, cubic in their number)."""
    stripped = text.strip()
    if len(stripped) >= 6 and stripped.startswith("```") and stripped.endswith("```"):
        inside = stripped[3:-3]
        return inside.removeprefix("json").strip()
    return stripped


def check_text(text: str, schema: ForeignJson, *, fenced: bool = True) -> SchemaCheck:
    """An answer's text (JSON, perhaps in a ```json fence unless `fenced` is False) against a
    schema, in the checking process within BUDGET; over it, "not checked" says so."""
    try:
        answer = sandbox.call(f"{__name__}.answer_check", schema, text, fenced, budget=BUDGET)
    except OverBudget as over:
        return SchemaCheck(
            None,
            "$",
            f"could not be checked within its budget of {BUDGET.words()} (out of {over.resource_name})",
        )
    except SandboxError as error:
        return SchemaCheck(None, "$", f"could not be checked: {error}"[:300])
    except (TypeError, ValueError, RecursionError):
        return SchemaCheck(None, "$", "could not be checked: the schema is not JSON")
    return SchemaCheck.from_json(answer) or SchemaCheck(None, "$", "could not be checked")


def check(schema: ForeignJson, instance: Any) -> SchemaCheck:
    """A value (parsed JSON) against a schema, as `check_text` checks an answer's text."""
    try:
        text = json.dumps(instance)
    except (TypeError, ValueError):
        return SchemaCheck(None, "$", "could not be checked: not JSON")
    except RecursionError:
        return SchemaCheck(None, "$", "could not be checked: it nests too deeply")
    return check_text(text, schema, fenced=False)


#: The checking process's validators, by schema (a benchmark checks every answer against one).
_validators: dict[str, Validator] = {}
_MAX_VALIDATORS = 16


def answer_check(schema: ForeignJson, text: str, fenced: bool) -> JsonOut:
    """In the checking process: `check_text`'s verdict, as JSON."""
    try:
        instance = json.loads(unfenced(text) if fenced else text)
    except json.JSONDecodeError as error:
        return SchemaCheck(
            False, "$", f"not JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ).to_json()
    except RecursionError:
        return SchemaCheck(None, "$", "could not be checked: it nests too deeply").to_json()
    key = json.dumps(schema, sort_keys=True)
    found = _validators.get(key)
    if found is None:
        if len(_validators) >= _MAX_VALIDATORS:
            _validators.clear()
        found = _validators[key] = _validator(schema)
    return _check_here_against(found, instance).to_json()


def _check_here_against(schema_validator: Validator, instance: Any) -> SchemaCheck:
    """An instance against a validator, with at most CHECK_DEADLINE_S of regex matching."""
    token = _deadline.set(time.monotonic() + CHECK_DEADLINE_S)
    try:
        violation = jsonschema.exceptions.best_match(schema_validator.iter_errors(instance))
    except TimeoutError:
        return SchemaCheck(None, "$", f"could not be checked in {CHECK_DEADLINE_S:g} s (a slow pattern)")
    except RecursionError:
        return SchemaCheck(None, "$", "could not be checked: it nests too deeply")
    except Unresolvable as error:
        return SchemaCheck(
            None, "$", f"could not be checked: the schema refers outside itself ({error})"[:300]
        )
    finally:
        _deadline.reset(token)
    if violation is None:
        return SchemaCheck(True)
    return SchemaCheck(False, violation.json_path, violation.message[:500])
