"""Who may change, stop or steer a run: whoever started it, or an operator.

A run stores who started it in `Run.requested_by` (`limits.run_owner`: a viewer's identity, an
operator's after OPERATOR_OWNER, None from the CLI or an import). Issue 44 found every viewer
offered Cancel, Stop, "Next step" and Pause on anyone's benchmark, exchange, demo, parity or
tuning run, with services that took no viewer at all: each of them now takes the viewer and
refuses anyone else with `NotOwner`, and the pages draw the button only where `may_control`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select

from db.models import Run
from db.session import session_scope
from services.team.access import PermissionDenied
from services.team.limits import OPERATOR_OWNER

if TYPE_CHECKING:
    from services.team.access import Viewer


class NotOwner(PermissionDenied):
    """A viewer tried to change, stop or steer a run that someone else started."""


def may_control(requested_by: str | None, viewer: Viewer | None) -> bool:
    """Whether `viewer` may change, stop or steer a run that `requested_by` started: an
    operator (or the CLI on the server, None) any run, a viewer only their own. A run with no
    requested_by was imported or started from the CLI: the operator's."""
    if viewer is None or viewer.is_operator:
        return True
    return requested_by is not None and requested_by == viewer.identity


def whose(run_id: int, requested_by: str | None) -> str:
    """Who started the run, in words for a refusal."""
    if requested_by is None:
        return f"Run #{run_id} was imported or started on the server"
    if requested_by.startswith(OPERATOR_OWNER):
        return f"Run #{run_id} was started by the operator"
    return f"Run #{run_id} was started by another viewer"


def _owner(run_id: int) -> tuple[bool, str | None]:
    """(whether the run exists, its requested_by)."""
    with session_scope() as session:
        found = session.execute(select(Run.requested_by).where(Run.id == run_id)).first()
    return (False, None) if found is None else (True, found[0])


def may_control_run(run_id: int, viewer: Viewer | None) -> bool:
    """may_control for a stored run (a run that does not exist: nobody's to refuse)."""
    exists, requested_by = _owner(run_id)
    return not exists or may_control(requested_by, viewer)


def require_control(run_id: int, viewer: Viewer | None, doing: str) -> None:
    """Refuse (NotOwner) a viewer who may not `doing` ("cancel it", "stop it") this run. A run
    that does not exist passes: the caller says so in its own words."""
    exists, requested_by = _owner(run_id)
    if exists and not may_control(requested_by, viewer):
        raise NotOwner(
            f"{whose(run_id, requested_by)}; only whoever started it or an operator may {doing}."
        )
