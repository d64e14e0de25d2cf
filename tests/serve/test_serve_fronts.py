"""Which front answers a path's errors comes from the fronts' own endpoints: each front holds the
paths its endpoints take and the paths below them, no two fronts hold one path, and a path no
front's endpoint reaches is nobody's (answered in OpenAI's shape)."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from starlette.routing import Route

from toolrouting._serve.endpoints import FRONTS
from toolrouting._serve.front import Front

#: Paths each front's endpoints take or lie above, by the front's first endpoint's path.
HELD = {
    "/v1/chat/completions": ["/v1/chat/completions", "/v1/chat/completions/x"],
    "/v1/messages": [
        "/v1/messages",
        "/v1/messages/count_tokens",
        "/v1/messages/batches",
        "/v1/messages/count_tokens/more",
    ],
    "/v1/responses": ["/v1/responses", "/v1/responses/resp_1", "/v1/responses/resp_1/cancel"],
}
NOBODYS = ["/health", "/v1/models", "/v1/chat", "/v1/chat/other", "/v1/messagesx", "/v1/responsesx", "/"]


def _owners(path: str) -> list[str]:
    return [front.endpoints[0].path for front in FRONTS if front.holds(path)]


@pytest.mark.parametrize(("front", "path"), [(front, path) for front, held in HELD.items() for path in held])
def test_each_front_holds_its_endpoints_paths_and_those_below_them(front: str, path: str) -> None:
    assert _owners(path) == [front]


@pytest.mark.parametrize("path", NOBODYS)
def test_a_path_no_endpoint_reaches_is_no_fronts(path: str) -> None:
    assert _owners(path) == []


def test_a_new_endpoint_brings_its_paths_with_it() -> None:
    """A front is what its endpoints are: one more endpoint holds its own paths, and no table
    of prefixes has to learn it."""

    async def nothing() -> None:
        raise AssertionError

    front = Front(endpoints=[Route("/v1/batches/{batch_id}", nothing)], error_body=lambda reply: {})
    assert front.holds("/v1/batches/b_1")
    assert front.holds("/v1/batches/b_1/results")
    assert not front.holds("/v1/batch")
    assert not front.holds("/v1/batches")
