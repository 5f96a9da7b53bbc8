"""Demo runs: stored like every other run, driven by a worker outside the page script.

A demo is a `Run(kind="demo", name=<scenario>)`:

- `config`: {"scenario", "engines", "options"} (what was measured) and, while it runs,
  "control": {"pause", "released", "stop"} (the presenter's buttons; removed at the end
  so that repeated demos share a config fingerprint);
- `summary`: a summary.DemoSummary (scenario, title, steps, the step awaited, the
  conclusion, verdicts, the engines left out), written as JSON by this module's worker only;
- one `RequestResult` per request, `extra={"step": key, ...labels}`;
- `progress` (0-1), `status`, `heartbeat_at`, `worker_pid`, `error`.

The worker writes only status/progress/summary/heartbeat; the page writes only
config["control"]. Pause: after a step, with control.pause on, the worker waits until
control.released reaches the next step's index ("Next step"). A process-local event
wakes it at once when the page runs in the same process; otherwise it polls the row.

This module starts and runs a demo; control.py has the presenter's buttons, reading.py reads
stored demos back into records.py's records. Their public names are importable from here too,
as the page, the CLI and the tests always have.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

from db.models import Run
from db.session import session_scope
from services.core.errors import NotFoundError, ShootoutError, ValidationError
from services.core.json_types import JsonOut
from services.core.processes import launch_run_worker
from services.demos.base import RawSettings, Scenario, StepOutcome, StepPlan, join_sentences
from services.demos.context import DemoContext, DemoStopped
from services.demos.control import advance, forget_wakeup, set_pause, stop_demo, wakeup
from services.demos.reading import demo_json, demo_result, demo_view, list_demos, wait_until_done
from services.demos.records import (
    DemoConfig,
    DemoControl,
    DemoListItem,
    DemoView,
    EngineSnapshot,
    StepView,
    demo_config,
    engine_from_snapshot,
    engine_snapshot,
)
from services.demos.registry import get_scenario
from services.demos.summary import DemoSummary, StepBlock
from services.engines import endpoints
from services.engines.endpoints import EngineRecord
from services.engines.probe import probe
from services.runstate import lifecycle
from services.runstate.lifecycle import HEARTBEAT_INTERVAL_S, RunKind, RunStatus
from services.team import limits

if TYPE_CHECKING:
    from services.team.access import Viewer

RUN_KIND = RunKind.DEMO
POLL_S = 0.5
MAX_ENGINES = 6


def _utcnow() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------- starting


def resolve_engines(scenario: Scenario, engine_names: Sequence[str] | None) -> list[EngineRecord]:
    """The registered engines of these names; none given: the scenario's defaults that are registered."""
    names = [n.strip() for n in (engine_names or []) if n and n.strip()]
    if not names:
        registered = {e.name for e in endpoints.list_engines()}
        names = [n for n in scenario.default_engines if n in registered]
        if not names:
            raise ValidationError(
                f"Pick the engines for {scenario.title!r}: none of its default engines "
                f"({', '.join(scenario.default_engines)}) is registered."
            )
    if len(set(names)) != len(names):
        raise ValidationError("Each engine may appear once in a demo.")
    if len(names) > MAX_ENGINES:
        raise ValidationError(
            f"A demo takes at most {MAX_ENGINES} engines (it has to fit on one slide)."
        )
    if len(names) < scenario.min_engines:
        raise ValidationError(f"{scenario.title} needs at least {scenario.min_engines} engines.")
    return [endpoints.get_engine(name) for name in names]


