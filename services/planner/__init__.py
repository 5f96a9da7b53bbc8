"""The Planner: will it fit, how fast can it possibly go, which engine, and how to start it.

Entry points (the page and `shootout plan` use these):

- `make_plan(PlanRequest) -> PlanResult` and `plan_to_dict(PlanResult)`: every number.
- `list_presets()`, `catalog.*`: models and GPUs by key, the user's own included.
- `importers.model_from_config(dict)`, `importers.model_from_gguf(path)`: fill a model.
- `engines_reference.feature_rows()`, `rank_engines(Constraints)`: the engines side by side.
- `measured.measured_by_kind()`: per engine kind, the cheapest stored step meeting its SLOs and its energy.
- `launch.options_for_plan(PlanRequest)` + `launch.build_launch(LaunchOptions)`: the start command, plain and docker.
- `runs.runs_for_plan(model, gpu)` + `measure(...)`: a stored run of the planned model and GPU against its bound.
"""

from __future__ import annotations

from services.planner.plan import PlanRequest, PlanResult, list_presets, make_plan, plan_to_dict
from services.planner.roofline import BoundComparison

__all__ = [
    "BoundComparison",
    "PlanRequest",
    "PlanResult",
    "list_presets",
    "make_plan",
    "measure",
    "plan_to_dict",
]


def measure(
    achieved_tok_s: float,
    *,
    model: str,
    gpu: str,
    dtype: str | None = None,
    batch: int = 1,
    context: int = 1024,
    tp: int = 1,
    kv_dtype: str = "auto",
) -> BoundComparison:
    """Achieved decode tokens/s as a fraction of the roofline bound at the same batch and context."""
    plan = make_plan(
        PlanRequest(
            model=model,
            gpu=gpu,
            dtype=dtype,
            batch=batch,
            context=context,
            tp=tp,
            kv_dtype=kv_dtype,
            achieved_tok_s=achieved_tok_s,
        )
    )
    assert plan.measured is not None
    return plan.measured
