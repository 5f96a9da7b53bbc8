"""Demo runs: stored like every other run, driven by a worker outside the page script.

A demo is a `Run(kind="demo", name=<scenario>)`:

- `config`: {"scenario", "engines", "options"} (what was measured) and, while it runs,
  "control": {"pause", "released", "stop"} (the presenter's buttons; removed at the end
  so that repeated demos share a config fingerprint);
- `summary`: {"scenario", "title", "steps": [...], "awaiting": index or None,
  "conclusion": text, "verdicts": {engine: {...}}, "skipped_engines": {...}};
- one `RequestResult` per request, `extra={"step": key, ...labels}`;
- `progress` (0-1), `status`, `heartbeat_at`, `worker_pid`, `error`.

The worker writes only status/progress/summary/heartbeat; the page writes only
config["control"]. Pause: after a step, with control.pause on, the worker waits until
control.released reaches the next step's index ("Next step"). A process-local event
wakes it at once when the page runs in the same process; otherwise it polls the row.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from db.models import RequestResult, Run
from db.session import session_scope
from services import endpoints, lifecycle, limits
from services.demos.base import BigNumber, ChartSpec, Scenario, StepOutcome, join_sentences
from services.demos.context import DemoContext, DemoStopped
from services.demos.registry import get_scenario
from services.endpoints import EngineRecord
from services.errors import NotFoundError, ShootoutError, ValidationError
from services.lifecycle import ACTIVE_STATUSES, HEARTBEAT_INTERVAL_S, RunKind, RunStatus, is_stale
from services.processes import launch_run_worker

if TYPE_CHECKING:
    from services.access import Viewer

RUN_KIND = RunKind.DEMO
POLL_S = 0.5
MAX_ENGINES = 6

_wakeups: dict[int, threading.Event] = {}
_wakeups_lock = threading.Lock()


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _wakeup(run_id: int) -> threading.Event:
    with _wakeups_lock:
        return _wakeups.setdefault(run_id, threading.Event())


# ---------------------------------------------------------------- records the page shows


@dataclass(frozen=True)
class StepView:
    index: int
    key: str
    title: str
    explanation: str
    status: str
    numbers: list[BigNumber]
    chart: ChartSpec | None
    finding: str
    errors: list[str]
    data: dict[str, Any]


@dataclass(frozen=True)
class DemoView:
    run_id: int
    scenario: str
    title: str
    mechanism: str
    explanation: str
    status: str
    progress: float
    engines: list[str]
    options: dict[str, Any]
    steps: list[StepView]
    conclusion: str | None
    conclusion_headline: str | None
    conclusion_lines: list[str]
    verdicts: dict[str, dict[str, Any]]
    skipped_engines: dict[str, str]
    #: Index of the step that waits for "Next step" (None when nothing waits).
    awaiting: int | None
    paused: bool
    error: str | None
    created_at: datetime | None
    finished_at: datetime | None
    request_count: int

    @property
    def live(self) -> bool:
        return self.status in ("pending", "running")

    @property
    def next_step_title(self) -> str | None:
        if self.awaiting is None or self.awaiting >= len(self.steps):
            return None
        return self.steps[self.awaiting].title


@dataclass(frozen=True)
class DemoListItem:
    run_id: int
    scenario: str
    title: str
    status: str
    engines: list[str]
    created_at: datetime
    conclusion: str | None

    @property
    def label(self) -> str:
        when = self.created_at.strftime("%Y-%m-%d %H:%M")
        return f"#{self.run_id} {self.title} · {', '.join(self.engines)} · {when} · {self.status}"


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


def _snapshot(record: EngineRecord) -> dict[str, Any]:
    data = dataclasses.asdict(record)
    data.pop("id", None)
    return data


def start_demo(
    scenario_name: str,
    engine_names: Sequence[str] | None = None,
    *,
    options: dict[str, Any] | None = None,
    pause_between_steps: bool = False,
    background: bool = True,
    viewer: Viewer | None = None,
) -> int:
    """Store a new demo run and run it: in a worker process (the page) or here (the CLI).
    Returns the run id. Bad names or settings raise before anything is stored."""
    scenario = get_scenario(scenario_name)
    resolved = scenario.resolve_options(options)
    engines = resolve_engines(scenario, engine_names)
    config = {
        "scenario": scenario.name,
        "engines": [e.name for e in engines],
        "options": resolved,
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
            status="pending",
            config=config,
            summary={"scenario": scenario.name, "title": scenario.title, "steps": [], "awaiting": None},
            engines=[_snapshot(e) for e in engines],
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
        pid = launch_run_worker("services.demos.worker", run_id, "demo")
        with session_scope() as session:
            stored = session.get(Run, run_id)
            if stored is not None and stored.worker_pid is None:
                stored.worker_pid = pid
        return run_id
    # The CLI waits here (it is its own process already). A thread of its own all the same:
    # the worker runs event loops, and the caller's thread may already run one.
    thread = threading.Thread(target=run_demo, args=(run_id,), name=f"demo-{run_id}", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.5)
    except KeyboardInterrupt:
        stop_demo(run_id)  # Ctrl-C: stop after the requests in flight, keep what was measured
        thread.join(timeout=60)
        raise
    return run_id


# ---------------------------------------------------------------- presenter controls


def _control(run_id: int, **changes: Any) -> None:
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != RUN_KIND:
            raise NotFoundError(f"No demo run #{run_id}.")
        if run.status not in ("pending", "running"):
            return
        config = dict(run.config or {})
        control = dict(config.get("control") or {})
        for key, value in changes.items():
            control[key] = max(control.get(key, 0), value) if key == "released" else value
        config["control"] = control
        run.config = config  # a new dict: JSON columns do not track in-place changes
    _wakeup(run_id).set()


def advance(run_id: int) -> None:
    """ "Next step": release the step the worker waits at."""
    view = demo_view(run_id)
    if view.awaiting is not None:
        _control(run_id, released=view.awaiting)


def set_pause(run_id: int, pause: bool) -> None:
    """Turn waiting between steps on or off while the demo runs (off also releases a wait)."""
    changes: dict[str, Any] = {"pause": bool(pause)}
    if not pause:
        view = demo_view(run_id)
        if view.awaiting is not None:
            changes["released"] = view.awaiting
    _control(run_id, **changes)


def stop_demo(run_id: int) -> None:
    """Stop after the requests in flight; what was measured stays stored."""
    _control(run_id, stop=True)


# ---------------------------------------------------------------- the worker


class _Writer:
    """The worker's writes to its run row (and its heartbeat)."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.lock = threading.Lock()
        self.steps: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}
        self._beat_stop = threading.Event()
        self._beat: threading.Thread | None = None

    def write(self, **fields: Any) -> None:
        with self.lock, session_scope() as session:
            run = session.get(Run, self.run_id)
            if run is None:
                raise DemoStopped()  # deleted under us
            summary = dict(run.summary or {})
            summary["steps"] = [dict(step) for step in self.steps]
            summary.update(self.extra)
            run.summary = summary
            for key, value in fields.items():
                setattr(run, key, value)
            lifecycle.beat(self.run_id, session)

    def control(self) -> dict[str, Any]:
        with session_scope() as session:
            run = session.get(Run, self.run_id)
            if run is None:
                return {"stop": True}
            return dict((run.config or {}).get("control") or {})

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
    from services.engines.probe import probe

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
        config = dict(run.config or {})
        snapshots = list(run.engines or [])
    if not lifecycle.claim(run_id):
        return  # started twice, or ended before its worker got going
    status, error = RunStatus.FAILED, None
    writer.start_heartbeat()
    try:
        scenario = get_scenario(str(config.get("scenario")))
        options = scenario.resolve_options(config.get("options"))
        engines = [_record_from_snapshot(item) for item in snapshots]
        answering, skipped, versions = _reachable(engines)
        writer.extra["skipped_engines"] = skipped
        if versions:
            writer.extra["engine_versions"] = versions
        if not answering:
            reasons = "; ".join(f"{name}: {why}" for name, why in skipped.items())
            raise ShootoutError(f"No engine answered, nothing was measured ({reasons}).")
        plans = scenario.plan(answering, options)
        writer.steps = [
            {
                "key": p.key,
                "title": p.title,
                "explanation": p.explanation,
                "status": "pending",
                "numbers": [],
                "chart": None,
                "finding": "",
                "data": {},
                "errors": [],
            }
            for p in plans
        ]
        writer.write()
        context = DemoContext(
            run_id, answering, options, should_stop=lambda: bool(writer.control().get("stop"))
        )
        context.steps = writer.steps
        for index, plan in enumerate(plans):
            if index > 0:
                _wait_for_release(writer, index)
            step = writer.steps[index]

            def publish(outcome: StepOutcome, step: dict[str, Any] = step) -> None:
                step.update(outcome.to_dict())
                writer.write()

            context.begin_step(plan.key, publish)
            context.check_stop()
            step.update(status="running", started_at=_utcnow().isoformat())
            writer.write(progress=index / len(plans))
            try:
                outcome = plan.run(context)
            except DemoStopped:
                raise
            except ShootoutError as failure:
                step.update(status="failed", finished_at=_utcnow().isoformat())
                step["errors"] = [*step.get("errors", []), str(failure)]
                writer.write(progress=(index + 1) / len(plans))
                continue
            except Exception as failure:  # noqa: BLE001 - one broken step must not lose the others
                step.update(status="failed", finished_at=_utcnow().isoformat())
                step["errors"] = [
                    *step.get("errors", []),
                    f"Unexpected error: {type(failure).__name__}: {failure}",
                ]
                writer.write(progress=(index + 1) / len(plans))
                continue
            step.update(outcome.to_dict())
            step.update(status="finished", finished_at=_utcnow().isoformat())
            writer.write(progress=(index + 1) / len(plans))
        finished = [s for s in writer.steps if s["status"] == "finished"]
        if not finished:
            raise ShootoutError(
                "Every step failed: " + "; ".join(e for s in writer.steps for e in s.get("errors", []))
            )
        conclusion = scenario.conclude(writer.steps, [e.name for e in answering], options)
        lines = list(conclusion.lines)
        lines.extend(f"{name} was left out: {why}" for name, why in skipped.items())
        writer.extra.update(
            conclusion=join_sentences([conclusion.headline, *lines]),
            conclusion_headline=conclusion.headline,
            conclusion_lines=lines,
            verdicts=conclusion.verdicts,
            awaiting=None,
        )
        had_errors = bool(skipped) or any(
            s["status"] != "finished" or s.get("errors") for s in writer.steps
        )
        status = RunStatus.FINISHED_WITH_ERRORS if had_errors else RunStatus.FINISHED
    except DemoStopped:
        status, error = (
            RunStatus.CANCELLED,
            "Stopped by the presenter; the steps measured so far are kept.",
        )
        writer.extra["awaiting"] = None
        for step in writer.steps:
            if step["status"] == "running":
                step["status"] = "cancelled"
    except ShootoutError as failure:
        status, error = RunStatus.FAILED, str(failure)
        writer.extra["awaiting"] = None
    except Exception as failure:  # noqa: BLE001 - the run must end in a stored state, never "running"
        status, error = RunStatus.FAILED, f"Unexpected error: {type(failure).__name__}: {failure}"
        writer.extra["awaiting"] = None
    finally:
        writer.stop_heartbeat()
        for step in writer.steps:
            if step["status"] in ("pending", "running"):
                step["status"] = "skipped" if step["status"] == "pending" else "failed"
        try:
            _finish(writer, status, error)
        finally:
            with _wakeups_lock:
                _wakeups.pop(run_id, None)


