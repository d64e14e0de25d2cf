"""ECMA-262's regular expressions as regress (a Rust implementation) reads them: the oracle that
the pattern checks are tested against, since jsonschema checks patterns with Python's re."""

from __future__ import annotations

import regress

__all__ = ["regress_accepts"]


def regress_accepts(pattern: str, flags: str) -> bool:
    """Whether ``pattern`` is a valid ECMA-262 regular expression with ``flags`` (``"u"`` or ``""``)."""
    try:
        regress.Regex(pattern, flags)
    except Exception:  # regress raises its own RegressError, and ValueError for bad flags
        return False
    return True
