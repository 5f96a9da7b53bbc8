"""The scenarios, by name (the page lists them in this order; `shootout demo NAME`)."""

from __future__ import annotations

from services.core.errors import NotFoundError
from services.demos.base import Scenario


def _all() -> list[Scenario]:
    # services/demos/__init__.py imports this module: the scenarios would bring the parity runner
    # and the tuning jobs (680 modules) to all that imports the package, the run-kind registry too.
    from services.demos.batching import ContinuousBatching
    from services.demos.decode_bound import DecodeBound
    from services.demos.kv_pressure import KvCachePressure
    from services.demos.parallel_sampling import ParallelSampling
    from services.demos.prefix_cache import PrefixCaching
    from services.demos.same_model import SameModel
    from services.demos.slots import HowManySlots
    from services.demos.structured_output import StructuredOutput

    return [
        PrefixCaching(),
        ContinuousBatching(),
        DecodeBound(),
        StructuredOutput(),
        KvCachePressure(),
        ParallelSampling(),
        SameModel(),
        HowManySlots(),
    ]


_SCENARIOS: dict[str, Scenario] = {}


def scenarios() -> list[Scenario]:
    if not _SCENARIOS:
        for scenario in _all():
            _SCENARIOS[scenario.name] = scenario
    return list(_SCENARIOS.values())


def get_scenario(name: str) -> Scenario:
    for scenario in scenarios():
        if scenario.name == name:
            return scenario
    known = ", ".join(s.name for s in scenarios())
    raise NotFoundError(f"No demo scenario {name!r}; the scenarios are: {known}.")
