"""engines.usd_per_hour: an engine's price per hour, for the cost of its runs (services/core/cost.py)

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("engines", schema=None) as batch_op:
        batch_op.add_column(sa.Column("usd_per_hour", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("engines", schema=None) as batch_op:
        batch_op.drop_column("usd_per_hour")
