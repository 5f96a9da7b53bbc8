"""One check for every http(s) URL a person types: an engine's base or metrics URL, a URL to
scrape, a Prometheus server, a dcgm-exporter. urllib raises ValueError on some of them
(`http://[::1`, `http://[zz]:80`, `http://a:b:c`) wherever their parts are read, which reached
the command line as a traceback from each place that read them; here they are refused once,
in words, before anything is fetched."""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit

from services.core.errors import ValidationError

_SCHEME_LIKE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(?!\d)")
_HOST = re.compile(
    r"^(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$"
)
#: Longer than any URL a person types; past it the text is refused before it is parsed.
MAX_URL_CHARS = 2000


def check_url(url: str, what: str = "URL") -> tuple[str, SplitResult]:
    """`url` with its scheme (http:// when it has none) and its parts, each part readable;
    a ValidationError naming the typo otherwise (`htp:/bad url` once became `http://htp:/bad url`,
    a host that does not resolve)."""
    url = (url or "").strip()
    if not url:
        raise ValidationError(f"The {what} is empty.")
    if len(url) > MAX_URL_CHARS:
        raise ValidationError(f"The {what} is longer than {MAX_URL_CHARS} characters.")
    if any(c.isspace() for c in url):
        raise ValidationError(f"{url!r} contains a space; a {what} has none.")
    if "://" not in url:
        scheme = _SCHEME_LIKE.match(url)
        if scheme:
            raise ValidationError(
                f"{url!r} does not start with http:// or https:// (it starts with {scheme.group(1)!r}:)."
            )
        url = "http://" + url
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError as error:  # "http://[::1": an unclosed or invalid IPv6 address
        raise ValidationError(f"{url[:200]!r} is not a valid {what}: {error}.") from None
    if parts.scheme not in ("http", "https"):
        raise ValidationError(f"Unsupported URL scheme {parts.scheme!r}: use http:// or https://.")
    if parts.username is not None or parts.password is not None:
        raise ValidationError(
            "Put no user name or password in the URL: name the environment variable that holds "
            "the API key instead."
        )
    if not host:
        raise ValidationError(f"{url!r} has no host name.")
    is_ip6 = parts.netloc.split("@")[-1].startswith("[")
    if not is_ip6 and not _HOST.match(host):
        raise ValidationError(f"{host!r} in {url!r} is not a valid host name.")
    try:
        port = parts.port
    except ValueError:  # past 65535, or not a number ("http://a:b:c")
        raise ValidationError(f"{url!r} has an invalid port (1-65535).") from None
    if port is None and parts.netloc.endswith(":"):
        raise ValidationError(f"{url!r} has a ':' but no port number after it.")
    if port == 0:
        raise ValidationError(f"{url!r} has an invalid port (1-65535).")
    return url, parts


def http_url(url: str, what: str = "URL") -> str:
    """`url` as `check_url` passes it (with its scheme), or a ValidationError."""
    return check_url(url, what)[0]
