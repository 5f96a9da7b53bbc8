"""demo_sessions, session_events, session_participants: team demo sessions (services/sessions)

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "demo_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("join_code", sa.String(length=12), nullable=False),
        sa.Column("presenter_hash", sa.String(length=64), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("shown_seq", sa.Integer(), nullable=False),
        sa.Column("shown_kind", sa.String(length=30), nullable=True),
        sa.Column("shown_ref", sa.JSON(), nullable=False),
        sa.Column("shown_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("demo_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_demo_sessions_ended_at"), ["ended_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_demo_sessions_join_code"), ["join_code"], unique=False)
        batch_op.create_index(batch_op.f("ix_demo_sessions_started_at"), ["started_at"], unique=False)

    op.create_table(
        "session_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=30), nullable=False),
        sa.Column("ref", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["session_id"], ["demo_sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("session_events", schema=None) as batch_op:
        batch_op.create_index("ix_session_events_session_seq", ["session_id", "seq"], unique=False)

    op.create_table(
        "session_participants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("identity_hash", sa.String(length=64), nullable=False),
        sa.Column("following", sa.Boolean(), nullable=False),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["session_id"], ["demo_sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("session_participants", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_session_participants_last_seen_at"), ["last_seen_at"], unique=False
        )
        batch_op.create_index(
            "ix_session_participants_session_identity", ["session_id", "identity_hash"], unique=True
        )


def downgrade() -> None:
    with op.batch_alter_table("session_participants", schema=None) as batch_op:
        batch_op.drop_index("ix_session_participants_session_identity")
        batch_op.drop_index(batch_op.f("ix_session_participants_last_seen_at"))

    op.drop_table("session_participants")
    with op.batch_alter_table("session_events", schema=None) as batch_op:
        batch_op.drop_index("ix_session_events_session_seq")

    op.drop_table("session_events")
    with op.batch_alter_table("demo_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_demo_sessions_started_at"))
        batch_op.drop_index(batch_op.f("ix_demo_sessions_join_code"))
        batch_op.drop_index(batch_op.f("ix_demo_sessions_ended_at"))

    op.drop_table("demo_sessions")
