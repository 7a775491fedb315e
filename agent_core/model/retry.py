"""When a failed model attempt is worth another try, and how long to wait before it.

The openai SDK's convention: a server's `x-should-retry: true|false` header decides first
(serve-model says `false` for a request its recording does not match); otherwise 408, 409
(a lock timeout), 429 and 5xx are retried, and 400, 401, 403, 404, 422 and any other 4xx are
not. Connection errors and timeouts are retried too. Waits grow exponentially with jitter,
honour Retry-After, and stay within a total deadline.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

RETRIABLE_4XX = frozenset({408, 409, 429})


def retriable_status(status: int | None) -> bool:
    if status is None:
        return False
    return status in RETRIABLE_4XX or status >= 500


def status_decision(status: int, headers: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Whether an HTTP error status is worth another try, and why, in a few words."""
    lowered = {key.lower(): value for key, value in (headers or {}).items()}
    said = lowered.get("x-should-retry", "").strip().lower()
    if said in ("true", "false"):
        return said == "true", f"the server sent x-should-retry: {said}"
    if retriable_status(status):
        return True, f"HTTP {status} may pass on another try"
    return False, f"HTTP {status} will not change on another try"


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5
    initial_backoff_s: float = 0.5
    multiplier: float = 2.0
    max_backoff_s: float = 20.0
    jitter: float = 0.25  # +/- this fraction of the computed backoff
    deadline_s: float = 300.0  # the whole call, every attempt and wait included
    max_retry_after_s: float = 60.0  # a longer Retry-After means: give up now

    def backoff_s(self, failed_attempt: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after attempt number `failed_attempt` (1-based) failed."""
        if retry_after_s is not None:
            # The server said when; waiting less would just fail again.
            return max(0.0, retry_after_s)
        base = min(
            self.max_backoff_s, self.initial_backoff_s * self.multiplier ** (failed_attempt - 1)
        )
        return max(0.0, base * (1.0 + self.jitter * random.uniform(-1.0, 1.0)))


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from `retry-after-ms` or `Retry-After` (seconds or an HTTP date), if present."""
    if not headers:
        return None
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
