"""SQLAlchemy 2.0 typed models for everything Shootout stores.

Timestamps are UTC. Free-form structures (run config, summaries, engine snapshots)
are JSON columns so a new benchmark option needs no schema change; anything that is
filtered or aggregated over many rows gets its own column and index.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeAlias, TypedDict

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    event,
)
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

from services.core.json_types import JsonOut

#: A JSON column's value: JSON this app stored, by this version or an older one (or an import).
#: Its shape is its writer's (a `Stored` record's to_json, a TypedDict), and so is its reader: a
#: record's `from_json`, or a cast into the TypedDict right where the column is read. The one
#: name for the columns (and `type_annotation_map`'s key), so that a search finds every read.
StoredJson: TypeAlias = dict[str, Any]


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {StoredJson: JSON, list[Any]: JSON}


class Engine(Base):
    """A registered endpoint. The API key itself is never stored, only the name of
    the environment variable that holds it."""

    __tablename__ = "engines"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    base_url: Mapped[str] = mapped_column(String(500))
    kind: Mapped[str] = mapped_column(String(40), default="openai")
    model: Mapped[str | None] = mapped_column(String(300))
    api_key_env: Mapped[str | None] = mapped_column(String(100))
    metrics_url: Mapped[str | None] = mapped_column(String(500))
    local_id: Mapped[str | None] = mapped_column(String(60))
    info: Mapped[StoredJson] = mapped_column(default=dict)
    #: Dollars per hour of the instance or GPUs behind it (services/core/cost.py); NULL: not priced.
    usd_per_hour: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )


class Run(Base):
    """One stored run of any kind: benchmark, playground exchange, recording, demo, import."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(30), index=True)
    name: Mapped[str] = mapped_column(String(300), default="")
    status: Mapped[str] = mapped_column(String(30), default="pending", index=True)
    config: Mapped[StoredJson] = mapped_column(default=dict)
    summary: Mapped[StoredJson] = mapped_column(default=dict)
    engines: Mapped[list[Any]] = mapped_column(default=list)
    engine_names: Mapped[str] = mapped_column(String(1000), default="", index=True)
    model: Mapped[str | None] = mapped_column(String(300), index=True)
    workload: Mapped[str | None] = mapped_column(String(100), index=True)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    error: Mapped[str | None] = mapped_column(Text)
    notes: Mapped[str] = mapped_column(Text, default="")
    tags: Mapped[list[Any]] = mapped_column(default=list)
    #: Hash of what makes two runs repeats of each other (kind, model, workload, config
    #: without names and provenance); kept by the flush hook below, used to find repeats.
    config_fingerprint: Mapped[str | None] = mapped_column(String(64), index=True)
    archived: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    #: Who started it (an OIDC e-mail or "ip:<address>", services.team.access.Viewer.identity): the
    #: per-viewer limits of a team server count a viewer's own active runs by it.
    requested_by: Mapped[str | None] = mapped_column(String(200), index=True)
    worker_pid: Mapped[int | None] = mapped_column(Integer)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    requests: Mapped[list[RequestResult]] = relationship(
        back_populates="run", cascade="all, delete-orphan", passive_deletes=True
    )
    tag_rows: Mapped[list[RunTag]] = relationship(
        back_populates="run", cascade="all, delete-orphan", passive_deletes=True
    )


