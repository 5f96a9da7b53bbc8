"""What the presenter shows, read from the address of the page they have open: every page
that shows a run, an exchange or a comparison gives it an address already (`?run=12`,
`?exchange=5`, `?compare=12,13&baseline=...`), so one hook in the frame follows them all and no
page needs code of its own (the Planner, which has no address, passes its inputs itself)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import select

from db.models import Run
from db.session import session_scope
from services.core.errors import ShootoutError
from services.runs import parse_run_ids
from services.sessions.records import Shown, ShownKind

#: The run kinds whose own page shows them, and the kind of what a follower then sees.
_PAGE_KINDS: dict[str, ShownKind] = {
    "benchmarks": "run",
    "tune": "run",
    "demos": "demo_step",
    "parity": "parity",
}
_RUN_KINDS: dict[str, ShownKind] = {"playground": "exchange", "demo": "demo_step", "parity": "parity"}


def _first_id(values: Sequence[str]) -> int | None:
    try:
        found = parse_run_ids(values[0]) if values else []
    except ShootoutError:
        return None
    return found[0] if found else None


def shown_for_run(run_id: int) -> Shown | None:
    """A run as followers see it: an exchange, a demo, a parity run or any other run."""
    with session_scope() as db:
        kind = db.scalar(select(Run.kind).where(Run.id == run_id))
    if kind is None:
        return None
    return Shown(kind=_RUN_KINDS.get(kind, "run"), run_ids=(run_id,))


def shown_from_address(page: str, params: Mapping[str, Sequence[str]]) -> Shown | None:
    """What `page` (its url path) shows at this address, None when it shows nothing to share."""
    if page == "playground":
        run_id = _first_id(params.get("exchange", ()))
        return Shown(kind="exchange", run_ids=(run_id,)) if run_id is not None else None
    if page == "runs" and params.get("compare"):
        try:
            ids = tuple(parse_run_ids(list(params["compare"])))
        except ShootoutError:
            return None
        baseline = params.get("baseline", ())
        return (
            Shown(kind="compare", run_ids=ids, baseline=baseline[0] if baseline else None)
            if ids
            else None
        )
    run_id = _first_id(params.get("run", ()))
    if run_id is None:
        return None
    if page == "runs":
        return shown_for_run(run_id)
    kind = _PAGE_KINDS.get(page)
    return Shown(kind=kind, run_ids=(run_id,)) if kind is not None else None
