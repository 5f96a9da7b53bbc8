"""What the Planner says about each engine kind beside the others: its features (every cell with
its source), the hardware it runs on, and its score and reason under each constraint.

Each kind's package (`services/engines/<kind>/reference.py`) defines `REFERENCE`, a
`KindReference`; `services.planner.engines_reference` reads them into its matrix and decision
helper. Adding an engine is its own file of rows, not an edit of every table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.engines.registry import kind_parts

#: A constraint and one of its values ("traffic", "single-user"); ("gpus", "several") applies
#: with more than one GPU and ("maintenance", True) always.
RuleKey = tuple[str, object]


@dataclass(frozen=True)
class Cell:
    value: str
    source: str


@dataclass(frozen=True)
class KindReference:
    kind: str
    #: Feature name -> what the kind does, with its source.
    cells: Mapping[str, Cell]
    #: The hardware (services.planner.engines_reference.Hardware) it runs on.
    hardware: frozenset[str]
    #: Constraint value -> (score, why); a constraint not listed scores 0.
    scores: Mapping[RuleKey, tuple[int, str]]


def references() -> dict[str, KindReference]:
    """Every kind whose package has a `reference.py`, by kind name."""
    found: dict[str, KindReference] = {}
    for kind, module in kind_parts("reference"):
        reference = module.REFERENCE
        if not isinstance(reference, KindReference) or reference.kind != kind:
            raise TypeError(
                f"services/engines/{kind}/reference.py must define REFERENCE = KindReference({kind!r}, ...)."
            )
        found[kind] = reference
    return found