def _finish(writer: _Writer, status: RunStatus, error: str | None) -> None:
    with writer.lock, session_scope() as session:
        run = session.get(Run, writer.run_id)
        if run is None:
            return
        summary = dict(run.summary or {})
        summary["steps"] = [dict(step) for step in writer.steps]
        summary.update(writer.extra)
        run.summary = summary
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
    control = writer.control()
    if control.get("stop"):
        raise DemoStopped()
    if not control.get("pause") or int(control.get("released", 0)) >= index:
        return
    writer.extra["awaiting"] = index
    writer.write()
    event = _wakeup(writer.run_id)
    while True:
        event.wait(POLL_S)
        event.clear()
        control = writer.control()
        if control.get("stop"):
            raise DemoStopped()
        if not control.get("pause") or int(control.get("released", 0)) >= index:
            break
    writer.extra["awaiting"] = None
    writer.write()


def _record_from_snapshot(item: dict[str, Any]) -> EngineRecord:
    """The engine as it was when the demo started (the registry may change meanwhile)."""
    known = {f.name for f in dataclasses.fields(EngineRecord)}
    data = {k: v for k, v in item.items() if k in known}
    data.setdefault("id", 0)
    data.setdefault("info", {})
    for name in ("model", "api_key_env", "metrics_url", "local_id"):
        data.setdefault(name, None)
    return EngineRecord(**data)


