"""exchanges.request: the chat request as built when it was sent (issue 46)

Revision ID: 0008
Revises: 0007

The Playground built each request twice: once to send, once more in the worker process from the
exchange's stored parameters. The built request is stored instead, and the worker sends it.
Exchanges stored before have none (NULL); they have long finished streaming.
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("exchanges", schema=None) as batch_op:
        batch_op.add_column(sa.Column("request", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("exchanges", schema=None) as batch_op:
        batch_op.drop_column("request")
