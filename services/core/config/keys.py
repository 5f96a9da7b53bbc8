"""Which environment variables an engine may name as its API key (SHOOTOUT_KEY_ENVS)."""

from __future__ import annotations

import fnmatch

from services.core.config.settings import DEFAULT_KEY_ENVS, get_settings

#: Never an engine's key, whatever the allowlist: the app's own settings and the host's
#: well-known secrets. A viewer who could name SHOOTOUT_PASSWORD as "the key" of an engine at
#: their own URL received the password as a Bearer token.
NEVER_KEY_ENVS = (
    "SHOOTOUT_*",
    "*PASSWORD*",
    "*DATABASE_URL*",
    "*SECRET_ACCESS*",
    "*PRIVATE_KEY*",
    "*SESSION*",
)
#: Exceptions to the first rule: variables meant to hold engine keys in the app's namespace.
SHOOTOUT_KEY_NAMESPACE = ("SHOOTOUT_KEY_*", "SHOOTOUT_*_KEY")


def key_env_allowed(name: str) -> bool:
    """May an engine read its API key from the environment variable `name`? Only names on the
    operator's list (SHOOTOUT_KEY_ENVS, patterns; default *KEY* and *TOKEN*), never the app's
    own settings or the host's usual secrets."""
    upper = name.upper()
    patterns = get_settings().key_envs or DEFAULT_KEY_ENVS
    if not any(fnmatch.fnmatchcase(upper, p) for p in patterns):
        return False
    in_namespace = any(fnmatch.fnmatchcase(upper, p) for p in SHOOTOUT_KEY_NAMESPACE)
    denied = [p for p in NEVER_KEY_ENVS if not (p == "SHOOTOUT_*" and in_namespace)]
    return not any(fnmatch.fnmatchcase(upper, p) for p in denied)


def key_env_refusal(name: str) -> str:
    allowed = ",".join(get_settings().key_envs or DEFAULT_KEY_ENVS)
    return (
        f"The API key variable {name} is not one an engine may use here (allowed: {allowed}; never the app's "
        "own settings or passwords). The operator sets the list with SHOOTOUT_KEY_ENVS."
    )
