"""What the requests of a run ask (`WorkloadSpec`): the kinds, the length distributions and
their aliases, the structured kind's default schema, and a run's short workload label."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from services.bench.workloads.prompt_files import load_prompt_file
from services.bench.workloads.traces import TRACE_ALIASES, TRACES
from services.core.errors import ValidationError
from services.core.json_types import ForeignJson

WORKLOAD_KINDS = (
    "synthetic",
    "long_prompt",
    "shared_prefix",
    "multi_turn",
    "structured",
    "file",
    "trace",
)
LENGTH_DISTRIBUTIONS = ("fixed", "uniform", "normal", "conversation", "code")
DISTRIBUTION_ALIASES = {"sharegpt": "conversation", "conv": "conversation", "constant": "fixed"}

DEFAULT_SCHEMA: ForeignJson = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "city": {"type": "string"},
        "hobbies": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    },
    "required": ["name", "age", "city", "hobbies"],
    "additionalProperties": False,
}

STRUCTURED_INSTRUCTION = (
    "Invent a fictional person and answer only with a JSON object with the fields name, age, city "
    "and hobbies. Background words follow, ignore them:"
)


@dataclass(frozen=True)
class WorkloadSpec:
    """What the requests of a run ask. Lengths in tokens; `input_len`/`output_len` are means."""

    kind: str = "synthetic"
    input_len: int = 128
    output_len: int = 128
    length_dist: str = "fixed"
    range_ratio: float = 0.5
    max_input_len: int | None = None
    max_output_len: int | None = None
    prefix_groups: int = 4
    prefix_len: int = 256
    turns: int = 3
    schema: ForeignJson | None = None
    prompts_file: str | None = None
    trace: str = "conversation"
    length_scale: float = 1.0
    seed: int = 0
    #: Ask the engine for exactly output_len tokens (ignore_eos / min_tokens where it can).
    fixed_output: bool = True

    def validate(self) -> WorkloadSpec:
        """The spec with aliases resolved; raises ValidationError with a message for a user."""
        spec = replace(
            self,
            length_dist=DISTRIBUTION_ALIASES.get(self.length_dist, self.length_dist),
            trace=TRACE_ALIASES.get(self.trace, self.trace),
        )
        if spec.kind not in WORKLOAD_KINDS:
            raise ValidationError(
                f"Unknown workload {spec.kind!r}; choose one of {', '.join(WORKLOAD_KINDS)}."
            )
        if spec.length_dist not in LENGTH_DISTRIBUTIONS:
            raise ValidationError(
                f"Unknown length distribution {self.length_dist!r}; choose one of "
                f"{', '.join(LENGTH_DISTRIBUTIONS)} (or sharegpt)."
            )
        if spec.input_len < 1 or spec.output_len < 1:
            raise ValidationError("Input and output lengths must be at least 1 token.")
        if spec.input_len > 1_000_000 or spec.output_len > 1_000_000:
            raise ValidationError("Input and output lengths above a million tokens are not sensible.")
        if not 0 <= spec.range_ratio <= 1:
            raise ValidationError("The length range ratio must be between 0 and 1.")
        if spec.kind == "shared_prefix" and (spec.prefix_groups < 1 or spec.prefix_len < 1):
            raise ValidationError(
                "Shared-prefix workloads need at least one group and a prefix of at least 1 token."
            )
        if spec.kind == "multi_turn" and not 1 <= spec.turns <= 100:
            raise ValidationError("Multi-turn conversations have 1 to 100 turns.")
        if spec.kind == "trace" and spec.trace not in TRACES:
            raise ValidationError(f"Unknown trace {self.trace!r}; choose one of {', '.join(TRACES)}.")
        if spec.length_scale <= 0:
            raise ValidationError("The length scale must be positive.")
        if spec.kind == "file":
            if not spec.prompts_file:
                raise ValidationError("The file workload needs a JSONL prompts file.")
            load_prompt_file(spec.prompts_file)
        if spec.kind == "structured" and spec.schema is not None and not isinstance(spec.schema, dict):
            raise ValidationError("The JSON schema must be a JSON object.")
        if spec.schema is not None:
            _check_schema(spec.schema)
        return spec

    @property
    def uses_fixed_output(self) -> bool:
        """Structured answers end with their JSON: forcing a length would break them."""
        return self.fixed_output and self.kind != "structured"

    @property
    def effective_schema(self) -> ForeignJson | None:
        if self.kind != "structured":
            return None
        return self.schema or DEFAULT_SCHEMA


def _check_schema(schema: ForeignJson) -> None:
    # jsonschema costs 0.05-0.1 s (CLI start): only a structured workload's schema needs it.
    from services.core import json_schema

    json_schema.check_schema(schema)


def workload_label(spec: WorkloadSpec) -> str:
    """A short human name, stored in Run.workload for filtering."""
    if spec.kind == "trace":
        return f"trace-{spec.trace}"
    if spec.kind == "file":
        return f"file:{Path(spec.prompts_file or '').name}"
    label = f"{spec.kind} {spec.input_len}/{spec.output_len}"
    if spec.length_dist != "fixed":
        label += f" {spec.length_dist}"
    if spec.kind == "shared_prefix":
        label += f" {spec.prefix_groups}x{spec.prefix_len}"
    if spec.kind == "multi_turn":
        label += f" {spec.turns} turns"
    return label
