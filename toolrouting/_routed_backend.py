"""The request backend: a clone that carries the route schema and a low completion cap."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, TypeVar

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


def routing_cap(backend: Any, max_tokens: int) -> int:
    """The cap a routing request gets: ``max_tokens``, or the backend's own budget when lower."""
    _check_budget(max_tokens)
    own = _settings(backend).max_tokens
    return max_tokens if own is None else min(own, max_tokens)


def routed_backend(backend: B, schema: Mapping[str, Any], max_tokens: int) -> B:
    """A clone of ``backend`` whose settings carry ``schema`` (as ``tool_route``) and ``max_tokens``.

    The schema is copied, and ``backend`` is left untouched, so a structured phase built
    from the same backend keeps its own schema and its own budget.
    """
    if not isinstance(schema, Mapping):
        raise TypeError(f"a route schema is a mapping (see route_schema), not {type(schema).__name__}")
    _check_budget(max_tokens)
    settings = _settings(backend).clone(
        json_schema=copy.deepcopy(dict(schema)), json_schema_name=ROUTE_SCHEMA_NAME, max_tokens=max_tokens
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


def _check_budget(max_tokens: object) -> None:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"a completion cap is a positive integer, not {max_tokens!r}")
