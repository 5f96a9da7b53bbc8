"""What the Runs page shows and what leaves the server, in four parts:

- `tables`: the comparison table (values, changes against the baseline) and engine settings;
- `figures`: latency CDFs and latency against throughput;
- `html_report` and `export`: a run as CSV, run JSON or HTML, a comparison as HTML;
- `steps`: each step's cost and energy, for the HTML report and the steps CSV;
- `demo`: a demo run's HTML report, the standard one with the demo's story first.

Callers import from here; the parts import each other, never this package's top. What the Runs
page draws for a comparison or one run is services.runs.display (it uses these parts).
"""

from services.planner.steps import KINDS_WITH_STEPS, steps_csv, steps_frame
from services.reports.export import (
    EXPORT_FORMATS,
    ExportFormat,
    export_comparison,
    export_run,
    run_document,
)
from services.reports.html_report import ExportFile, standard_html_report
from services.reports.streamed import export_filename
from services.runs.figures import cdf_figure, latency_throughput_figure
from services.runs.tables import comparison_table, settings_table, style_comparison_table

__all__ = [
    "EXPORT_FORMATS",
    "KINDS_WITH_STEPS",
    "ExportFile",
    "ExportFormat",
    "cdf_figure",
    "comparison_table",
    "export_comparison",
    "export_filename",
    "export_run",
    "latency_throughput_figure",
    "run_document",
    "settings_table",
    "standard_html_report",
    "steps_csv",
    "steps_frame",
    "style_comparison_table",
]