def start_demo(
    scenario_name: str,
    engine_names: Sequence[str] | None = None,
    *,
    options: RawSettings | None = None,
    pause_between_steps: bool = False,
    background: bool = True,
    viewer: Viewer | None = None,
) -> int:
    """Store a new demo run and run it: in a worker process (the page) or here (the CLI).
    Returns the run id. Bad names or settings raise before anything is stored."""
    scenario = get_scenario(scenario_name)
    resolved = scenario.resolve_options(options)
    engines = resolve_engines(scenario, engine_names)
    config: DemoConfig = {
        "scenario": scenario.name,
        "engines": [e.name for e in engines],
        "options": dict(resolved),
        "control": {"pause": bool(pause_between_steps), "released": 0, "stop": False},
    }
    models = sorted({e.model for e in engines if e.model})
    # The page's demos share the server; the CLI runs in its own process, outside the limits.
    with (
        limits.admitted("demo", viewer) if background else nullcontext() as requested_by,
        session_scope() as session,
    ):
        run = Run(
            kind=RUN_KIND,
            requested_by=requested_by,
            name=scenario.name,
            status=RunStatus.PENDING,
            config=dict(config),
            summary={"scenario": scenario.name, "title": scenario.title, "steps": [], "awaiting": None},
            engines=[engine_snapshot(e) for e in engines],
            engine_names=",".join(e.name for e in engines),
            model=models[0] if len(models) == 1 else None,
            workload=f"demo:{scenario.name}",
            progress=0.0,
            tags=["demo"],
        )
        session.add(run)
        session.flush()
        run_id = run.id
    if background:
        # A worker process, as benchmarks have: the demo timestamps tokens, and in the
        # Streamlit server its reader would wait on the GIL behind every page run.
        pid = launch_run_worker(RunKind.DEMO, run_id)
        with session_scope() as session:
            stored = session.get(Run, run_id)
            if stored is not None and stored.worker_pid is None:
                stored.worker_pid = pid
        return run_id
    # The CLI waits here (it is its own process already). A thread of its own all the same:
    # the worker runs event loops, and the caller's thread may already run one.
    # Waited for on an Event, not Thread.join: a join that Ctrl-C interrupts returns at once
    # from then on (CPython 3.11), which left the demo "running" when the CLI exited.
    done = threading.Event()

    def body() -> None:
        try:
            run_demo(run_id)
        finally:
            done.set()

    threading.Thread(target=body, name=f"demo-{run_id}", daemon=True).start()
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        stop_demo(run_id)  # Ctrl-C: stop after the requests in flight, keep what was measured
        done.wait(timeout=60)
        raise
    return run_id


# ---------------------------------------------------------------- the worker


