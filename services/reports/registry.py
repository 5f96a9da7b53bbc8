"""The HTML report of each kind of run: a kind whose report tells more than the standard one
(a demo's story: services/reports/demo.py) registers its exporter here, and
services.reports.export looks the kind up, loading that module only when a report is asked for.

This module imports nothing else of services.reports, so a kind's module may import it
(and the standard report it builds on) without a cycle at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from services.core.lifecycle import RunKind


@dataclass(frozen=True)
class ExportFile:
    filename: str
    mime: str
    data: bytes


#: Makes the HTML report of one run, by id.
HtmlExporter = Callable[[int], ExportFile]
E = TypeVar("E", bound=HtmlExporter)

_EXPORTERS: dict[RunKind, HtmlExporter] = {}


def register(kind: RunKind) -> Callable[[E], E]:
    """Function decorator: the HTML report of runs of `kind` (one exporter per kind)."""

    def decorate(exporter: E) -> E:
        known = _EXPORTERS.get(kind)
        if known is not None and known is not exporter:
            raise ValueError(
                f"Runs of kind {kind!s} have an HTML exporter already: {known.__qualname__}."
            )
        _EXPORTERS[kind] = exporter
        return exporter

    return decorate


def _load() -> None:
    # Importing the modules runs their @register decorators; lazily, as these modules
    # build on the standard report.
    from services.reports import demo  # noqa: F401 - imported for its @register side effect


def html_exporter(kind: str) -> HtmlExporter | None:
    """The registered exporter of `kind`; None where the standard report is the kind's report
    (also for a kind this version does not know, as an imported run may carry)."""
    _load()
    try:
        return _EXPORTERS.get(RunKind(kind))
    except ValueError:
        return None
