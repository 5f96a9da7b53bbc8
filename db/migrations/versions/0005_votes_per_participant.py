"""votes per participant: voter (a hashed identity) and session id, one ballot per exchange each

Revision ID: 0005
Revises: 0004

Votes stored before participants were one ballot per exchange: they become the ballot of a
voter named "legacy", their pairs put in name order as new votes store them. The old pairwise
API could store one pair of one exchange more than once: each such repeat becomes a voter of
its own ("legacy:<vote id>"), so every stored vote still counts and the unique constraint holds.
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("votes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("voter", sa.String(length=80), nullable=True))
        batch_op.add_column(sa.Column("session_id", sa.Integer(), nullable=True))
    # Both sides of SET read the row as it was, on SQLite and PostgreSQL alike.
    op.execute("UPDATE votes SET engine_a = engine_b, engine_b = engine_a WHERE engine_a > engine_b")
    op.execute(
        "UPDATE votes SET voter = 'legacy' WHERE id IN "
        "(SELECT MIN(id) FROM votes GROUP BY run_id, engine_a, engine_b)"
    )
    op.execute("UPDATE votes SET voter = 'legacy:' || CAST(id AS VARCHAR(20)) WHERE voter IS NULL")
    with op.batch_alter_table("votes", schema=None) as batch_op:
        batch_op.alter_column("voter", existing_type=sa.String(length=80), nullable=False)
        batch_op.create_index("ix_votes_run_voter", ["run_id", "voter"], unique=False)
        batch_op.create_index(batch_op.f("ix_votes_session_id"), ["session_id"], unique=False)
        batch_op.create_unique_constraint(
            "uq_votes_voter_pair", ["run_id", "voter", "engine_a", "engine_b"]
        )


def downgrade() -> None:
    with op.batch_alter_table("votes", schema=None) as batch_op:
        batch_op.drop_constraint("uq_votes_voter_pair", type_="unique")
        batch_op.drop_index(batch_op.f("ix_votes_session_id"))
        batch_op.drop_index("ix_votes_run_voter")
        batch_op.drop_column("session_id")
        batch_op.drop_column("voter")
