"""Plotly figures for the Planner page: decode ceiling vs batch, the classic roofline,
and the per-GPU memory bar. Pure functions of a PlanResult (no Streamlit here)."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from services.planner.plan import PlanResult
from services.planner.roofline import batch_grid
from services.planner.specs import GIB

MEMORY_COLOUR = "#1f77b4"
COMPUTE_COLOUR = "#d62728"
BOUND_COLOUR = "#2ca02c"


def decode_batch_limit(plan: PlanResult) -> int:
    """Where the batch axis ends: a little past the plan's batch, the batch that fills KV
    memory and the compute crossover, whichever is furthest (never a blind power of ten)."""
    marks = [plan.request.batch, plan.fit.max_sequences, plan.crossover_batch or 0]
    return max(2, math.ceil(max(marks) * 1.5))


def _mark_batch(
    figure: go.Figure, batch: int, text: str, colour: str, top: bool, axis_end: float
) -> None:
    """A labelled vertical line at `batch` on the log batch axis; in the axis's right half the
    label reads leftwards from the line (written rightwards, "KV memory full at 56" was cut at
    the chart's edge, issue 36).

    Not `add_vline(annotation_text=...)`: on a log axis Plotly reads an annotation's x in
    log10 units but a shape's in data units, so the label of a line at batch 62 lands at
    1e62 and drags the autorange there (plotly/plotly.py#2580).
    """
    figure.add_shape(
        type="line",
        x0=batch,
        x1=batch,
        xref="x",
        y0=0,
        y1=1,
        yref="paper",
        line={"color": colour, "dash": "dash"},
    )
    figure.add_annotation(
        x=math.log10(batch),
        xref="x",
        y=1 if top else 0,
        yref="paper",
        text=text,
        showarrow=False,
        xanchor="right" if math.log(batch) > 0.5 * math.log(axis_end) else "left",
        yanchor="top" if top else "bottom",
        font={"color": colour},
    )


def decode_ceiling_figure(plan: PlanResult, achieved_tok_s: float | None = None) -> go.Figure:
    """Aggregate decode tokens/s against batch: bandwidth ceiling, compute ceiling, and the lower of the two,
    from batch 1 to just past the KV-memory limit and the compute crossover, both marked."""
    request = plan.request
    limit = decode_batch_limit(plan)
    marks = (request.batch, plan.fit.max_sequences, plan.crossover_batch or 0, limit)
    batches = batch_grid(limit, marks, minimum=1)
    points = plan.roofline.curve(request.context, batches)
    figure = go.Figure()
    figure.add_scatter(
        x=batches,
        y=[p.memory_bound_tok_s for p in points],
        name="bandwidth ceiling",
        line={"color": MEMORY_COLOUR, "dash": "dot"},
    )
    figure.add_scatter(
        x=batches,
        y=[p.compute_bound_tok_s for p in points],
        name="compute ceiling",
        line={"color": COMPUTE_COLOUR, "dash": "dot"},
    )
    figure.add_scatter(
        x=batches,
        y=[p.bound_tok_s for p in points],
        name="decode bound",
        line={"color": BOUND_COLOUR, "width": 3},
    )
    figure.add_scatter(
        x=[request.batch],
        y=[plan.decode.bound_tok_s],
        mode="markers",
        name=f"batch {request.batch}",
        marker={"size": 12, "color": BOUND_COLOUR, "symbol": "diamond"},
    )
    notes = []
    if plan.crossover_batch:
        _mark_batch(
            figure,
            plan.crossover_batch,
            f"compute-bound from batch {plan.crossover_batch:,}",
            "grey",
            top=True,
            axis_end=limit,
        )
    else:
        notes.append("compute-bound: never (each sequence adds its own KV bytes)")
    if plan.fit.max_sequences > 0:
        _mark_batch(
            figure,
            plan.fit.max_sequences,
            f"KV memory full at {plan.fit.max_sequences:,}",
            "orange",
            top=False,
            axis_end=limit,
        )
    else:
        notes.append("KV memory: not one sequence fits at this context")
    if notes:
        figure.add_annotation(
            x=0.01,
            xref="paper",
            y=1,
            yref="paper",
            text="<br>".join(notes),
            showarrow=False,
            xanchor="left",
            yanchor="top",
            align="left",
            font={"color": "grey"},
        )
    if achieved_tok_s:
        figure.add_scatter(
            x=[request.batch],
            y=[achieved_tok_s],
            mode="markers",
            name="measured",
            marker={"size": 12, "color": "black", "symbol": "x"},
        )
    figure.update_layout(
        title=f"Decode ceiling at {request.context:,} tokens of context",
        # A log axis takes its range in log10 units: batch 1 to `limit`.
        xaxis={"title": "batch (concurrent sequences)", "type": "log", "range": [0, math.log10(limit)]},
        yaxis={"title": "tokens/s (all sequences)", "type": "log"},
        legend={"orientation": "h", "y": -0.25},
        margin={"t": 50, "b": 10},
    )
    return figure


def roofline_figure(plan: PlanResult) -> go.Figure:
    """Attainable FLOP/s against arithmetic intensity, with decode at several batch sizes on it."""
    roofline = plan.roofline
    peak = roofline.peak_flops_per_gpu
    bandwidth = plan.gpu.bandwidth_bytes_s
    batches = batch_grid(max(plan.request.batch, 256), (plan.request.batch,))
    points = roofline.curve(plan.request.context, batches)
    intensities = [p.arithmetic_intensity for p in points]
    low = min(min(intensities), roofline.ridge_point) / 4
    high = max(max(intensities), roofline.ridge_point) * 4
    xs = [low, roofline.ridge_point, high]
    figure = go.Figure()
    figure.add_scatter(
        x=xs, y=[min(peak, x * bandwidth) / 1e12 for x in xs], name="roof", line={"color": "black"}
    )
    figure.add_scatter(
        x=intensities,
        y=[min(peak, i * bandwidth) / 1e12 for i in intensities],
        mode="markers+text",
        text=[str(b) if b in (1, plan.request.batch) or b == batches[-1] else "" for b in batches],
        textposition="top center",
        name="decode at batch",
        marker={"color": BOUND_COLOUR},
    )
    figure.update_layout(
        title=f"Roofline of one {plan.gpu.name} ({plan.fmt.label} compute)",
        xaxis={"title": "arithmetic intensity (FLOPs per byte)", "type": "log"},
        yaxis={"title": "attainable TFLOP/s", "type": "log"},
        legend={"orientation": "h", "y": -0.25},
        margin={"t": 50, "b": 10},
    )
    return figure


def memory_bar_figure(plan: PlanResult) -> go.Figure:
    """One GPU's memory: weights, KV cache for the batch, reserve, then what is left."""
    fit = plan.fit
    parts = [
        ("weights", fit.weights_per_gpu, "#636efa"),
        (f"KV cache ({plan.request.batch} × {plan.request.context:,})", fit.kv_per_gpu, "#ef553b"),
        ("reserve", fit.reserve_per_gpu, "#ab63fa"),
        ("free", max(fit.usable_per_gpu - fit.needed_per_gpu, 0.0), "#d3d3d3"),
    ]
    figure = go.Figure()
    for name, value, colour in parts:
        if value > 0:
            figure.add_bar(
                y=["per GPU"],
                x=[value / GIB],
                name=name,
                orientation="h",
                marker_color=colour,
                hovertemplate=f"{name}: %{{x:,.1f}} GiB<extra></extra>",
            )
    # The two labels on either side of their lines, which are often a few GiB apart: both
    # written rightwards, "usable 71.7 GiB" ran into the total's line and label.
    figure.add_vline(
        x=fit.usable_per_gpu / GIB,
        line_dash="dash",
        line_color="black",
        annotation_text=f"usable {fit.usable_per_gpu / GIB:,.1f} GiB",
        annotation_position="top left",
    )
    figure.add_vline(
        x=fit.memory_per_gpu / GIB,
        line_color="grey",
        annotation_text=f"total {fit.memory_per_gpu / GIB:,.1f} GiB",
        annotation_position="top right",
    )
    figure.update_layout(
        barmode="stack",
        height=220,
        xaxis={"title": "GiB"},
        margin={"t": 30, "b": 10},
        legend={"orientation": "h", "y": -0.6},
    )
    return figure
