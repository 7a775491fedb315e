"""Secret redaction applied at write time, so no secret ever reaches a trace file.

Placeholders are stable: the same secret always becomes the same placeholder within a
redactor, so two redacted lines can still be compared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_AUTH_KEYS = frozenset({"authorization", "proxy-authorization", "api_key", "api-key", "x-api-key"})
# Bearer tokens and common key shapes, wherever they appear inside text.
_BEARER = re.compile(r"(?i)\bBearer\s+[A-Za-z0-9._~+/=-]{8,}")
# Characters JSON serializers write unchanged, so a secret made of them appears verbatim.
_JSON_VERBATIM = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]+")


class Redactor:
    def __init__(self, secrets: Iterable[str] = (), patterns: Iterable[str] = ()) -> None:
        self._secrets: list[str] = []
        self._verbatim = True
        self._patterns = [re.compile(p) for p in patterns]
        for secret in secrets:
            self.add_secret(secret)

    def add_secret(self, secret: str | None) -> None:
        if secret and len(secret) >= 4 and secret not in self._secrets:
            self._secrets.append(secret)
            self._verbatim = self._verbatim and bool(_JSON_VERBATIM.fullmatch(secret))

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, "[REDACTED:api_key]")
        value = _BEARER.sub("Bearer [REDACTED:authorization]", value)
        for number, pattern in enumerate(self._patterns, start=1):
            value = pattern.sub(f"[REDACTED:pattern-{number}]", value)
        return value

    def json_text(self, text: str) -> str | None:
        """`text`, a serialized JSON value, unchanged when redacting its values would change
        nothing; None when it may hold something to redact and the caller must walk the
        values (`value`). The check reads the text alone: secrets, auth key names and
        "bearer" are made of characters JSON writes verbatim, so a value holding one shows
        it in the text. Custom patterns could match text an escape hides, so any pattern
        means None. Redacting in the text itself is not attempted: next to an escape
        (`\\n`), inside a number or a key it would differ from redacting the values."""
        if self._patterns or not self._verbatim:
            return None
        lowered = text.lower()
        # "authorization" and "api-key" are inside every other name in _AUTH_KEYS, so these
        # scans are enough to know whether an auth-named key may be present.
        if "authorization" in lowered or "bearer" in lowered:
            return None
        if "api" in lowered and ("api_key" in lowered or "api-key" in lowered):
            return None
        for secret in self._secrets:
            if secret in text:
                return None
        return text

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (dicts, lists, scalars)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if isinstance(key, str) and key.lower() in _AUTH_KEYS and isinstance(item, str):
                    out[key] = "[REDACTED:authorization]"
                else:
                    out[key] = self.value(item)
            return out
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value
