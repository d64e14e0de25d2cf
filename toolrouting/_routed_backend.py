"""The request backend: a clone that carries the route schema and a low completion cap."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, TypeVar

from ._json import is_count
from ._limits import ROUTE_SCHEMA_NAME

__all__ = ["can_route", "routed_backend", "routing_cap"]

B = TypeVar("B")

_SETTINGS_FIELDS = ("json_schema", "json_schema_name", "max_tokens")


def can_route(backend: object) -> bool:
    """Whether ``backend`` has what routing needs: ``clone`` and ``settings`` with
    ``json_schema``, ``json_schema_name``, ``max_tokens`` and ``clone``."""
    try:
        settings = getattr(backend, "settings", None)
        return (
            callable(getattr(backend, "clone", None))
            and settings is not None
            and callable(getattr(settings, "clone", None))
            and all(hasattr(settings, name) for name in _SETTINGS_FIELDS)
        )
    except Exception:  # a property that raises is a backend we cannot route through
        return False


def routing_cap(backend: Any, cap: int) -> int:
    """The cap a routing request gets: ``cap``, or the backend's own cap when that is lower."""
    _check_cap(cap)
    own = _settings(backend).max_tokens
    return cap if own is None else min(own, cap)


def routed_backend(backend: B, schema: Mapping[str, Any], cap: int) -> B:
    """A clone of ``backend`` whose settings carry ``schema`` (as ``tool_route``) and the completion ``cap``.

    The schema is copied, and ``backend`` is left untouched, so a structured phase built
    from the same backend keeps its own schema and its own cap.
    """
    if not isinstance(schema, Mapping):
        raise TypeError(f"a route schema is a mapping (see route_schema), not {type(schema).__name__}")
    _check_cap(cap)
    settings = _settings(backend).clone(
        json_schema=copy.deepcopy(dict(schema)), json_schema_name=ROUTE_SCHEMA_NAME, max_tokens=cap
    )
    clone: B = backend.clone(settings=settings)  # type: ignore[attr-defined]
    return clone


def _settings(backend: object) -> Any:
    if not can_route(backend):
        raise TypeError(
            f"{type(backend).__name__} cannot route: a backend needs clone() and settings with "
            "json_schema, json_schema_name, max_tokens and clone() (see toolrouting.Backend)"
        )
    return backend.settings  # type: ignore[attr-defined]


def _check_cap(cap: object) -> None:
    if not is_count(cap, 1):
        raise ValueError(f"a completion cap is a positive integer, not {cap!r}")
