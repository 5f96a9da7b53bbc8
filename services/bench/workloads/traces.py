"""The real request-length traces shipped in `services/bench/data/` (Azure LLM traces 2023,
CC-BY 4.0, see its README): their names, rows and mean lengths."""

from __future__ import annotations

import csv
import gzip
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from services.core.errors import ValidationError

# The data folder is services/bench/data, beside this package.
DATA_DIR = Path(__file__).resolve().parent.parent / "data"

TRACES = {"conversation": "azure_llm_2023_conv.csv.gz", "code": "azure_llm_2023_code.csv.gz"}
TRACE_ALIASES = {"conv": "conversation", "sharegpt": "conversation"}

TRACE_ATTRIBUTION = (
    "Azure LLM inference traces 2023 (Azure Public Dataset, CC-BY 4.0): Patel et al., "
    '"Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024.'
)


@dataclass(frozen=True)
class TraceRow:
    offset_s: float
    input_len: int
    output_len: int


@lru_cache(maxsize=4)
def load_trace(name: str) -> tuple[TraceRow, ...]:
    """The rows of a shipped trace (arrival offset, context tokens, generated tokens)."""
    name = TRACE_ALIASES.get(name, name)
    if name not in TRACES:
        raise ValidationError(f"Unknown trace {name!r}; choose one of {', '.join(TRACES)}.")
    with gzip.open(DATA_DIR / TRACES[name], "rt", encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        next(reader)
        return tuple(TraceRow(int(row[0]) / 1000, int(row[1]), int(row[2])) for row in reader)


@lru_cache(maxsize=4)
def trace_means(name: str) -> tuple[float, float]:
    rows = load_trace(name)
    return sum(r.input_len for r in rows) / len(rows), sum(r.output_len for r in rows) / len(rows)
