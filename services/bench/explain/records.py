"""What an explanation reads (a `Side`: one engine's stored results and what the run knew of it)
and what it says (an `Explanation` of one gap: its guard, or its claims with their numbers, the
engine's own metric, coverage and share of the gap, and what no claim accounts for)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from services.bench.results import EngineResults
from services.core.json_types import ForeignJson, JsonOut

#: guarded: a reason not to explain this gap (not comparable, within noise, client-bound...);
#: explained: at least one claim; not_explained: evidence read, no part large enough to name;
#: not_known: the evidence an explanation needs was not recorded.
Status = Literal["guarded", "explained", "not_explained", "not_known"]


@dataclass(frozen=True)
class Side:
    """One engine of a comparison, as stored: its results and what the run knew around them."""

    label: str
    results: EngineResults
    #: Its engine kind ("vllm", "llamacpp"...): None for an import or an unknown server.
    kind: str | None = None
    model: str | None = None
    #: The generator could not keep the load it was asked for (services/bench/selfcheck.py).
    client_bound: bool = False
    #: Its engines ran together on one machine (each slowed the others).
    ran_together: bool = False
    #: What the engine reported of itself (services/engines/reported.py).
    reported: ForeignJson = field(default_factory=dict)
    #: The command line Shootout launched it with ([] when it did not launch it).
    command: Sequence[str] = ()
    #: Its engine restarted during the run (a counter went down); None: not known.
    restarted: bool | None = None


@dataclass(frozen=True)
class Claim:
    """One cause with its evidence: a sentence carrying its numbers, the engine's own metric,
    the coverage and the share of the gap it accounts for (None: a cause that is not a part of
    the gap's time, such as batch width behind a throughput)."""

    cause: str
    sentence: str
    share: float | None
    metric: str
    coverage: str
    evidence: dict[str, float | str | None] = field(default_factory=dict)

    def to_json(self) -> JsonOut:
        return {
            "cause": self.cause,
            "sentence": self.sentence,
            "share": self.share,
            "metric": self.metric,
            "coverage": self.coverage,
            "evidence": dict(self.evidence),
        }


@dataclass(frozen=True)
class Explanation:
    """Why `winner` beat `loser` on `metric`, or why that is not said. Never changes a verdict."""

    metric: str
    winner: str
    loser: str
    status: Status
    #: The gap explained (loser's mean minus winner's for a time; winner's over loser's for a rate).
    gap: float | None = None
    claims: tuple[Claim, ...] = ()
    #: The share of the gap no claim accounts for (None where shares do not apply).
    unattributed: float | None = None
    #: A guard's or a missing evidence's one-line reason; a confounder named, never credited.
    reason: str = ""
    confounders: tuple[str, ...] = ()
    #: Parts that went the other way (the winner's was longer), large enough to say.
    offsets: tuple[str, ...] = ()

    @property
    def sentences(self) -> list[str]:
        """At most two sentences: the reason, or the claims (the unattributed share on the last)."""
        if self.status != "explained":
            return [self.reason] if self.reason else []
        said = [claim.sentence for claim in self.claims[:2]]
        if self.unattributed is not None and self.unattributed >= 0.05 and said:
            said[-1] = said[-1].rstrip(".") + f"; {self.unattributed:.0%} of the gap is not attributed."
        if self.offsets and said:
            said[-1] = said[-1].rstrip(".") + f"; offset in part: {'; '.join(self.offsets)}."
        if self.confounders and said:
            said[-1] = said[-1].rstrip(".") + f" (not credited: {'; '.join(self.confounders)})."
        return said

    @property
    def text(self) -> str:
        return " ".join(self.sentences)

    def to_json(self) -> JsonOut:
        return {
            "metric": self.metric,
            "winner": self.winner,
            "loser": self.loser,
            "status": self.status,
            "gap": self.gap,
            "text": self.text,
            "claims": [claim.to_json() for claim in self.claims],
            "unattributed": self.unattributed,
            "reason": self.reason,
            "confounders": list(self.confounders),
            "offsets": list(self.offsets),
        }
