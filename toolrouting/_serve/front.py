"""What a front gives the server's route table: its endpoints, the path they live under, and its
error writer, so that an error of a request under that path is answered in the front's own shape
(a path no front holds, ``/health`` or one no route takes, is answered in OpenAI's)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from .error_replies import ErrorReply

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

__all__ = ["Front"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Front:
    """One API's front, as the route table takes it."""

    path: str
    """Where the front's endpoints live: a request to it or below it is the front's to answer."""
    endpoints: Sequence[BaseRoute]
    error_body: Callable[[ErrorReply], Mapping[str, object]]
    """The front's error writer: an error's body in the API's shape (a stream's is its writer's
    ``failed``)."""

    def holds(self, path: str) -> bool:
        """Whether a request to ``path`` is the front's."""
        return path == self.path or path.startswith(f"{self.path}/")