class RunTag(Base):
    """One tag of one run: an indexed copy of `Run.tags`, so filtering 10,000 runs by tag
    is an index lookup rather than a JSON scan. Kept in step by the flush hook below."""

    __tablename__ = "run_tags"
    __table_args__ = (Index("ix_run_tags_tag_run", "tag", "run_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    tag: Mapped[str] = mapped_column(String(100))

    run: Mapped[Run] = relationship(back_populates="tag_rows")


class RequestResult(Base):
    """One request of a benchmark (or of a demo step). Times in seconds, relative to the run start."""

    __tablename__ = "request_results"
    __table_args__ = (Index("ix_request_results_run_engine", "run_id", "engine_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    engine_name: Mapped[str] = mapped_column(String(100))
    index: Mapped[int] = mapped_column(Integer)
    warmup: Mapped[bool] = mapped_column(Boolean, default=False)
    ok: Mapped[bool] = mapped_column(Boolean, default=True)
    scheduled_s: Mapped[float | None] = mapped_column(Float)
    start_s: Mapped[float | None] = mapped_column(Float)
    ttft_s: Mapped[float | None] = mapped_column(Float)
    e2e_s: Mapped[float | None] = mapped_column(Float)
    tpot_s: Mapped[float | None] = mapped_column(Float)
    itl_s: Mapped[list[Any]] = mapped_column(default=list)
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    cached_tokens: Mapped[int | None] = mapped_column(Integer)
    finish_reason: Mapped[str | None] = mapped_column(String(40))
    error_class: Mapped[str | None] = mapped_column(String(60))
    error: Mapped[str | None] = mapped_column(Text)
    extra: Mapped[StoredJson] = mapped_column(default=dict)

    run: Mapped[Run] = relationship(back_populates="requests")


#: A request row's own fields in column order (no ids): what exports write and imports read.
REQUEST_RESULT_FIELDS: tuple[str, ...] = tuple(
    column.name for column in RequestResult.__table__.columns if column.name not in ("id", "run_id")
)


class RequestRow(TypedDict, total=False):
    """A RequestResult row as a mapping of its columns (no ids): what a Core bulk insert takes,
    and what an importer builds and reads back before it stores the rows."""

    run_id: int
    engine_name: str
    index: int
    warmup: bool
    ok: bool
    scheduled_s: float | None
    start_s: float | None
    ttft_s: float | None
    e2e_s: float | None
    tpot_s: float | None
    itl_s: list[float]
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    finish_reason: str | None
    error_class: str | None
    error: str | None
    #: What has no column (the step, the schema verdict, thinking figures): written, not read here.
    extra: JsonOut


class Sample(Base):
    """One telemetry reading of one source (a GPU or an engine) at one time:
    all of that source's normalised signals in one row, keyed by signal name."""

    __tablename__ = "samples"
    __table_args__ = (
        Index("ix_samples_source_ts", "source", "ts"),
        Index("ix_samples_run_ts", "run_id", "ts"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    ts: Mapped[float] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(120))
    values: Mapped[StoredJson] = mapped_column(default=dict)


class Exchange(Base):
    """One engine's answer in a playground exchange (one run of kind "playground" per send)."""

    __tablename__ = "exchanges"
    __table_args__ = (Index("ix_exchanges_run", "run_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    conversation_id: Mapped[str] = mapped_column(String(60), index=True)
    turn: Mapped[int] = mapped_column(Integer, default=1)
    engine_name: Mapped[str] = mapped_column(String(100))
    model: Mapped[str | None] = mapped_column(String(300))
    messages: Mapped[list[Any]] = mapped_column(default=list)
    params: Mapped[StoredJson] = mapped_column(default=dict)
    #: The chat request as built when it was sent (ChatRequest.to_json): what the worker sends.
    request: Mapped[StoredJson | None] = mapped_column(default=None)
    answer: Mapped[str] = mapped_column(Text, default="")
    choices: Mapped[list[Any]] = mapped_column(default=list)
    status: Mapped[str] = mapped_column(String(30), default="streaming")
    metrics: Mapped[StoredJson] = mapped_column(default=dict)
    usage: Mapped[StoredJson] = mapped_column(default=dict)
    finish_reason: Mapped[str | None] = mapped_column(String(40))
    error_class: Mapped[str | None] = mapped_column(String(60))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )


class Vote(Base):
    """One engine pair decided by one participant's blind vote on one exchange (a ballot is
    the pairs it decides). The pair is stored in name order, so the unique constraint refuses
    a participant's second ballot on an exchange even when it names another winner: any two
    ballots on one exchange share a pair."""

    __tablename__ = "votes"
    __table_args__ = (
        UniqueConstraint("run_id", "voter", "engine_a", "engine_b", name="uq_votes_voter_pair"),
        Index("ix_votes_run_voter", "run_id", "voter"),
        Index("ix_votes_run_client", "run_id", "client"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    engine_a: Mapped[str] = mapped_column(String(100))
    engine_b: Mapped[str] = mapped_column(String(100))
    winner: Mapped[str] = mapped_column(String(100))  # engine name, or "tie"
    #: Who voted: an HMAC of the login or browser identity with the server secret
    #: (services/votes/participants.py), never the login itself; "legacy" for votes stored
    #: before participants (one per exchange then).
    voter: Mapped[str] = mapped_column(String(80))
    #: Where the ballot came from: an HMAC of the client's address (services/votes/participants.py),
    #: so a tally can say how many votes one address cast; None for ballots stored before.
    client: Mapped[str | None] = mapped_column(String(80))
    #: The team demo session the vote was cast in; no foreign key until sessions are stored.
    session_id: Mapped[int | None] = mapped_column(Integer, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# Keys of Run.config that name or describe a run rather than what it measured.
FINGERPRINT_IGNORED_CONFIG_KEYS = frozenset(
    {"name", "label", "notes", "tags", "import", "created_by", "usd_per_hour", "blind_order"}
)
# Keys of an engine in Run.config that price it: two runs differing only in price are repeats.
FINGERPRINT_IGNORED_ENGINE_KEYS = frozenset({"usd_per_hour"})


def run_fingerprint(
    kind: str | None, model: str | None, workload: str | None, config: StoredJson | None
) -> str:
    """What repeated runs share: same kind, model, workload and measuring config."""
    measured = {
        key: value for key, value in (config or {}).items() if key not in FINGERPRINT_IGNORED_CONFIG_KEYS
    }
    if isinstance(measured.get("engines"), (list, tuple)):
        measured["engines"] = [
            {k: v for k, v in engine.items() if k not in FINGERPRINT_IGNORED_ENGINE_KEYS}
            if isinstance(engine, dict)
            else engine
            for engine in measured["engines"]
        ]
    canonical = json.dumps(
        [kind, model, workload, measured], sort_keys=True, default=str, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _clean_tags(tags: Any) -> list[str]:
    seen: list[str] = []
    for tag in tags or []:
        text = str(tag).strip()[:100]
        if text and text not in seen:
            seen.append(text)
    return seen


@event.listens_for(Session, "before_flush")
def _keep_run_index_columns(session: Session, _flush_context: Any, _instances: Any) -> None:
    """Keep RunTag rows and Run.config_fingerprint in step with Run.tags/config, whoever
    writes the run (benchmark worker, playground, importer), so filters never miss a run.

    JSON columns are not mutation-tracked: assign a new list/dict to change tags/config."""
    for obj in list(session.new) + list(session.dirty):
        if not isinstance(obj, Run):
            continue
        state = sa_inspect(obj)
        is_new = obj in session.new
        attrs = state.attrs
        if is_new or any(
            attrs[name].history.has_changes() for name in ("kind", "model", "workload", "config")
        ):
            obj.config_fingerprint = run_fingerprint(obj.kind, obj.model, obj.workload, obj.config)
        if is_new or attrs.tags.history.has_changes():
            wanted = _clean_tags(obj.tags)
            if is_new:
                obj.tag_rows = [RunTag(tag=tag) for tag in wanted]
                continue
            current = {row.tag: row for row in obj.tag_rows}
            for tag, row in current.items():
                if tag not in wanted:
                    obj.tag_rows.remove(row)
            for tag in wanted:
                if tag not in current:
                    obj.tag_rows.append(RunTag(tag=tag))


class LoginSession(Base):
    """A password login of a team server (web/gate.py): the cookie carries the session id, this
    row only its SHA-256, so a copy of the database opens no session. A session ends when it is
    revoked (logout, "log out everywhere"), when it expires, or when its role's password changes
    (the fingerprint, an HMAC of the password with the signing secret, no longer matches)."""

    __tablename__ = "login_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    id_hash: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(20))
    identity: Mapped[str] = mapped_column(String(200), default="")
    password_fingerprint: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class DemoSession(Base):
    """A team demo session (services/sessions): a presenter drives, followers' screens show what
    the presenter shows. The presenter's current view is kept on this row itself, so a
    follower's poll reads one row by its primary key (30 followers polling every second do not
    compete with the presenter's exchange for the database)."""

    __tablename__ = "demo_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200), default="")
    #: Short, of unambiguous characters; unique among live sessions (an ended one frees it).
    join_code: Mapped[str] = mapped_column(String(12), index=True)
    #: SHA-256 of the presenter's identity within this session (services/sessions/identity.py).
    presenter_hash: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)
    #: What the presenter shows now: the newest event's sequence number, kind and reference.
    shown_seq: Mapped[int] = mapped_column(Integer, default=0)
    shown_kind: Mapped[str | None] = mapped_column(String(30))
    shown_ref: Mapped[StoredJson] = mapped_column(default=dict)
    shown_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    events: Mapped[list[SessionEvent]] = relationship(
        back_populates="session", cascade="all, delete-orphan", passive_deletes=True
    )


class SessionEvent(Base):
    """One entry of a session's timeline: what the presenter showed (a run, an exchange, a demo
    step, a parity run, the Planner's inputs, a compare of runs) or a note, in order."""

    __tablename__ = "session_events"
    __table_args__ = (Index("ix_session_events_session_seq", "session_id", "seq"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("demo_sessions.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    kind: Mapped[str] = mapped_column(String(30))
    #: The typed reference (services/sessions/records.py Shown), stored as its fields.
    ref: Mapped[StoredJson] = mapped_column(default=dict)

    session: Mapped[DemoSession] = relationship(back_populates="events")


class SessionParticipant(Base):
    """Someone in a session: only a hash of who they are, when last seen, and whether their
    screen follows the presenter now."""

    __tablename__ = "session_participants"
    __table_args__ = (
        Index("ix_session_participants_session_identity", "session_id", "identity_hash", unique=True),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("demo_sessions.id", ondelete="CASCADE"))
    identity_hash: Mapped[str] = mapped_column(String(64))
    following: Mapped[bool] = mapped_column(Boolean, default=True)
    joined_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
