"""Guided demos: one mechanism of LLM serving per scenario, shown live on real engines.

- `registry.scenarios()` / `get_scenario(name)`: the scenarios (title, explanation,
  default engines, settings).
- `runner.start_demo(name, engines, options=..., pause_between_steps=..., background=...)`
  stores a `Run(kind="demo")` and runs it in a worker (or inline for the CLI);
  `advance`, `set_pause`, `stop_demo` are the presenter's buttons
  (in `control.py`, re-exported by runner).
- `runner.demo_view(run_id)`: everything the page draws, from the database alone (live
  or replayed); `runner.demo_result(run_id)`: the `shootout demo --json` document (both in
  `reading.py`, over `records.py`'s StepView/DemoView, re-exported by runner).
- `summary.DemoSummary`: the run's stored summary as one typed record (from_json/to_json).
- A scenario module (`batching.py`, ...) holds its steps and its words: what a scenario is made
  of is `base.py`, what a step shows (big numbers, chart spec, figures) `readout.py`, and the
  shared step runner (warm-up, engine after engine, the common sentences) `common.py`.
- `charts.step_figure(step)`: the plotly figure of one step.
- The run's HTML report with the demo's steps is services/runs/reports/demo.py's (runs sit
  above demos: docs/architecture.md, "Layers"); the Demos page links to web/exports.py's route.
"""

from services.demos.registry import get_scenario, scenarios

__all__ = ["get_scenario", "scenarios"]