class _Writer:
    """The worker's writes to its run row (and its heartbeat)."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.lock = threading.Lock()
        #: The steps as they measure: the scenarios' context fills these mappings in place.
        self.steps: list[StepBlock] = []
        #: Everything else of the summary (start_demo's scenario and title, then the worker's parts).
        self.summary = DemoSummary()
        self._beat_stop = threading.Event()
        self._beat: threading.Thread | None = None

    def write(self, progress: float | None = None) -> None:
        with self.lock, session_scope() as session:
            run = session.get(Run, self.run_id)
            if run is None:
                raise DemoStopped()  # deleted under us
            run.summary = self.summary_json()
            if progress is not None:
                run.progress = progress
            lifecycle.beat(self.run_id, session)

    def summary_json(self) -> JsonOut:
        return replace(self.summary, steps=[step.copy() for step in self.steps]).to_json()

    def control(self) -> DemoControl:
        with session_scope() as session:
            run = session.get(Run, self.run_id)
            if run is None:
                return {"stop": True}
            return (demo_config(run.config).get("control") or {}).copy()

    def heartbeat(self) -> None:
        with self.lock:
            lifecycle.beat(self.run_id)

    def start_heartbeat(self) -> None:
        def beat() -> None:
            while not self._beat_stop.wait(HEARTBEAT_INTERVAL_S):
                # A missed beat (a locked database) is retried at the next one.
                with contextlib.suppress(Exception):
                    self.heartbeat()

        self._beat = threading.Thread(target=beat, name=f"demo-heartbeat-{self.run_id}", daemon=True)
        self._beat.start()

    def stop_heartbeat(self) -> None:
        self._beat_stop.set()


def _reachable(engines: list[EngineRecord]) -> tuple[list[EngineRecord], dict[str, str], dict[str, str]]:
    """Engines that answer, the ones that do not (with why) and the versions seen."""
    answering: list[EngineRecord] = []
    skipped: dict[str, str] = {}
    versions: dict[str, str] = {}
    for engine in engines:
        try:
            result = probe(engine.base_url, engine.api_key_env, timeout_s=5.0)
        except ShootoutError as error:
            skipped[engine.name] = str(error)
            continue
        if result.state in ("unreachable", "bad_config", "not_openai", "auth_required"):
            skipped[engine.name] = result.message
            continue
        if result.version:
            versions[engine.name] = result.version
        answering.append(engine)
    return answering, skipped, versions


def run_demo(run_id: int) -> None:
    """The worker body: plan the steps, run them one by one (waiting between them when
    the presenter asked to), write each step as it measures, then the conclusion."""
    writer = _Writer(run_id)
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"No demo run #{run_id}.")
        config = demo_config(run.config)
        # Written by start_demo: EngineSnapshot each.
        snapshots = cast(list[EngineSnapshot], list(run.engines or []))
        writer.summary = DemoSummary.from_json(run.summary)
    if not lifecycle.claim(run_id):
        return  # started twice, or ended before its worker got going
    status, error = RunStatus.FAILED, None
    writer.start_heartbeat()
    try:
        status = _measure(writer, config, snapshots)
    except DemoStopped:
        status, error = (
            RunStatus.CANCELLED,
            "Stopped by the presenter; the steps measured so far are kept.",
        )
        writer.summary = replace(writer.summary, awaiting=None)
        for step in writer.steps:
            if step["status"] == "running":
                step["status"] = "cancelled"
    except ShootoutError as failure:
        status, error = RunStatus.FAILED, str(failure)
        writer.summary = replace(writer.summary, awaiting=None)
    except Exception as failure:  # noqa: BLE001 - the run must end in a stored state, never "running"
        status, error = RunStatus.FAILED, f"Unexpected error: {type(failure).__name__}: {failure}"
        writer.summary = replace(writer.summary, awaiting=None)
    finally:
        writer.stop_heartbeat()
        for step in writer.steps:
            if step["status"] in ("pending", "running"):
                step["status"] = "skipped" if step["status"] == "pending" else "failed"
        try:
            _finish(writer, status, error)
        finally:
            forget_wakeup(run_id)


def _measure(writer: _Writer, config: DemoConfig, snapshots: list[EngineSnapshot]) -> RunStatus:
    """Run the scenario's steps on the engines that answer, then write its conclusion; the
    demo's end state (finished, or finished with errors). Raises when nothing was measured."""
    scenario = get_scenario(str(config.get("scenario")))
    options = scenario.resolve_options(config.get("options"))
    engines = [engine_from_snapshot(item) for item in snapshots]
    answering, skipped, versions = _reachable(engines)
    writer.summary = replace(writer.summary, skipped_engines=skipped, engine_versions=versions)
    if not answering:
        reasons = "; ".join(f"{name}: {why}" for name, why in skipped.items())
        raise ShootoutError(f"No engine answered, nothing was measured ({reasons}).")
    plans = scenario.plan(answering, options)
    writer.steps = [_pending_step(plan) for plan in plans]
    writer.write()
    context = DemoContext(
        writer.run_id, answering, options, should_stop=lambda: bool(writer.control().get("stop"))
    )
    context.steps = writer.steps
    for index, plan in enumerate(plans):
        if index > 0:
            _wait_for_release(writer, index)
        _run_step(writer, context, plan, index, len(plans))
    finished = [s for s in writer.steps if s["status"] == "finished"]
    if not finished:
        raise ShootoutError(
            "Every step failed: " + "; ".join(e for s in writer.steps for e in s.get("errors", []))
        )
    conclusion = scenario.conclude(writer.steps, [e.name for e in answering], options)
    lines = list(conclusion.lines)
    lines.extend(f"{name} was left out: {why}" for name, why in skipped.items())
    writer.summary = replace(
        writer.summary,
        conclusion=join_sentences([conclusion.headline, *lines]),
        conclusion_headline=conclusion.headline,
        conclusion_lines=lines,
        verdicts={name: verdict.to_json() for name, verdict in conclusion.verdicts.items()},
        awaiting=None,
    )
    had_errors = bool(skipped) or any(s["status"] != "finished" or s.get("errors") for s in writer.steps)
    return RunStatus.FINISHED_WITH_ERRORS if had_errors else RunStatus.FINISHED


