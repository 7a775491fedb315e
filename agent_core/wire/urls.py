"""A model endpoint's URL as a trace may show it: never with credentials.

Two forms, kept side by side so they stay one idea: `public_url` is what the model client
and the capture proxy keep of an endpoint (no user:password, no key-like query parameter,
other parameters kept, such as an `api-version`); `public_base_url` is what the loop writes
to `run_start` (no query at all).
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

_SECRET_QUERY_WORDS = ("key", "token", "secret", "sig", "auth", "password")


def public_url(url: str) -> str:
    """The URL without credentials: no user:password, no key-like query parameters."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    query = [
        (name, value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if not any(word in name.lower() for word in _SECRET_QUERY_WORDS)
    ]
    return urlunsplit((parts.scheme, host, parts.path, urlencode(query), ""))


def public_base_url(url: str | None) -> str | None:
    """The base URL without user:password or query secrets."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
