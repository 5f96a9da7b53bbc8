"""The stored run's engine entries (Run.engines) as a typed record, read once where a run is read.

Run.engines holds one object per engine, as the run found it: services/bench/jobs (the
registry's record, then `reported`), services/importers/common.engine_snapshot (what another
tool's file said) and the demos' runner write them. A run of any version may lack any key, so
every key is optional; `reported` and `info` are the engine's and the probe's own words.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from services.core.json_types import ForeignJson


class StoredEngine(TypedDict, total=False):
    """One entry of Run.engines."""

    name: str
    kind: str | None
    model: str | None
    #: The engine's version where the run's probe read one (else `reported` may say).
    version: str | None
    base_url: str | None
    #: What the engine reported of itself (services/engines/reported.py), per endpoint.
    reported: ForeignJson
    #: The probe's findings (EngineRecord.info), or an import's note of where it came from.
    info: ForeignJson


def stored_engines(value: Any) -> list[StoredEngine]:
    """The entries of a stored Run.engines that are objects (anything else: none)."""
    if not isinstance(value, list):
        return []
    # The one boundary: each entry an object some version of Shootout wrote.
    return [cast(StoredEngine, item) for item in value if isinstance(item, dict)]


def engines_by_name(value: Any) -> dict[str, StoredEngine]:
    """A stored Run.engines as name -> entry (entries without a name left out)."""
    return {str(item["name"]): item for item in stored_engines(value) if item.get("name")}


def engine_named(value: Any, name: str) -> StoredEngine | None:
    """The first entry of a stored Run.engines with this name."""
    return next((item for item in stored_engines(value) if item.get("name") == name), None)


class StoredWorkload(TypedDict, total=False):
    """A benchmark's stored workload (WorkloadSpec as stored): the keys its readers take."""

    kind: str
    input_len: float
    output_len: float
    prefix_len: float
    fixed_output: bool


class StoredLoad(TypedDict, total=False):
    """A benchmark's stored load (LoadSpec as stored): the keys its readers take."""

    mode: str
    concurrency: float
    rate: float
    trace_speed: float
    warmup_requests: float


class StoredTarget(TypedDict, total=False):
    """One engine of a benchmark's stored spec (EngineTarget as stored)."""

    name: str
    kind: str


class StoredBenchConfig(TypedDict, total=False):
    """A benchmark's Run.config (BenchSpec.to_dict(), of this version or an older one): the
    keys read outside the spec itself. Any key may be missing; others stay in the object."""

    workload: StoredWorkload
    load: StoredLoad
    engines: list[StoredTarget]
    #: None: the engine's default temperature.
    temperature: float | None


#: The parts of a stored benchmark config that are objects, and the one that is a list.
_CONFIG_OBJECTS = ("workload", "load")


def bench_config(value: Any) -> StoredBenchConfig:
    """A stored benchmark config, its parts of the wrong type left out (an odd or hand-edited
    run: a part that is not an object reads as absent); the rest as stored, never copied deep."""
    if not isinstance(value, dict):
        return StoredBenchConfig()
    config = {
        key: part
        for key, part in value.items()
        if not (key in _CONFIG_OBJECTS and not isinstance(part, dict))
        and not (key == "engines" and not isinstance(part, list))
    }
    if isinstance(config.get("engines"), list):
        config["engines"] = [target for target in config["engines"] if isinstance(target, dict)]
    # The one boundary: every declared part now has its declared shape.
    return cast(StoredBenchConfig, config)
