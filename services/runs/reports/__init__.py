"""What leaves the server: a run as CSV, run JSON or HTML, a comparison as HTML.

- `html_report` and `export`: the exports (`export.HTML_REPORTS`: the HTML report by kind);
- `demo`: a demo run's HTML report, the standard one with the demo's story first;
- `streamed`: exports streamed in batches of rows.

Callers import from here; the parts import each other, never this package's top. The
comparison's tables and figures are services.runs.tables' and `figures`'; each step's cost
and energy is services.planner.steps.
"""

from services.runs.reports.export import EXPORT_FORMATS, export_comparison, export_run, run_document
from services.runs.reports.html_report import ExportFile
from services.runs.reports.streamed import export_filename

__all__ = [
    "EXPORT_FORMATS",
    "ExportFile",
    "export_comparison",
    "export_filename",
    "export_run",
    "run_document",
]
