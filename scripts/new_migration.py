"""Write the next Alembic revision by comparing the models with the newest schema.

Usage, from the checkout's root: .venv/bin/python -m scripts.new_migration "what changed"
(`python scripts/new_migration.py` also works once `pip install -e .` installed the package,
but then reads the models of the checkout that was installed.)
"""

import sys
import tempfile

from alembic import command
from sqlalchemy import create_engine

from db.schema import alembic_config


def main() -> int:
    message = sys.argv[1] if len(sys.argv) > 1 else "schema change"
    with tempfile.TemporaryDirectory() as tmp:
        engine = create_engine(f"sqlite:///{tmp}/scratch.db")
        config = alembic_config(engine)
        command.upgrade(config, "head")
        command.revision(config, message=message, autogenerate=True)
        engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
