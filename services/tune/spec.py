"""What a tuning run sweeps: an engine kind, its base settings, a grid (or list) of settings,
one workload and load, SLOs, and where the engine is started.

Settings are named by short keys (`np`, `ctk`, `max-num-seqs`...) from a per-kind catalogue
that knows each one's flag and checks its value, so the page can offer them without letting
a browser type a command line. Each kind declares its catalogue and local defaults in its own
package (`services/engines/<kind>/tuning.py`); `tunings()` finds them. A key that starts with
`-` is a raw flag passed as given: only trusted callers (the CLI, or an operator on a server
started with SHOOTOUT_ALLOW_COMMANDS=1) may use raw flags or command templates
(`TuneSpec.validate(trusted=...)`).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec, EngineTarget, SweepSpec, _build
from services.bench.stats import SloSpec
from services.bench.workloads import WorkloadSpec
from services.core import cost
from services.core.errors import ValidationError
from services.core.json_types import JsonOut
from services.engines.registry import kind_parts
from services.engines.tuning import KindTuning, Setting
from services.local_engines import backend_names

__all__ = ["KindTuning", "Setting", "TuneSpec"]

MAX_CONFIGS = 64
LAUNCHERS = ("local", "command")


def tunings() -> dict[str, KindTuning]:
    """Every kind whose package has a `tuning.py`: those the local launcher starts first, in
    the local engines' order (the page's default is the first), then the others by name."""
    found: dict[str, KindTuning] = {}
    for kind, module in kind_parts("tuning"):
        tuning = module.TUNING
        if not isinstance(tuning, KindTuning) or tuning.kind != kind:
            raise TypeError(
                f"services/engines/{kind}/tuning.py must define TUNING = KindTuning({kind!r}, ...)."
            )
        found[kind] = tuning
    local = _local_kinds(found)
    return {kind: found[kind] for kind in (*local, *sorted(set(found) - set(local)))}


def _local_kinds(tunable: Mapping[str, KindTuning]) -> tuple[str, ...]:
    return tuple(name for name in backend_names() if name in tunable)


def local_kinds() -> tuple[str, ...]:
    """Kinds the local launcher starts on this machine (those with a local backend); every
    kind can be started by templates."""
    return _local_kinds(tunings())


def catalogue() -> dict[str, tuple[Setting, ...]]:
    """Each tunable kind's settings."""
    return {kind: tuning.settings for kind, tuning in tunings().items()}


def setting(kind: str, key: str) -> Setting | None:
    return next((s for s in catalogue().get(kind, ()) if s.key == key), None)


def is_raw(key: str) -> bool:
    return key.startswith("-")


