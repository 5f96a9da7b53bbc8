"""Imported results as a run kind: stored whole by the import, never executed here."""

from __future__ import annotations

from services.runstate.lifecycle import RunKind
from services.runstate.run_kinds import RunKindSpec, register

SPEC = register(RunKindSpec(RunKind.IMPORT, "imported run"))
