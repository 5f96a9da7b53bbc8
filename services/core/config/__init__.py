"""Settings read from the environment, in one place: every SHOOTOUT_* variable the product
reads is an attribute of `Settings` (settings.py), typed, with its default and meaning. Nothing
else reads them from os.environ (tests/test_shape.py holds that). The table for operators:
docs/configuration.md. `python -m services.core.config` checks them all (run.sh does, before
starting anything).
"""

from __future__ import annotations

from services.core.config.keys import (
    NEVER_KEY_ENVS,
    SHOOTOUT_KEY_NAMESPACE,
    key_env_allowed,
    key_env_refusal,
)
from services.core.config.settings import PROJECT_ROOT, Settings, get_settings

__all__ = [
    "NEVER_KEY_ENVS",
    "PROJECT_ROOT",
    "SHOOTOUT_KEY_NAMESPACE",
    "Settings",
    "get_settings",
    "key_env_allowed",
    "key_env_refusal",
]
