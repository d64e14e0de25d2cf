"""The server as three calls: the Starlette application over a backend, the uvicorn
configuration it runs under, and the uvicorn server that tells it when it begins to stop.

Starlette and uvicorn are the ``serve`` extra's: they are imported when these are called, so
``import toolrouting`` needs neither, and a missing one is an ImportError that names the extra.
The route table is ``endpoints``'s, what the fronts share on the wire ``transport``'s, and what every
endpoint reads from the app's state ``server_state``'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from types import FrameType
from typing import TYPE_CHECKING

from .._backends import AsyncBackend, AsyncEmbeddedLlama
from .._grounding import AbstainPolicy
from .._limits import (
    DEFAULT_MAX_REPEATS,
    DEFAULT_ROUTING_CAP,
    SERVE_ANSWER_TOKENS,
    SERVE_EMBEDDED_QUEUE,
    SERVE_MAX_BODY_BYTES,
    SERVE_MAX_IN_FLIGHT,
    SERVE_STOP_GRACE,
)
from .._shortlist import Ranker
from .core import RoutedEngine
from .reasoning import Signer
from .request_log import RequestRecord

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

__all__ = ["serve_app", "server_config", "stopping_server"]


def serve_app(
    backend: AsyncBackend,
    *,
    model: str = "toolrouting",
    cap: int = DEFAULT_ROUTING_CAP,
    answer_tokens: int = SERVE_ANSWER_TOKENS,
    in_flight: int | None = None,
    require_key: str | None = None,
    secrets: Sequence[str] = (),
    owned: bool = False,
    max_calls: int = 1,
    shortlist: int | None = None,
    abstain: AbstainPolicy = "off",
    ranker: Ranker | None = None,
    reasoning_secret: str | None = None,
    max_repeats: int = DEFAULT_MAX_REPEATS,
    request_log: Callable[[RequestRecord], None] | None = None,
) -> Starlette:
    """The server over ``backend``, with every front (chat completions, Responses, Messages): a
    Starlette app.

    ``model`` is the name ``/v1/models`` lists; ``require_key`` the key every ``/v1`` request
    must carry, as a bearer token or ``x-api-key`` (none when ``None``); ``secrets`` are never
    written into an error. ``in_flight`` bounds the requests held at once: by default
    ``SERVE_EMBEDDED_QUEUE`` for the embedded model, which takes them in turn, and
    ``SERVE_MAX_IN_FLIGHT`` for any other backend.
    ``owned=True`` closes the backend when the server stops, in the event loop that served it
    (an HTTP backend's connections belong to that loop); otherwise the caller closes it.
    ``max_calls`` above 1 lets a decision make up to that many calls when the request's
    ``parallel_tool_calls`` is true or absent (docs/serve-reference.md). ``shortlist=K`` offers a request
    of more than K tools only the K ranked best for its conversation, in the instructions and
    the route (docs/serve-design.md, "Large catalogues"); ``None`` offers every tool. ``ranker`` ranks
    them (given only with ``shortlist``): ``None`` is :func:`default_ranker`, which indexes each
    catalogue once, keyed on its bytes, and ranks by BM25 alone (``IndexedRanker(semantic=True)``
    ranks by meanings and BM25); any :class:`Ranker` may replace it.
    ``abstain="grounding"`` answers a decision under ``tool_choice`` auto whose required
    arguments the conversation does not give, saying what was missing, instead of handing out its
    call (docs/serve-design.md, "Abstention"). ``reasoning_secret`` signs the thoughts a reply carries, so a
    client that sends one back is checked (docs/serve-reference.md, "Thinking and reasoning"): random when
    ``None``, so only this app takes its own. ``max_repeats`` is the loop's repeat limit applied to
    each conversation: since its question, a call made more than that many times, its result
    there, is not offered again, its tool withheld from the route and named in the
    ``x-toolrouting-withheld`` header (docs/serve-design.md, "Repeated calls"). ``request_log`` is called
    with each request's :class:`RequestRecord` (all but ``/health``) once its response is finished
    or its client left (docs/serve-reference.md, "The request log"); ``None`` records none. Needs
    the ``serve`` extra (``pip install 'toolrouting[serve]'``).
    """
    try:
        from starlette.applications import Starlette
    except ImportError as error:
        raise _without_extra(error) from error
    from starlette.middleware import Middleware

    from .endpoints import ENDPOINTS, EXCEPTION_HANDLERS
    from .request_log import RequestLog
    from .server_state import ServerState
    from .transport import Admission

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if owned:
                await backend.aclose()

    logged = [] if request_log is None else [Middleware(RequestLog, log=request_log)]
    app = Starlette(
        lifespan=lifespan, routes=ENDPOINTS, exception_handlers=EXCEPTION_HANDLERS, middleware=logged
    )
    app.state.server = ServerState(
        engine=RoutedEngine(
            backend,
            cap=cap,
            answer_tokens=answer_tokens,
            max_calls=max_calls,
            shortlist=shortlist,
            abstain=abstain,
            ranker=ranker,
            max_repeats=max_repeats,
        ),
        admission=Admission(in_flight or _in_flight(backend)),
        model=model,
        require_key=require_key,
        secrets=tuple(s for s in (*secrets, require_key, reasoning_secret) if s),
        signer=Signer(reasoning_secret),
    )
    return app


def _in_flight(backend: AsyncBackend) -> int:
    return SERVE_EMBEDDED_QUEUE if isinstance(backend, AsyncEmbeddedLlama) else SERVE_MAX_IN_FLIGHT


def server_config(app: Starlette, *, host: str, port: int, log_level: str = "warning") -> uvicorn.Config:
    """The one uvicorn configuration the server runs under; the caller starts and stops it.
    Needs the ``serve`` extra (``pip install 'toolrouting[serve]'``)."""
    try:
        import uvicorn
    except ImportError as error:
        raise _without_extra(error) from error
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        # The requests still running past SERVE_STOP_GRACE are answered 503 (``stopping``); the
        # two seconds more are for those answers to go out before uvicorn cancels what is left.
        timeout_graceful_shutdown=SERVE_STOP_GRACE + 2,
        h11_max_incomplete_event_size=SERVE_MAX_BODY_BYTES,
    )


def stopping_server(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn's server for ``config``, whose exit signals (Ctrl-C, SIGTERM) tell the application
    first that it is stopping: a request still running :data:`SERVE_STOP_GRACE` seconds later is
    answered 503 ``server_stopping`` in its API's shape, where uvicorn alone would cancel it into a
    bare 500 and a traceback."""
    import uvicorn

    from .server_state import ServerState

    state = getattr(getattr(config.app, "state", None), "server", None)
    stopping = state.stopping if isinstance(state, ServerState) else None

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if stopping is not None:
                stopping.begin()
            super().handle_exit(sig, frame)

    return _Server(config)


def _without_extra(error: ImportError) -> ImportError:
    return ImportError(f"the server needs the serve extra: pip install 'toolrouting[serve]' ({error})")
