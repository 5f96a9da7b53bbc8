"""What the Engines page shows, as plain values: a probe's verdict as one message, the local
engines as rows with the one action each allows, the outcome of "Probe and add" as messages,
and each registered endpoint as a card. No streamlit in.

Messages are markdown with a level ("success", "warning", "error", "info"): what a server or a
user named (versions, model names, error bodies, engine names) is escaped here, the rest is ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select

from db.models import Run
from db.session import session_scope
from services import local_engines
from services.core import cost
from services.core.errors import ShootoutError
from services.core.safe_text import code_span, md_line, md_text
from services.engines import adapters, endpoints, get_adapter, registration
from services.engines.endpoints import EngineRecord
from services.engines.probe import ProbeResult, probe
from services.local_engines import background, progress
from services.runstate.lifecycle import ACTIVE_STATUSES
from services.telemetry.hub import get_hub
from services.telemetry.scraper import ScrapeTarget

Level = Literal["success", "warning", "error", "info"]

STATE_ICONS = {
    "ok": ":material/check_circle:",
    "unhealthy": ":material/hourglass_top:",
    "unreachable": ":material/cloud_off:",
    "auth_required": ":material/lock:",
    "not_openai": ":material/help:",
}
LOCAL_ICONS = {
    "running": ":green[●]",
    "starting": ":orange[●]",
    "installing": ":blue[◐]",
    "stopped": ":gray[●]",
    "failed": ":red[●]",
    "not_installed": ":gray[○]",
}
#: Where the kind picker of "Add an endpoint" starts: the probe says what the server is.
DETECT = "detect"


@dataclass(frozen=True)
class Message:
    level: Level
    markdown: str


def kind_labels() -> dict[str, str]:
    """Every engine kind an endpoint may be registered as, with its label, in adapter order."""
    return {adapter.kind: adapter.label for adapter in adapters()}


def probe_message(result: ProbeResult) -> Message:
    """One probe's verdict: what the server said about itself when it answered well."""
    icon = STATE_ICONS.get(result.state, "")
    message = md_text(result.message)
    if result.ok:
        details = (
            f"{md_line(result.kind_label)} · version {md_line(result.version) or 'unknown'} · "
            f"models: {', '.join(code_span(m) for m in result.models) or 'none'} · "
            f"context {md_line(str(result.context_length or 'unknown'))} · {result.latency_ms} ms"
        )
        return Message("success", f"{icon} {message}  \n{details}")
    return Message("warning" if result.state == "unhealthy" else "error", f"{icon} {message}")


def probe_engine(record: EngineRecord) -> Message:
    try:
        return probe_message(probe(record.base_url, api_key_env=record.api_key_env))
    except ShootoutError as error:
        return Message("error", md_text(str(error)))


# ---------------------------------------------------------------- local engines


@dataclass(frozen=True)
class LocalRow:
    id: str
    title: str
    detail: str
    failed: bool
    #: The one button the row offers ("stop", "start", or "retry" a failed or stopped install),
    #: None when none applies.
    action: Literal["stop", "start", "retry"] | None
    #: The last meaningful lines of its install's log while it installs or after it failed, and
    #: where that log is (plain text, shown as code).
    log_lines: str = ""


@dataclass(frozen=True)
class LocalPanel:
    rows: list[LocalRow]
    #: Some engine is not installed yet (the page says how to install it).
    missing: bool

    @property
    def startable(self) -> bool:
        """Some engine is installed and stopped: "Start all" has something to start (issue 56:
        it was offered while all six ran)."""
        return any(row.action == "start" for row in self.rows)


