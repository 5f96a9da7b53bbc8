"""The ranking of engines from every stored blind vote (services/votes/bradley_terry.py).

A ballot is one participant's vote on one exchange: the bootstrap resamples ballots, since the
pairs one ballot decided were decided together. The ranking is kept for the votes it was
computed from (their count and newest id), so a page that redraws does not refit it.
"""

from __future__ import annotations

import threading

from sqlalchemy import func, select

from db.models import Vote
from db.session import session_scope
from services.core.config import get_settings
from services.runstate import blind
from services.votes.bradley_terry import TIE, Comparison, Ranking, rank

_cache: dict[tuple[str, int | None, int, int], Ranking] = {}
_lock = threading.Lock()


def engine_ranking(session_id: int | None = None) -> Ranking:
    """The Bradley-Terry ranking of engines from every stored vote (or only those cast in team
    demo session `session_id`), with bootstrap intervals and the votes per pair."""
    where = [blind.votes_shown_clause()]
    if session_id is not None:
        where.append(Vote.session_id == session_id)
    with session_scope() as session:
        count, newest = session.execute(select(func.count(), func.max(Vote.id)).where(*where)).one()
        key = (get_settings().database_url, session_id, int(count), int(newest or 0))
        with _lock:
            known = _cache.get(key)
        if known is not None:
            return known
        rows = session.execute(
            select(Vote.run_id, Vote.voter, Vote.engine_a, Vote.engine_b, Vote.winner)
            .where(*where)
            .order_by(Vote.id)
        ).all()
    comparisons = [
        Comparison(f"{run_id}:{voter}", engine_a, engine_b, winner)
        for run_id, voter, engine_a, engine_b, winner in rows
        if engine_a != engine_b and winner in (engine_a, engine_b, TIE)
    ]
    found = rank(comparisons)
    with _lock:
        if len(_cache) > 32:  # a few sessions' rankings at most; start afresh rather than grow
            _cache.clear()
        _cache[key] = found
    return found
