"""Streamlit's OIDC login cookie, read by Streamlit's own reader, and the key of that login.

Streamlit signs a login into `_streamlit_user`; one too big for a cookie is split: the main
cookie then holds `chunks-N` and the value is in `_streamlit_user_1` to `_streamlit_user_N`
(`streamlit.auth_util.get_cookie_with_chunks`). A logout is recorded under the login's key
(services/team/oidc_logins.py), so the key is over exactly the cookies that reader uses, noted
as it asks for them: a cookie it ignores (`_streamlit_user__x`, a chunk past N) cannot make a
logged-out login look new (issue 56), and two chunked logins signed in the same second, whose
main cookies are equal, keep keys of their own. The gate and the pages (`common.viewer()`) both
ask here, so they key a login alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from services.team import oidc_logins


class _Noting(dict[str, str]):
    """The request's cookies, noting each one a reader asks for by name."""

    def __init__(self, cookies: Mapping[str, str]) -> None:
        super().__init__(cookies)
        self.asked: dict[str, str] = {}

    def __getitem__(self, name: str) -> str:
        value = super().__getitem__(name)
        self.asked[name] = value
        return value

    # dict's own `get` does not go through __getitem__; Streamlit's reader calls `get`.
    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default


@dataclass(frozen=True)
class OidcCookie:
    #: The login's claims as Streamlit signed them (JSON), None when absent or not valid.
    value: bytes | None
    #: The login's key (oidc_logins.login_key), None without the login cookie.
    key: str | None


def read(cookies: Mapping[str, str]) -> OidcCookie:
    """Streamlit's login cookie in `cookies`, read as Streamlit reads it, and its key."""
    if oidc_logins.LOGIN_COOKIE not in cookies:
        return OidcCookie(None, None)
    # Streamlit's reader (its signing secret, its chunks); imported here, as the gate's other
    # Streamlit internals are, so that the gate imports without Streamlit.
    from streamlit.web.server.starlette.starlette_websocket import _get_signed_cookie_with_chunks

    noting = _Noting(cookies)
    value = _get_signed_cookie_with_chunks(noting, oidc_logins.LOGIN_COOKIE)
    return OidcCookie(value, oidc_logins.login_key(noting.asked))


def login_key(cookies: Mapping[str, str]) -> str | None:
    """The key of the OIDC login these cookies carry, None without one."""
    return read(cookies).key
