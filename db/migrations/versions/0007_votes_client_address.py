"""votes.client: the keyed hash of the address a ballot came from (issue 45)

Revision ID: 0007
Revises: 0006

A tally says how many votes came from each client address, and SHOOTOUT_VOTES_PER_ADDRESS caps
them per exchange. Ballots stored before have no address (NULL): they keep counting, under
"address not stored".
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("votes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("client", sa.String(length=80), nullable=True))
        batch_op.create_index("ix_votes_run_client", ["run_id", "client"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("votes", schema=None) as batch_op:
        batch_op.drop_index("ix_votes_run_client")
        batch_op.drop_column("client")
