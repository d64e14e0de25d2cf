"""What a front gives the server's route table: its endpoints and its error writer. An error of a
request one of those endpoints takes, or of a path below one of them, is answered in the front's
own shape; a path no front's endpoint reaches (``/health``, ``/v1/chat/other``) is answered in
OpenAI's. Which front a path is comes from the front's routes alone, so a new endpoint carries its
error shape with it and no table of prefixes is kept beside the routes."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from starlette.routing import Route

from .error_replies import ErrorReply

__all__ = ["Front"]


def _reaches(route: Route, path: str) -> bool:
    """Whether ``route`` takes ``path`` in some method, or ``path`` lies below its fixed part
    (``/v1/messages/batches`` below ``/v1/messages``, ``/v1/responses/x/y`` below
    ``/v1/responses/{response_id}``)."""
    if route.path_regex.match(path):
        return True
    fixed = route.path.split("{", 1)[0].rstrip("/")
    return path.startswith(f"{fixed}/")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Front:
    """One API's front, as the route table takes it."""

    endpoints: Sequence[Route]
    error_body: Callable[[ErrorReply], Mapping[str, object]]
    """The front's error writer: an error's body in the API's shape (a stream's is its writer's
    ``failed``)."""

    def holds(self, path: str) -> bool:
        """Whether a request to ``path`` is the front's: one of its endpoints takes it, or it lies
        below one of them."""
        return any(_reaches(route, path) for route in self.endpoints)
