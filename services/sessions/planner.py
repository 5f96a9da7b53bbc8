"""The Planner's inputs as a session carries them: text by name, read back into a PlanRequest."""

from __future__ import annotations

import dataclasses

from services.planner.plan import PlanRequest
from services.sessions.records import Shown


def planner_shown(request: PlanRequest) -> Shown:
    return Shown(
        kind="planner",
        inputs=tuple(
            (
                field.name,
                "" if getattr(request, field.name) is None else str(getattr(request, field.name)),
            )
            for field in dataclasses.fields(PlanRequest)
        ),
    )


def plan_request(shown: Shown) -> PlanRequest | None:
    """The request the presenter planned; None when the stored inputs do not make one."""
    given = dict(shown.inputs)
    if not given.get("model") or not given.get("gpu"):
        return None
    values: dict[str, object] = {}
    default = PlanRequest(model="", gpu="")
    for field in dataclasses.fields(PlanRequest):
        text = given.get(field.name)
        if text is None:
            continue
        current = getattr(default, field.name)
        try:
            if text == "":
                values[field.name] = None
            elif isinstance(current, bool):
                values[field.name] = text == "True"
            elif isinstance(current, int):
                values[field.name] = int(text)
            elif isinstance(current, float) or field.name == "achieved_tok_s":
                values[field.name] = float(text)
            else:
                values[field.name] = text
        except ValueError:
            return None
    try:
        return PlanRequest(**values)  # type: ignore[arg-type]  # each value converted by its default's type
    except TypeError:
        return None
