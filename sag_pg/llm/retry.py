"""When to retry an LLM request and how long to wait: exponential backoff with jitter, or ``Retry-After``."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

# 408/409 are what OpenAI's own client retries besides 429 and 5xx: transient on every server we know.
RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds asked for by ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date), or None."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


@dataclass
class Backoff:
    """Delay before retry number ``attempt`` (0-based).

    Without a server hint: ``base * 2**attempt`` capped at ``maximum``, with "equal jitter"
    (half fixed, half random) so that threads throttled together do not come back together.
    A server's ``Retry-After`` wins but is capped at ``retry_after_max``: a hostile or
    misconfigured server must not park a worker for an hour.
    """

    base: float = 0.5
    maximum: float = 30.0
    retry_after_max: float = 60.0
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(retry_after, self.retry_after_max)
        ceiling = min(self.base * (2**attempt), self.maximum)
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)
