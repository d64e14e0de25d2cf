"""Keys kept off what is shown: every secret in a text replaced by one marker.

The server's error bodies and every line the command line prints pass :func:`redacted`, so a
key that an upstream server echoes in its error never reaches a client or a screen.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["REDACTED", "redacted"]

#: What a secret is replaced by.
REDACTED = "[api key hidden]"


def redacted(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` (empty ones skipped) replaced by :data:`REDACTED`, the
    longest first, so a key inside another does not leave the longer one half shown."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text
