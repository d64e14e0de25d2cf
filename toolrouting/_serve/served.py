"""What every endpoint reads from the application's state: the core, the queue, the key and the
stored responses, put there once by ``serve_app``."""

from __future__ import annotations

import dataclasses

from starlette.requests import Request

from .chat import ServedChat
from .responses_store import ResponseStore
from .transport import Admission

__all__ = ["Served", "served_of"]


@dataclasses.dataclass(kw_only=True)
class Served:
    """The server's one core and what its fronts share."""

    chat: ServedChat
    admission: Admission
    model: str
    require_key: str | None
    secrets: tuple[str, ...]
    responses: ResponseStore = dataclasses.field(default_factory=ResponseStore)


def served_of(request: Request) -> Served:
    """The application's ``Served``, which every endpoint reads."""
    served: Served = request.app.state.served
    return served
