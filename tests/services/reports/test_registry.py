"""The HTML report by kind of run: a kind's module registers its exporter, export_run looks
the kind up, and services.reports no longer imports a kind's module to export it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from db.models import Run
from db.session import session_scope
from services import reports
from services.core.lifecycle import RunKind
from services.reports import registry
from services.reports.demo import export_demo_html

ROOT = Path(__file__).resolve().parents[3]


def _stored_run(kind: str) -> int:
    with session_scope() as session:
        run = Run(kind=kind, name="registry", status="finished", engine_names="vllm", config={})
        session.add(run)
        session.flush()
        return run.id


def test_a_demo_has_its_own_report_and_every_other_kind_the_standard_one() -> None:
    exporters = {kind: registry.html_exporter(kind) for kind in RunKind}
    assert exporters.pop(RunKind.DEMO) is export_demo_html
    assert set(exporters.values()) == {None}
    assert registry.html_exporter("a kind from a newer version") is None


def test_export_run_uses_the_exporter_its_kind_registered(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[int] = []

    def parity_report(run_id: int) -> reports.ExportFile:
        written.append(run_id)
        return reports.ExportFile(filename="parity.html", mime="text/html", data=b"<p>parity</p>")

    monkeypatch.setitem(registry._EXPORTERS, RunKind.PARITY, parity_report)
    parity, benchmark = _stored_run("parity"), _stored_run("benchmark")
    assert reports.export_run(parity, "html").data == b"<p>parity</p>" and written == [parity]
    standard = reports.export_run(benchmark, "html")
    assert standard.filename == f"shootout-run-{benchmark}.html"
    assert f"Shootout run #{benchmark}: registry" in standard.data.decode()
    assert written == [parity]


def test_a_kind_has_one_exporter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_EXPORTERS", dict(registry._EXPORTERS))
    register_again = registry.register(RunKind.DEMO)
    assert register_again(export_demo_html) is export_demo_html  # the same one: harmless
    with pytest.raises(ValueError, match="kind demo have an HTML exporter already"):
        register_again(reports.standard_html_report)


@pytest.mark.parametrize(
    "first_import", ["services.reports", "services.reports.demo", "services.reports.registry"]
)
def test_importing_either_side_first_works_and_reports_leaves_demos_alone(first_import: str) -> None:
    """The old cycle: reports imported demos.report, which imported reports. Now the demo's
    report lives in services/reports/demo.py and loads the demos package only when a report is
    looked up by kind (or the module itself is imported)."""
    probe = (
        f"import sys, {first_import}\n"
        "from services import reports\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('services.demos'))\n"
        "print(loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], check=False, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.strip()
    if first_import == "services.reports.demo":
        assert "'services.demos.runner'" in loaded
    else:
        assert loaded == "[]"
