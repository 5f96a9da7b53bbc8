"""The Planner's figures: the decode-ceiling batch axis stays where the numbers are, its limits marked."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.planner import PlanRequest, make_plan
from services.planner.charts import decode_ceiling_figure, memory_bar_figure, roofline_figure
from services.planner.presets import GPUS, MODELS


def _axis_end(figure: go.Figure) -> float:
    """The batch where the x axis ends (a log axis keeps its range in log10 units)."""
    low, high = figure.layout.xaxis.range
    assert low == 0
    return 10**high


def _marks(figure: go.Figure) -> dict[str, float]:
    """Label text -> the batch it sits at, for every label placed on the x axis."""
    return {a.text: 10**a.x for a in figure.layout.annotations if a.xref == "x"}


def _check_in_range(figure: go.Figure) -> float:
    end = _axis_end(figure)
    for trace in figure.data:
        assert max(trace.x) <= end * (1 + 1e-9), trace.name
    for shape in figure.layout.shapes:
        assert 1 <= shape.x0 <= end
    for text, batch in _marks(figure).items():
        assert 1 <= batch <= end * (1 + 1e-9), text
    return end


def test_a_model_that_fits_and_never_turns_compute_bound_ends_past_the_kv_limit() -> None:
    """Issue 19: Llama 3 70B on 4 H100s ran the batch axis to 1e26-1e65 (labels in log units)."""
    plan = make_plan(PlanRequest("llama-3-70b", "h100-sxm", batch=16, context=8192, tp=4))
    assert plan.crossover_batch is None and plan.fit.max_sequences == 62
    figure = decode_ceiling_figure(plan)
    end = _check_in_range(figure)
    assert 62 < end < 200
    marks = _marks(figure)
    assert marks["KV memory full at 62"] == pytest.approx(62)
    assert [s.x0 for s in figure.layout.shapes] == [62]
    assert any("compute-bound: never" in a.text for a in figure.layout.annotations)


def test_both_limits_are_marked_where_they_are() -> None:
    plan = make_plan(PlanRequest("llama-3-8b", "h100-sxm", "bf16", batch=8, context=1))
    crossover, full = plan.crossover_batch, plan.fit.max_sequences
    assert crossover and full > crossover
    figure = decode_ceiling_figure(plan, achieved_tok_s=100.0)
    end = _check_in_range(figure)
    assert full < end < full * 2
    marks = _marks(figure)
    assert marks[f"compute-bound from batch {crossover:,}"] == pytest.approx(crossover)
    assert marks[f"KV memory full at {full:,}"] == pytest.approx(full)
    assert sorted(s.x0 for s in figure.layout.shapes) == [crossover, full]


def test_a_model_that_does_not_fit_says_so_on_the_chart() -> None:
    plan = make_plan(PlanRequest("llama-3-405b", "rtx-4090", "bf16", batch=4, context=8192))
    assert plan.fit.max_sequences == 0
    figure = decode_ceiling_figure(plan)
    _check_in_range(figure)
    assert any("not one sequence fits" in a.text for a in figure.layout.annotations)


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(sorted(MODELS)),
    gpu=st.sampled_from(sorted(GPUS)),
    batch=st.integers(1, 4096),
    context=st.integers(1, 131072),
)
def test_every_plan_keeps_its_decode_chart_in_range(
    model: str, gpu: str, batch: int, context: int
) -> None:
    plan = make_plan(PlanRequest(model, gpu, "bf16", batch=batch, context=context))
    end = _check_in_range(decode_ceiling_figure(plan))
    assert end <= 1.5 * max(batch, plan.fit.max_sequences, plan.crossover_batch or 0) + 1
    assert math.isfinite(end)


def test_the_other_figures_build() -> None:
    plan = make_plan(PlanRequest("llama-3-8b", "h100-sxm", batch=16, context=8192))
    assert roofline_figure(plan).data
    assert memory_bar_figure(plan).data


def test_labels_stay_inside_the_chart_and_apart() -> None:
    """Issue 36: "KV memory full at 56" was cut at the decode chart's right edge, and the memory
    bar's "usable" label ran into the total's line a few GiB further right."""
    plan = make_plan(PlanRequest("llama-3-8b", "h100-sxm", batch=16, context=8192))
    anchors = {
        a.text: a.xanchor for a in decode_ceiling_figure(plan).layout.annotations if a.xref == "x"
    }
    assert anchors == {"KV memory full at 56": "right"}  # near the axis's end: reads leftwards
    # A batch of 4,096 runs the axis to 6,144: the same mark, in the left half, reads rightwards.
    wide = make_plan(PlanRequest("llama-3-8b", "h100-sxm", batch=4096, context=8192))
    marks = {a.text: a.xanchor for a in decode_ceiling_figure(wide).layout.annotations if a.xref == "x"}
    assert marks == {"KV memory full at 56": "left"}
    bar = {a.text.split()[0]: a.xanchor for a in memory_bar_figure(plan).layout.annotations}
    assert bar == {"usable": "right", "total": "left"}  # on either side of their two lines
