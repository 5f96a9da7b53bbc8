"""The Benchmarks page's form: its choices and titles, the spec a filled form describes,
an uploaded prompt file kept with the app's data, and starting the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from services import local_engines
from services.bench import form, jobs
from services.bench.arrivals import ARRIVAL_PROCESSES
from services.bench.load import Placement
from services.bench.runner.transports import transport_for
from services.bench.spec import BenchSpec
from services.bench.workloads import LENGTH_DISTRIBUTIONS, TRACE_ATTRIBUTION, TRACES
from services.bench.workloads.prompt_files import store_upload
from services.core.config import get_settings
from services.core.json_types import ForeignJson
from services.engines.endpoints import default_picks, list_engines
from services.team import access

if TYPE_CHECKING:
    from services.team.access import Viewer

WORKLOAD_TITLES = {
    "synthetic": "Synthetic prompts",
    "long_prompt": "Long prompts, short answers (prefill)",
    "shared_prefix": "Shared prefixes (prefix cache)",
    "multi_turn": "Multi-turn conversations",
    "structured": "Structured output (JSON schema)",
    "file": "Prompts from a JSONL file",
    "trace": "Azure production trace",
}
LOAD_TITLES = {
    "concurrency": "Closed loop: fixed concurrency",
    "rate": "Open loop: request rate",
    "trace": "Trace replay: real arrival times",
}
SWEEP_TITLES = {
    "none": "Single load level",
    "concurrency": "Sweep the concurrency",
    "rate": "Sweep the request rate",
    "slo_search": "Search the highest load meeting the SLOs",
}


@dataclass(frozen=True)
class FormOptions:
    engines: list[str]
    #: The engines the form starts with: the same pick as the Playground's and Parity's.
    default_engines: list[str] = field(default_factory=list)
    workloads: dict[str, str] = field(default_factory=lambda: dict(WORKLOAD_TITLES))
    loads: dict[str, str] = field(default_factory=lambda: dict(LOAD_TITLES))
    sweeps: dict[str, str] = field(default_factory=lambda: dict(SWEEP_TITLES))
    length_dists: tuple[str, ...] = LENGTH_DISTRIBUTIONS
    traces: tuple[str, ...] = tuple(TRACES)
    arrivals: tuple[str, ...] = ARRIVAL_PROCESSES
    search_over: tuple[str, ...] = ("rate", "concurrency")
    trace_attribution: str = TRACE_ATTRIBUTION
    #: The widgets' initial values: the same defaults as `shootout bench`'s.
    defaults: form.BenchForm = field(default_factory=form.BenchForm)
    suggested_duration_s: float = form.SUGGESTED_DURATION_S

    @property
    def sweep_levels_text(self) -> str:
        return ", ".join(f"{level:g}" for level in self.defaults.sweep_values)

    @property
    def workers_text(self) -> str:
        return form.workers_text(self.defaults.workers)


def form_options() -> FormOptions:
    engines = list_engines()
    return FormOptions(engines=[e.name for e in engines], default_engines=default_picks(engines))


def spec_from_form(values: ForeignJson) -> BenchSpec:
    """The validated spec of the page's widget values (ValidationError with a message for the user)."""
    return form.to_spec(form.from_widgets(values))


def save_prompt_file(name: str, content: bytes) -> str:
    """Keep an uploaded JSONL prompt file with the app's data (checked before it is written,
    0600, expired: services/bench/workloads/prompt_files.py); returns its path."""
    return str(store_upload(get_settings().data_dir / "workloads", name, content))


def submit(values: ForeignJson, viewer: Viewer | None = None) -> int:
    """Validate a filled form and start its run in a worker; returns the run id. A viewer's
    prompt file must be one they uploaded: a path on the server is an operator's to name.
    The widget values (the page's, untyped) are read once, into the form."""
    filled = form.from_widgets(values)
    prompts_file = filled.prompts_file.strip()
    if viewer is not None and prompts_file and filled.workload == "file":
        uploads = (get_settings().data_dir / "workloads").resolve()
        if Path(prompts_file).resolve().parent != uploads:
            access.require(viewer, "read_server_paths")
    spec = form.to_spec(filled)
    if spec.ray_address and viewer is not None:
        access.require(viewer, "fetch_urls")  # the server connects to the address a viewer named
    placement = Placement(spec.workers, spec.ray_address)
    transport_for(placement).check(placement)
    return jobs.start_benchmark(spec, viewer=viewer)


def shared_cores_note(engine_names: list[str], together: bool) -> str | None:
    """What the form says when the chosen engines include local ones: they share this
    machine's cores, with each other when they run together, and with the others running."""
    local_ids = {engine.name: engine.local_id for engine in list_engines()}
    return local_engines.shared_cores_note((local_ids.get(n) for n in engine_names), together)