def _local_row(status: local_engines.LocalEngineStatus) -> LocalRow:
    install = status.install or {}
    if status.status == "failed":
        detail = f"{md_line(status.url)} · did not start: {md_text(status.message)}"
    elif status.status == "installing":
        detail = f"{md_line(status.url)} · {md_line(status.message)}"
    else:
        pid = f"pid {status.pid}" if status.pid else ""
        detail = f"{md_line(status.url)} · {status.status} · {pid} {md_line(status.message)}"
    action: Literal["stop", "start", "retry"] | None = None
    if status.status in ("running", "starting"):
        action = "stop"
    elif status.installed:
        action = "start"
    elif install and status.status != "installing":
        action = "retry"  # its install failed or was stopped
    log_lines = ""
    if install and not status.installed and install.get("log"):
        tail = progress.meaningful_tail(install["log"], lines=4)
        log_lines = "\n".join([*tail, f"(whole log: {install['log']})"])
    return LocalRow(
        id=status.id,
        title=f"{LOCAL_ICONS.get(status.status, '')} **{md_line(status.id)}**  \n{md_line(status.label)}",
        detail=detail,
        failed=status.status == "failed",
        action=action,
        log_lines=log_lines,
    )


def local_panel() -> LocalPanel:
    statuses = local_engines.status()
    return LocalPanel([_local_row(s) for s in statuses], missing=any(not s.installed for s in statuses))


def stop_question(engine_id: str) -> str:
    """What Stop asks before it acts: the local engines are shared, and whatever runs on this
    one now (anyone's benchmark, exchange, demo) fails when it goes."""
    names = {r.name for r in endpoints.list_engines() if engine_id in (r.name, r.local_id)}
    using = runs_using(names | {engine_id})
    if using:
        busy = f"{len(using)} run(s) use it now (#{', #'.join(str(i) for i in using)}) and would fail."
    else:
        busy = "No run uses it right now."
    return f"Stop **{md_line(engine_id)}** for everyone? {busy}"


def runs_using(names: set[str]) -> list[int]:
    """The active runs (pending or running) that use any of these registered engine names."""
    with session_scope() as session:
        rows = session.execute(
            select(Run.id, Run.engine_names).where(Run.status.in_(ACTIVE_STATUSES)).order_by(Run.id)
        ).all()
    return [run_id for run_id, joined in rows if names & set((joined or "").split(","))]


def retry_install(engine_id: str) -> Message:
    """Install (again) and start one local engine's backend behind the page."""
    try:
        backend = local_engines.get_spec(engine_id).backend
        ids = [s.id for s in local_engines.all_specs() if s.backend == backend]
        pid, _fresh = background.start(ids)
        progress.mark_queued(backend, pid)
    except (ShootoutError, OSError) as error:
        return Message("error", md_text(str(error)))
    return Message(
        "info",
        f"Installing {md_line(backend)} again behind the app (pid {pid}); its row shows how it goes.",
    )


def stop_local(engine_id: str) -> None:
    local_engines.stop(engine_id)


def start_local(engine_id: str) -> Message | None:
    """Start one local engine without waiting for it; a message when it could not start."""
    try:
        local_engines.start(engine_id, wait=False, register=endpoints.register_local)
    except ShootoutError as error:
        return Message("error", md_text(str(error)))
    return None


def start_all_local() -> list[Message]:
    """Start every local engine (those running already stay as they are)."""
    errors = [message for spec in local_engines.specs() if (message := start_local(spec.id))]
    if errors:
        return errors
    return [
        Message(
            "success",
            "Starting. llama.cpp is ready in seconds; vLLM compiles for about 2 minutes on first start.",
        )
    ]


# ---------------------------------------------------------------- registered endpoints


