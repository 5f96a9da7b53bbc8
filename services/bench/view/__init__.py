"""What the Benchmarks page shows, built from the database: the form's choices, the spec a
filled form describes, and one run's view (live progress, percentile table, charts).

Plain data and plotly figures out, no streamlit in. Live views read the stored rows, so any
number of viewers see the same progress, and a page opened later sees the same run.

The parts: the form (`options`), one run's view and the run picker (`run_view`), the results
tables (`tables`), the charts (`charts`). Callers import from here (`from services.bench
import views`), so the split stays an inside matter.
"""

from services.bench.selfcheck import CLIENT_BOUND, KEPT_UP, UNCHECKED, RunCheck
from services.bench.view.charts import (
    ENGINE_COLOURS,
    LIVE_POINTS,
    by_engine,
    cdf_figure,
    concurrency_figure,
    engine_metrics_figure,
    live_figure,
    run_offsets,
    sweep_figure,
    timeline_figure,
)
from services.bench.view.costs import CostRow, cheapest_line, cost_lines, cost_rows, cost_table
from services.bench.view.options import (
    LOAD_TITLES,
    SWEEP_TITLES,
    WORKLOAD_TITLES,
    FormOptions,
    form_options,
    save_prompt_file,
    shared_cores_note,
    spec_from_form,
    submit,
)
from services.bench.view.run_view import (
    FIGURE_ORDER,
    TIMELINE_MAX_REQUESTS,
    RunChoice,
    RunView,
    cancel,
    recent_runs,
    run_choice,
    run_self_check,
    run_view,
    time_left,
)
from services.bench.view.split import SplitView, split_view
from services.bench.view.tables import (
    METRIC_TITLES,
    fill_missing,
    percentile_table,
    step_labels,
    throughput_table,
)
from services.team.owners import may_control_run

__all__ = [
    "CLIENT_BOUND",
    "ENGINE_COLOURS",
    "FIGURE_ORDER",
    "KEPT_UP",
    "LIVE_POINTS",
    "LOAD_TITLES",
    "METRIC_TITLES",
    "SWEEP_TITLES",
    "TIMELINE_MAX_REQUESTS",
    "UNCHECKED",
    "WORKLOAD_TITLES",
    "CostRow",
    "FormOptions",
    "RunCheck",
    "RunChoice",
    "RunView",
    "SplitView",
    "by_engine",
    "cancel",
    "cdf_figure",
    "cheapest_line",
    "concurrency_figure",
    "cost_lines",
    "cost_rows",
    "cost_table",
    "engine_metrics_figure",
    "fill_missing",
    "form_options",
    "live_figure",
    "may_control_run",
    "percentile_table",
    "recent_runs",
    "run_choice",
    "run_offsets",
    "run_self_check",
    "run_view",
    "save_prompt_file",
    "shared_cores_note",
    "spec_from_form",
    "split_view",
    "step_labels",
    "submit",
    "sweep_figure",
    "throughput_table",
    "time_left",
    "timeline_figure",
]
