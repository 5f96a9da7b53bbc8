"""runs.requested_by: who started a run, for the per-viewer limits of a team server

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("requested_by", sa.String(length=200), nullable=True))
        batch_op.create_index(batch_op.f("ix_runs_requested_by"), ["requested_by"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_requested_by"))
        batch_op.drop_column("requested_by")