def add_endpoint(
    name: str,
    url: str,
    kind: str = DETECT,
    model: str = "",
    api_key_env: str = "",
    metrics_url: str = "",
    store_unreachable: bool = False,
    same_url_ok: bool = False,
    usd_per_hour: str = "",
) -> list[Message]:
    """Probe a server and register it; what the probe said and what was stored, as messages.
    A URL another engine points at already is refused unless `same_url_ok` (the user ticked
    that a second name is meant)."""
    try:
        done = registration.probe_and_register(
            name,
            url,
            kind=None if kind == DETECT else kind,
            model=model or None,
            api_key_env=api_key_env or None,
            metrics_url=metrics_url or None,
            store_unreachable=store_unreachable,
            allow_twin=same_url_ok,
            usd_per_hour=usd_per_hour,
        )
    except ShootoutError as error:
        return [Message("error", md_text(str(error)))]
    messages = [probe_message(done.probe)] if done.probe is not None else []
    record = done.record
    if record is None and done.twins:
        return [
            Message(
                "warning",
                f"Not stored: {md_line(', '.join(done.twins))} already point(s) at "
                f"{code_span(endpoints.normalise_base_url(url))}, and two names for one server count "
                "its requests twice in comparisons. If a second name is meant (another model on the "
                "same server), tick 'Allow a URL another engine already uses' and add it again.",
            )
        ]
    if record is None:
        messages.append(
            Message("info", "Not stored. Fix the URL, or tick 'Store even if it does not answer now'.")
        )
        return messages
    messages.append(Message("success", f"Added **{md_line(record.name)}** ({md_line(record.label)})."))
    if done.twins:
        messages.append(
            Message(
                "info",
                f"As asked, a second name: {md_line(', '.join(done.twins))} point(s) at "
                f"{code_span(record.base_url)} too.",
            )
        )
    return messages


@dataclass(frozen=True)
class EngineCard:
    record: EngineRecord
    heading: str
    #: How to get this kind's metrics, only where reading them failed or found nothing (empty
    #: when there is nothing to say).
    metrics_hint: str

    @property
    def name_markdown(self) -> str:
        return md_line(self.record.name)


def has_endpoints() -> bool:
    return bool(endpoints.list_engines())


def engine_cards() -> list[EngineCard]:
    cards = []
    for record in endpoints.list_engines():
        key = f" · key from {code_span('$' + record.api_key_env)}" if record.api_key_env else ""
        heading = (
            f"**{md_line(record.name)}** · {md_line(record.label)}  \n{code_span(record.base_url)} · "
            f"model {code_span(record.model or '-')}{key} · {price_text(record)}"
        )
        cards.append(EngineCard(record, heading, metrics_hint(record)))
    return cards


def price_text(record: EngineRecord) -> str:
    """The card's price: "2.5 $/h", or "not priced" (its runs' cost then reads the same)."""
    return f"{record.usd_per_hour:g} $/h" if record.usd_per_hour is not None else cost.NOT_PRICED


def price_field(record: EngineRecord) -> str:
    """The edit form's price field: the price as typed back, empty for none."""
    return f"{record.usd_per_hour:.10g}" if record.usd_per_hour is not None else ""


#: The price fields' help: what the figure is for, and what it must look like.
PRICE_HELP = (
    "Dollars per hour of the instance or GPUs behind this engine, a plain number such as 3.50. "
    "Each benchmark stores the price it ran with and shows $ per 1M tokens; empty: not priced."
)


def metrics_hint(record: EngineRecord) -> str:
    """The kind's advice on its metrics where the last read of them (the Monitor's, in this
    process) failed or found no signal. A llama.cpp card said "start with --metrics" beside
    metrics that worked. Not read here: a read of llama.cpp's /metrics resets its gauges."""
    adapter = get_adapter(record.kind)
    if not adapter.metrics_hint:
        return ""
    if adapter.metrics_need_url and not record.metrics_url:
        return adapter.metrics_hint
    last = get_hub().latest(ScrapeTarget.from_record(record).source)
    if last is None:
        return ""
    if last.error or all(value is None for value in last.values.values()):
        return adapter.metrics_hint
    return ""


def save_engine(name: str, **changes: str) -> Message | None:
    """Change an endpoint's address, model, kind, key variable, metrics URL or price per hour;
    a message when the change is refused (nothing is changed then)."""
    try:
        endpoints.update_engine(name, **changes)
    except ShootoutError as error:
        return Message("error", md_text(str(error)))
    return None


def remove_engine(name: str) -> None:
    endpoints.remove_engine(name)
