"""Imported results as a run kind: stored whole by the import, never executed here."""

from __future__ import annotations

from services.core.lifecycle import RunKind
from services.core.run_kinds import RunKindSpec, register

SPEC = register(RunKindSpec(RunKind.IMPORT, "imported run"))