def _pending_step(plan: StepPlan) -> StepBlock:
    return {
        "key": plan.key,
        "title": plan.title,
        "explanation": plan.explanation,
        "status": "pending",
        "numbers": [],
        "chart": None,
        "finding": "",
        "data": {},
        "errors": [],
    }


def _run_step(writer: _Writer, context: DemoContext, plan: StepPlan, index: int, total: int) -> None:
    """One step, written as it measures; a step that fails keeps its error and the demo goes on."""
    step = writer.steps[index]

    def publish(outcome: StepOutcome) -> None:
        step.update(outcome.to_dict())
        writer.write()

    context.begin_step(plan.key, publish)
    context.check_stop()
    step.update({"status": "running", "started_at": _utcnow().isoformat()})
    writer.write(progress=index / total)
    try:
        outcome = plan.run(context)
    except DemoStopped:
        raise
    except ShootoutError as failure:
        step.update({"status": "failed", "finished_at": _utcnow().isoformat()})
        step["errors"] = [*step.get("errors", []), str(failure)]
        writer.write(progress=(index + 1) / total)
        return
    except Exception as failure:  # noqa: BLE001 - one broken step must not lose the others
        step.update({"status": "failed", "finished_at": _utcnow().isoformat()})
        step["errors"] = [
            *step.get("errors", []),
            f"Unexpected error: {type(failure).__name__}: {failure}",
        ]
        writer.write(progress=(index + 1) / total)
        return
    step.update(outcome.to_dict())
    step.update({"status": "finished", "finished_at": _utcnow().isoformat()})
    writer.write(progress=(index + 1) / total)


def _finish(writer: _Writer, status: RunStatus, error: str | None) -> None:
    with writer.lock, session_scope() as session:
        run = session.get(Run, writer.run_id)
        if run is None:
            return
        run.summary = writer.summary_json()
        config = dict(run.config or {})
        config.pop("control", None)
        run.config = config
        # A stopped or failed demo's bar stays at the steps it measured.
        complete = status in (RunStatus.FINISHED, RunStatus.FINISHED_WITH_ERRORS)
        lifecycle.finish(
            writer.run_id,
            status,
            error=error,
            progress=1.0 if complete else lifecycle.KEEP,
            session=session,
        )


def _wait_for_release(writer: _Writer, index: int) -> None:
    if _released(writer, index):
        return
    writer.summary = replace(writer.summary, awaiting=index)
    writer.write()
    event = wakeup(writer.run_id)
    while True:
        event.wait(POLL_S)
        event.clear()
        if _released(writer, index):
            break
    writer.summary = replace(writer.summary, awaiting=None)
    writer.write()


def _released(writer: _Writer, index: int) -> bool:
    """Whether step `index` may run (no pause, or the presenter released it); Stop raises."""
    control = writer.control()
    if control.get("stop"):
        raise DemoStopped()
    return not control.get("pause") or int(control.get("released", 0)) >= index


__all__ = [
    "DemoListItem",
    "DemoView",
    "StepView",
    "advance",
    "demo_json",
    "demo_result",
    "demo_view",
    "list_demos",
    "run_demo",
    "set_pause",
    "start_demo",
    "stop_demo",
    "wait_until_done",
]
