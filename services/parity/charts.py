"""The parity run's charts: quality against speed (one point per engine), and where answers
diverge (the distribution of first-divergence positions). Figures leave the module inert."""

from __future__ import annotations

import math
from collections import Counter

import plotly.graph_objects as go

from services.core.figures import inert
from services.parity.results import ParityView


def quality_speed_figure(view: ParityView) -> go.Figure | None:
    """Task score (y) against output tokens/s (x), from the same run; None before any engine answered."""
    figure = go.Figure()
    for label, block in view.summary.engines.items():
        score, rate = block.task_score, block.output_throughput_tok_s
        if score is None or rate is None:
            continue
        match = view.summary.comparison(label).exact_match_rate
        note = (
            "reference"
            if block.is_reference
            else (f"{match * 100:.0f}% exact match" if match is not None else "not compared")
        )
        figure.add_trace(
            go.Scatter(
                x=[rate],
                y=[score * 100],
                name=label,
                mode="markers+text",
                text=[label],
                textposition="top center",
                marker={"size": 16},
                cliponaxis=False,
                hovertemplate=f"%{{x:.1f}} tok/s, score %{{y:.0f}}%<br>{note}<extra></extra>",
            )
        )
    if not figure.data:
        return None
    fastest = max(trace.x[0] for trace in figure.data)
    # Room on the right for the fastest engine's name above its point.
    figure.update_xaxes(range=[0, fastest * 1.25 or 1.0])
    figure.update_layout(
        title="Quality and speed, same run",
        xaxis_title="output tokens/s (completion tokens / request time)",
        yaxis_title="task score (%)",
        yaxis_range=[-5, 105],
        height=380,
        showlegend=False,
        margin={"t": 50, "b": 40},
    )
    return inert(figure)


def divergence_figure(view: ParityView) -> go.Figure | None:
    """Histogram of first-divergence positions per compared engine; None when nothing diverged."""
    figure = go.Figure()
    tallest = 1
    for label in view.others:
        positions = view.summary.comparison(label).divergence_positions
        if positions:
            tallest = max(tallest, max(Counter(positions).values()))
            figure.add_trace(go.Histogram(x=positions, name=label, xbins={"size": 1}, opacity=0.75))
    if not figure.data:
        return None
    figure.update_layout(
        title=f"Where answers first diverge from {view.reference}",
        barmode="overlay",
        xaxis_title="token position of the first divergence",
        yaxis_title="prompts",
        height=380,
        yaxis_dtick=max(1, math.ceil(tallest / 5)),
        margin={"t": 50, "b": 40},
    )
    return inert(figure)
