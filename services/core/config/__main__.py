"""`python -m services.core.config`: check every setting, then print where to serve the app
(`ADDRESS PORT`, for run.sh). A bad setting: its message on stderr and exit status 2."""

from __future__ import annotations

import sys

from services.core.config.settings import get_settings
from services.core.errors import SettingError


def main() -> int:
    settings = get_settings()
    try:
        settings.check()
    except SettingError as error:
        print(f"Shootout: {error}", file=sys.stderr)
        return 2
    print(settings.address, settings.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
