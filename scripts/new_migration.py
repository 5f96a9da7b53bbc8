"""Write the next Alembic revision by comparing the models with the newest schema.

Usage: .venv/bin/python scripts/new_migration.py "what changed"
"""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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
