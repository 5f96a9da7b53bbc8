"""A Bradley-Terry ranking of engines from pairwise votes, with bootstrap confidence intervals.

The model: engine i beats engine j with probability p_i / (p_i + p_j). Strengths are fitted by
maximum likelihood, by Newton's method on the log-strengths (a handful of steps where Hunter's
MM iteration takes dozens). **A tie counts as half a win for each side** (one comparison), the usual convention (Rao-Kupper or Davidson models a tie rate
of its own; a room's votes are too few for the extra parameter).

Scores are on the Elo scale: 1000 + 400 * log10(p_i) with the strengths of a group normalised
to a geometric mean of 1, so 1000 is the group's average engine and +120 means twice as strong
(2:1 odds). Only engines compared with one another, directly or through others, share a scale:
a comparison graph in pieces is reported as groups (`connected` False), each centred on 1000.

The maximum-likelihood estimate is unbounded when some engines of a group never lost to the
rest of it (an engine that won every vote): the likelihood keeps growing as its score goes to
infinity. Then that group is fitted with one virtual tie added to each pair already compared
(half a win each way), which keeps every score finite; `regularised` says so and `notes` name
the engines that never lost or never won. A group whose estimate exists is fitted as it is.

Confidence intervals: a bootstrap over ballots (a participant's vote on one exchange, all the
pairs it decided together), 200 resamples with a fixed seed, so the same votes always give the
same interval; the 2.5th and 97.5th percentiles of each engine's score, the same estimator
(virtual ties included where a resample's estimate would be unbounded) applied to each resample.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

TIE = "tie"
ELO_BASE = 1000.0
ELO_PER_NEPER = 400.0 / math.log(10.0)
RESAMPLES = 200
SEED = 0
LEVEL = 0.95
MAX_ITERATIONS = 100
TOLERANCE = 1e-10

Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Comparison:
    """One pair decided by one ballot: `winner` is engine_a, engine_b or "tie"."""

    ballot: str
    engine_a: str
    engine_b: str
    winner: str


@dataclass(frozen=True)
class EngineScore:
    engine: str
    score: float
    ci_low: float | None
    ci_high: float | None
    #: Comparisons the engine took part in (a best-of-three ballot is two for its winner).
    votes: int
    #: Its group: engines compared with one another, directly or through others.
    group: int


@dataclass(frozen=True)
class PairCount:
    engine_a: str
    engine_b: str
    wins_a: int
    wins_b: int
    ties: int

    @property
    def votes(self) -> int:
        return self.wins_a + self.wins_b + self.ties


@dataclass(frozen=True)
class Ranking:
    #: Best first within each group; groups in order of their best engine's name.
    scores: list[EngineScore]
    pairs: list[PairCount]
    groups: list[list[str]]
    ballots: int
    regularised: bool = False
    notes: list[str] = field(default_factory=list)
    resamples: int = RESAMPLES
    seed: int = SEED

    @property
    def connected(self) -> bool:
        return len(self.groups) <= 1


def _groups(n: int, compared: npt.NDArray[np.bool_]) -> list[list[int]]:
    seen = [False] * n
    found: list[list[int]] = []
    for start in range(n):
        if seen[start]:
            continue
        seen[start] = True
        members, queue = [], deque([start])
        while queue:
            i = queue.popleft()
            members.append(i)
            for j in np.flatnonzero(compared[i]):
                if not seen[j]:
                    seen[j] = True
                    queue.append(int(j))
        found.append(sorted(members))
    return found


def _reaches_all(members: list[int], edges: npt.NDArray[np.bool_]) -> bool:
    inside = set(members)
    seen, queue = {members[0]}, deque([members[0]])
    while queue:
        i = queue.popleft()
        for j in np.flatnonzero(edges[i]):
            if int(j) in inside and int(j) not in seen:
                seen.add(int(j))
                queue.append(int(j))
    return seen == inside


def bounded(members: list[int], wins: Matrix) -> bool:
    """Whether the maximum-likelihood strengths of a group exist (Ford, 1957): however the
    group is split in two, each side beat (or tied) the other at least once, that is, the
    graph of "i won or tied against j" is strongly connected."""
    beat = wins > 0
    return _reaches_all(members, beat) and _reaches_all(members, beat.T)


def _log_likelihood(theta: npt.NDArray[np.float64], wins: Matrix) -> float:
    difference = theta[:, None] - theta[None, :]
    return float(-(wins * np.logaddexp(0.0, -difference)).sum())


def _newton(wins: Matrix, counts: Matrix, groups: list[list[int]]) -> npt.NDArray[np.float64]:
    """Log-strengths by Newton's method, centred to mean 0 within each group. The likelihood is
    concave in them; its Hessian is minus a weighted graph Laplacian, singular along each
    group's constant vector (a shift changes nothing), hence the pseudo-inverse. A step that
    would lower the likelihood is halved."""
    theta = np.zeros(wins.shape[0])
    current = _log_likelihood(theta, wins)
    for _ in range(MAX_ITERATIONS):
        beats = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
        gradient = wins.sum(axis=1) - (counts * beats).sum(axis=1)
        information = counts * beats * (1.0 - beats)
        laplacian = np.diag(information.sum(axis=1)) - information
        step = np.linalg.pinv(laplacian, hermitian=True) @ gradient
        size = 1.0
        while size > 1e-9:
            trial = theta + size * step
            for members in groups:
                trial[members] -= trial[members].mean()
            tried = _log_likelihood(trial, wins)
            if tried >= current - 1e-12:
                break
            size /= 2.0
        moved = float(np.max(np.abs(trial - theta)))
        theta, current = trial, tried
        if moved < TOLERANCE:
            break
    return theta


def _fit(
    wins: Matrix, counts: Matrix, groups: list[list[int]], compared: Matrix
) -> tuple[Matrix, list[int]]:
    """Elo scores of one data set, and the groups that needed virtual ties."""
    wins, counts = wins.copy(), counts.copy()
    softened: list[int] = []
    for index, members in enumerate(groups):
        if not bounded(members, wins):
            block = np.ix_(members, members)
            wins[block] += 0.5 * compared[block]
            counts[block] += compared[block]
            softened.append(index)
    return ELO_BASE + ELO_PER_NEPER * _newton(wins, counts, groups), softened


def _matrices(
    n: int, rows: npt.NDArray[np.int64], cols: npt.NDArray[np.int64], points: Matrix, weights: Matrix
) -> tuple[Matrix, Matrix]:
    """Wins (i's points against j) and comparison counts from each comparison's row, column,
    points of the row engine, weighted (a bootstrap resample repeats a ballot)."""
    wins = np.zeros((n, n))
    counts = np.zeros((n, n))
    np.add.at(wins, (rows, cols), points * weights)
    np.add.at(wins, (cols, rows), (1.0 - points) * weights)
    np.add.at(counts, (rows, cols), weights)
    np.add.at(counts, (cols, rows), weights)
    return wins, counts


def rank(comparisons: list[Comparison], resamples: int = RESAMPLES, seed: int = SEED) -> Ranking:
    """The Bradley-Terry ranking of every engine in `comparisons` (see the module's text)."""
    for one in comparisons:
        if one.engine_a == one.engine_b or one.winner not in (one.engine_a, one.engine_b, TIE):
            raise ValueError(f"Not a comparison of two engines: {one}")
    if not comparisons:
        return Ranking([], [], [], 0, resamples=resamples, seed=seed)
    names = sorted({c.engine_a for c in comparisons} | {c.engine_b for c in comparisons})
    at = {name: i for i, name in enumerate(names)}
    ballots = sorted({c.ballot for c in comparisons})
    ballot_at = {b: i for i, b in enumerate(ballots)}
    rows = np.array([at[c.engine_a] for c in comparisons], dtype=np.int64)
    cols = np.array([at[c.engine_b] for c in comparisons], dtype=np.int64)
    points = np.array(
        [1.0 if c.winner == c.engine_a else 0.0 if c.winner == c.engine_b else 0.5 for c in comparisons]
    )
    of_ballot = np.array([ballot_at[c.ballot] for c in comparisons], dtype=np.int64)
    n = len(names)
    wins, counts = _matrices(n, rows, cols, points, np.ones(len(comparisons)))
    compared = (counts > 0).astype(float)
    groups = _groups(n, counts > 0)
    scores, softened = _fit(wins, counts, groups, compared)

    rng = np.random.default_rng(seed)
    samples = np.empty((resamples, n))
    for r in range(resamples):
        picked = np.bincount(rng.integers(0, len(ballots), len(ballots)), minlength=len(ballots))
        resampled_wins, resampled_counts = _matrices(
            n, rows, cols, points, picked[of_ballot].astype(float)
        )
        # A group this resample leaves unbounded (or in pieces) gets the virtual ties too.
        samples[r], _ = _fit(resampled_wins, resampled_counts, groups, compared)
    tail = (1.0 - LEVEL) / 2.0 * 100.0
    low: list[float | None] = [None] * n
    high: list[float | None] = [None] * n
    if resamples:
        low = [float(v) for v in np.percentile(samples, tail, axis=0)]
        high = [float(v) for v in np.percentile(samples, 100.0 - tail, axis=0)]

    group_of = {i: g for g, members in enumerate(groups) for i in members}
    per_engine = counts.sum(axis=1)
    results = [
        EngineScore(
            names[i],
            float(scores[i]),
            low[i],
            high[i],
            round(float(per_engine[i])),
            group_of[i],
        )
        for i in range(n)
    ]
    results.sort(key=lambda s: (s.group, -s.score, s.engine))
    pairs = []
    for i in range(n):
        for j in range(i + 1, n):
            if counts[i, j] > 0:
                mask = ((rows == i) & (cols == j)) | ((rows == j) & (cols == i))
                decided = [c for c, m in zip(comparisons, mask, strict=True) if m]
                pairs.append(
                    PairCount(
                        names[i],
                        names[j],
                        sum(c.winner == names[i] for c in decided),
                        sum(c.winner == names[j] for c in decided),
                        sum(c.winner == TIE for c in decided),
                    )
                )
    notes = _notes(names, groups, softened, wins)
    return Ranking(
        results,
        pairs,
        [[names[i] for i in members] for members in groups],
        len(ballots),
        regularised=bool(softened),
        notes=notes,
        resamples=resamples,
        seed=seed,
    )


def _notes(names: list[str], groups: list[list[int]], softened: list[int], wins: Matrix) -> list[str]:
    notes = []
    if len(groups) > 1:
        shown = "; ".join(", ".join(names[i] for i in members) for members in groups)
        notes.append(
            f"The votes compare the engines in {len(groups)} separate groups ({shown}): no vote links "
            "one group to another, so scores compare only within a group (each centred on 1000)."
        )
    for index in softened:
        members = groups[index]
        never_lost = [names[i] for i in members if all(wins[j, i] == 0 for j in members if j != i)]
        never_won = [names[i] for i in members if wins[i, members].sum() == 0]
        who = []
        if never_lost:
            who.append(f"{', '.join(never_lost)} never lost")
        if never_won:
            who.append(f"{', '.join(never_won)} never won")
        detail = f" ({'; '.join(who)})" if who else ""
        notes.append(
            f"Unbounded without help{detail}: the plain Bradley-Terry score of "
            f"{', '.join(names[i] for i in members)} would be infinite, so these scores add one "
            "virtual tie to each pair compared. More votes, with some losses, remove the need."
        )
    return notes