def check_value(kind: str, key: str, value: str, *, trusted: bool) -> str:
    """The value as it will be passed; ValidationError naming the setting when it is wrong."""
    value = str(value).strip()
    if is_raw(key):
        if not trusted:
            raise ValidationError(
                f"Raw flag {key!r}: only the CLI, or an operator on a server started with "
                "SHOOTOUT_ALLOW_COMMANDS=1, may pass flags outside the catalogue."
            )
        if not re.fullmatch(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*", key):
            raise ValidationError(f"{key!r} does not look like a command-line flag.")
        return value
    found = setting(kind, key)
    if found is None:
        known = ", ".join(s.key for s in catalogue().get(kind, ()))
        raise ValidationError(f"{kind} has no setting {key!r}; the settings are: {known}.")
    try:
        return found.check(value)
    except ValidationError as error:
        raise ValidationError(f"Setting {key}: {error}.") from None


def setting_args(kind: str, settings: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """(command-line arguments, environment) for checked settings, in the order given."""
    args: list[str] = []
    env: dict[str, str] = {}
    for key, value in settings.items():
        if is_raw(key):
            if value.lower() in ("", "true", "on"):
                args.append(key)
            elif value.lower() not in ("false", "off"):
                args.extend([key, value])
            continue
        found = setting(kind, key)
        if found is None:
            continue
        if found.env:
            env[found.env] = value
        elif found.switch:
            flag = found.flag if value == "on" else found.off_flag
            if flag:
                args.append(flag)
        else:
            args.extend([found.flag, value])
    return args, env


def config_label(settings: Mapping[str, str]) -> str:
    """A configuration's name everywhere (tables, charts, Runs): its varied settings."""
    return " ".join(f"{k}={v}" for k, v in settings.items()) or "base"


@dataclass(frozen=True)
class TuneSpec:
    kind: str = "llamacpp"
    #: Settings every configuration starts from (the configuration's own override them).
    base: dict[str, str] = field(default_factory=dict)
    #: A grid: every combination of these values (key -> values), in the order given.
    grid: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Or an explicit list of configurations (used when given; the grid is then ignored).
    configs: tuple[dict[str, str], ...] = ()
    workload: WorkloadSpec = field(default_factory=lambda: WorkloadSpec(input_len=32, output_len=16))
    load: LoadSpec = field(default_factory=lambda: LoadSpec(concurrency=2, requests=8))
    sweep: SweepSpec = field(default_factory=SweepSpec)
    slo: SloSpec = field(default_factory=SloSpec)
    launcher: str = "local"
    #: Command templates ({port}, {args}, {name}); the launcher "command" only.
    start_command: str = ""
    stop_command: str = ""
    #: Where the started engine answers (templates with {port}); health is GET health_url -> 200.
    base_url: str = "http://127.0.0.1:{port}"
    health_url: str = "{base_url}/health"
    model: str | None = None
    start_timeout_s: float = 120.0
    request_timeout_s: float = 120.0
    name: str = ""
    notes: str = ""
    #: Dollars per hour of the GPUs every configuration runs on (services/core/cost.py); None: not priced.
    usd_per_hour: float | None = None

    # -- the configurations ---------------------------------------------------------------
    def expanded(self) -> list[dict[str, str]]:
        """Every configuration's own settings (without the base), in sweep order."""
        if self.configs:
            return [dict(c) for c in self.configs]
        if not self.grid:
            return [{}]
        keys = list(self.grid)
        return [
            dict(zip(keys, values, strict=True))
            for values in itertools.product(*(self.grid[k] for k in keys))
        ]

    def full_settings(self, own: Mapping[str, str]) -> dict[str, str]:
        """What one configuration passes: the launcher's defaults, the base, then its own."""
        tuning = tunings().get(self.kind)
        defaults = dict(tuning.local_defaults) if tuning and self.launcher == "local" else {}
        return {**defaults, **self.base, **own}

    # -- validation -----------------------------------------------------------------------
    def validate(self, *, trusted: bool) -> TuneSpec:
        known = tunings()
        if self.kind not in known:
            raise ValidationError(f"Unknown engine kind {self.kind!r}; tuning knows {', '.join(known)}.")
        if self.launcher not in LAUNCHERS:
            raise ValidationError(f"Unknown launcher {self.launcher!r}; choose local or command.")
        if self.launcher == "local" and self.kind not in _local_kinds(known):
            raise ValidationError(
                f"{self.kind} does not run on this machine; start it with command templates "
                "(--start-command) instead."
            )
        if self.launcher == "command":
            if not trusted:
                raise ValidationError(
                    "Command templates run programs on the server: only the CLI, or an operator on "
                    "a server started with SHOOTOUT_ALLOW_COMMANDS=1, may use them."
                )
            if not self.start_command.strip():
                raise ValidationError(
                    "The command launcher needs a start command template (with {port})."
                )
            if "{port}" not in self.start_command + self.base_url:
                raise ValidationError(
                    "The start command or the base URL must place the engine on {port}."
                )
        if not self.base_url.startswith(("http://", "https://")):
            raise ValidationError("The engine's base URL must start with http:// or https://.")
        base = {k: check_value(self.kind, k, v, trusted=trusted) for k, v in self.base.items()}
        grid = {}
        for key, values in self.grid.items():
            if not values:
                raise ValidationError(f"Setting {key} has no values to try.")
            grid[key] = tuple(
                dict.fromkeys(check_value(self.kind, key, v, trusted=trusted) for v in values)
            )
        configs = tuple(
            {k: check_value(self.kind, k, v, trusted=trusted) for k, v in c.items()}
            for c in self.configs
        )
        checked = replace(self, base=base, grid=grid, configs=configs)
        count = len(checked.expanded())
        if count > MAX_CONFIGS:
            raise ValidationError(
                f"The grid has {count} configurations; a tuning run tries at most {MAX_CONFIGS}."
            )
        labels = [config_label(c) for c in checked.expanded()]
        if len(set(labels)) != len(labels):
            raise ValidationError("Two configurations are the same; list each once.")
        if not 5 <= self.start_timeout_s <= 3600:
            raise ValidationError("The start-up timeout is between 5 and 3,600 seconds.")

        # The load, workload, sweep and SLOs are checked exactly as a benchmark's are.
        probe = BenchSpec(
            engines=(EngineTarget("probe", "http://127.0.0.1:1"),),
            workload=self.workload,
            load=self.load,
            slo=self.slo,
            sweep=self.sweep,
            timeout_s=self.request_timeout_s,
        ).validate()
        price = cost.parse_usd_per_hour(self.usd_per_hour)
        return replace(checked, workload=probe.workload, load=probe.load, usd_per_hour=price)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        varied = (
            ", ".join(f"{k} {'/'.join(v)}" for k, v in self.grid.items())
            or f"{len(self.expanded())} configurations"
        )
        return f"Tune {self.kind}: {varied}"

    # -- storage --------------------------------------------------------------------------
    def to_dict(self) -> JsonOut:
        data: JsonOut = dataclasses.asdict(self)
        data["grid"] = {k: list(v) for k, v in self.grid.items()}
        data["configs"] = [dict(c) for c in self.configs]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TuneSpec:
        scalars = {f.name for f in dataclasses.fields(cls)} - {
            "base",
            "grid",
            "configs",
            "workload",
            "load",
            "sweep",
            "slo",
        }
        return cls(
            base={str(k): str(v) for k, v in (data.get("base") or {}).items()},
            grid={
                str(k): tuple(str(v) for v in values) for k, values in (data.get("grid") or {}).items()
            },
            configs=tuple({str(k): str(v) for k, v in c.items()} for c in data.get("configs") or ()),
            workload=_build(WorkloadSpec, data.get("workload") or {}),
            load=_build(LoadSpec, data.get("load") or {}),
            sweep=_build(SweepSpec, data.get("sweep") or {}),
            slo=_build(SloSpec, data.get("slo") or {}),
            **{k: v for k, v in data.items() if k in scalars},
        )


def parse_set(text: str) -> tuple[str, tuple[str, ...]]:
    """`np=1,2,4` -> ("np", ("1", "2", "4")); the CLI's --set and the page's grid lines."""
    key, sep, values = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValidationError(f"Expected SETTING=VALUE[,VALUE...], got {text!r}.")
    parts = tuple(v.strip() for v in values.split(",") if v.strip())
    if not parts:
        raise ValidationError(f"Setting {key} has no values to try.")
    return key, parts
