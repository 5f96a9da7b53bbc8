"""The HTML report by kind of run: a demo run gets its own (the standard report with the demo's
story first), and export_run gives every other kind the standard one."""

from __future__ import annotations

import pytest

from db.models import Run
from db.session import session_scope
from services.runs import reports
from services.runs.reports import export
from services.runs.reports.demo import export_demo_html
from services.runstate.lifecycle import RunKind


def _stored_run(kind: str) -> int:
    with session_scope() as session:
        run = Run(kind=kind, name="kind reports", status="finished", engine_names="vllm", config={})
        session.add(run)
        session.flush()
        return run.id


def test_a_demo_has_its_own_report_and_every_other_kind_the_standard_one() -> None:
    assert export.HTML_REPORTS == {RunKind.DEMO: export_demo_html}


def test_export_run_uses_the_report_of_its_kind(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[int] = []

    def parity_report(run_id: int) -> reports.ExportFile:
        written.append(run_id)
        return reports.ExportFile(filename="parity.html", mime="text/html", data=b"<p>parity</p>")

    monkeypatch.setitem(export.HTML_REPORTS, RunKind.PARITY, parity_report)
    parity, benchmark = _stored_run("parity"), _stored_run("benchmark")
    assert reports.export_run(parity, "html").data == b"<p>parity</p>" and written == [parity]
    standard = reports.export_run(benchmark, "html")
    assert standard.filename == f"shootout-run-{benchmark}.html"
    assert f"Shootout run #{benchmark}: kind reports" in standard.data.decode()
    assert written == [parity]