# ---------------------------------------------------------------- reading back


def _interrupt_if_stale(run_id: int) -> None:
    """A demo left "running" by a process that died shows as interrupted, never forever running."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if (
            run is None
            or run.status not in ACTIVE_STATUSES
            or not is_stale(run.heartbeat_at, run.created_at)
        ):
            return
        lifecycle.interrupt(
            run,
            "The demo's worker stopped (the app or the command was restarted); the steps measured so far are kept.",
        )
        summary = dict(run.summary or {})
        summary["awaiting"] = None
        run.summary = summary


def _step_view(index: int, step: dict[str, Any]) -> StepView:
    chart = step.get("chart")
    return StepView(
        index=index,
        key=str(step.get("key", "")),
        title=str(step.get("title", "")),
        explanation=str(step.get("explanation", "")),
        status=str(step.get("status", "pending")),
        numbers=[BigNumber(**n) for n in step.get("numbers") or []],
        chart=ChartSpec.from_dict(chart) if isinstance(chart, dict) else None,
        finding=str(step.get("finding") or ""),
        errors=[str(e) for e in step.get("errors") or []],
        data=dict(step.get("data") or {}),
    )


def demo_view(run_id: int) -> DemoView:
    """Everything the page draws for one demo, from the database alone (live or replay)."""
    _interrupt_if_stale(run_id)
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != RUN_KIND:
            raise NotFoundError(f"No demo run #{run_id}.")
        requests = session.scalar(
            select(func.count()).select_from(RequestResult).where(RequestResult.run_id == run_id)
        )
        config = dict(run.config or {})
        summary = dict(run.summary or {})
        name = str(config.get("scenario") or run.name)
        try:
            scenario: Scenario | None = get_scenario(name)
        except NotFoundError:
            scenario = None
        control = config.get("control") or {}
        return DemoView(
            run_id=run.id,
            scenario=name,
            title=str(summary.get("title") or (scenario.title if scenario else name)),
            mechanism=scenario.mechanism if scenario else "",
            explanation=scenario.explanation if scenario else "",
            status=run.status,
            progress=float(run.progress or 0.0),
            engines=[n for n in (run.engine_names or "").split(",") if n],
            options=dict(config.get("options") or {}),
            steps=[_step_view(i, s) for i, s in enumerate(summary.get("steps") or [])],
            conclusion=summary.get("conclusion"),
            conclusion_headline=summary.get("conclusion_headline"),
            conclusion_lines=[str(line) for line in summary.get("conclusion_lines") or []],
            verdicts=dict(summary.get("verdicts") or {}),
            skipped_engines=dict(summary.get("skipped_engines") or {}),
            awaiting=summary.get("awaiting") if run.status in ("pending", "running") else None,
            paused=bool(control.get("pause")),
            error=run.error,
            created_at=run.created_at,
            finished_at=run.finished_at,
            request_count=int(requests or 0),
        )


def list_demos(limit: int = 50) -> list[DemoListItem]:
    """Stored demos, newest first (to replay one without its engines)."""
    with session_scope() as session:
        rows = session.execute(
            select(Run.id, Run.name, Run.status, Run.engine_names, Run.created_at, Run.summary)
            .where(Run.kind == RUN_KIND, Run.archived.is_(False))
            .order_by(Run.created_at.desc(), Run.id.desc())
            .limit(limit)
        ).all()
    items = []
    for run_id, name, status, engine_names, created_at, summary in rows:
        summary = summary or {}
        items.append(
            DemoListItem(
                run_id=run_id,
                scenario=name,
                title=str(summary.get("title") or name),
                status=status,
                engines=[n for n in (engine_names or "").split(",") if n],
                created_at=created_at,
                conclusion=summary.get("conclusion"),
            )
        )
    return items


def demo_result(run_id: int) -> dict[str, Any]:
    """The JSON `cli.py demo --json` prints (format in the README)."""
    view = demo_view(run_id)
    return {
        "run_id": view.run_id,
        "scenario": view.scenario,
        "title": view.title,
        "status": view.status,
        "engines": view.engines,
        "skipped_engines": view.skipped_engines,
        "options": view.options,
        "conclusion": view.conclusion,
        "verdicts": view.verdicts,
        "error": view.error,
        "requests": view.request_count,
        "steps": [
            {
                "key": step.key,
                "title": step.title,
                "status": step.status,
                "finding": step.finding,
                "numbers": [{"label": n.label, "value": n.value, "text": n.text} for n in step.numbers],
                "data": step.data,
                "errors": step.errors,
            }
            for step in view.steps
        ],
    }


def wait_until_done(run_id: int, timeout_s: float = 600.0) -> DemoView:
    """Block until the demo ends (tests and scripts)."""
    deadline = time.monotonic() + timeout_s
    while True:
        view = demo_view(run_id)
        if not view.live:
            return view
        if time.monotonic() > deadline:
            raise ShootoutError(f"Demo #{run_id} did not finish within {timeout_s:.0f} s.")
        time.sleep(0.2)


__all__ = [
    "DemoListItem",
    "DemoView",
    "StepView",
    "advance",
    "demo_result",
    "demo_view",
    "list_demos",
    "run_demo",
    "set_pause",
    "start_demo",
    "stop_demo",
    "wait_until_done",
]
