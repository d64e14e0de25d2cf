"""What every endpoint reads from the application's state, put there once by ``serve_app``: the
core, the queue, the key, the secrets and the signer of thoughts (:class:`ServerState`), in no
API's shape: what one front keeps for itself (the Responses front's stored responses) is its own."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable

from starlette.requests import Request
from starlette.responses import Response

from .core import Conversation, ReplyWriter, RoutedEngine, ServeRequest
from .reasoning import Signer
from .stopping import Stopping
from .transport import Admission, answer, check_key

__all__ = ["ServerState", "checked_state", "state_of"]

_LOG = logging.getLogger("toolrouting.serve")


@dataclasses.dataclass(kw_only=True)
class ServerState:
    """The server's one core (``engine``) and what its fronts share."""

    engine: RoutedEngine
    admission: Admission
    model: str
    require_key: str | None
    secrets: tuple[str, ...]
    signer: Signer = dataclasses.field(default_factory=Signer)
    """Signs the thoughts the replies carry, and checks those sent back."""
    stopping: Stopping = dataclasses.field(default_factory=Stopping)
    """Told when the server begins to stop: a request still running past the grace is answered 503."""
    omitted: set[str] = dataclasses.field(default_factory=set)
    """The hosted tool types left out of an offer so far: each is logged once."""

    def warn_omitted(self, kinds: Iterable[str]) -> None:
        """A log line, once for each hosted tool type a request offered and the server left out."""
        for kind in kinds:
            if kind not in self.omitted:
                self.omitted.add(kind)
                _LOG.warning(
                    "toolrouting serve: left the hosted tool %r out of the offer (this server runs no "
                    "hosted tool); each response that leaves one out names it in x-toolrouting-omitted-tools",
                    kind,
                )

    async def answer(
        self, request: Request, asked: ServeRequest, writer: ReplyWriter, built: Conversation | None = None
    ) -> Response:
        """The reply to ``asked``, whole or streamed, in ``writer``'s shapes; ``built`` is its
        conversation where the front built it already."""
        return await answer(
            request, self.admission, self.engine, asked, writer, self.secrets, built, self.stopping
        )


def state_of(request: Request) -> ServerState:
    """The application's :class:`ServerState`."""
    state: ServerState = request.app.state.server
    return state


def checked_state(request: Request) -> ServerState:
    """The application's :class:`ServerState`, once the request's key has been checked."""
    state = state_of(request)
    check_key(request, state.require_key)
    return state
