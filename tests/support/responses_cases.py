"""The Responses front's requests and how its replies and streams are read, shared by its tests."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, get_args

import httpx
from openai.types.responses import Response, ResponseStreamEvent
from starlette.testclient import TestClient

from support.serve import BARE_SEARCH
from support.serve_app import error_of as openai_error_of

if TYPE_CHECKING:
    import httpx2  # what starlette's TestClient is built on, and answers with

SEARCH = {"type": "function", **BARE_SEARCH["function"]}


QUESTION = "What does the latch do?"
ACTION = '{"tool":"search","arguments":{"query":"latch"}}'


#: The SDK's event type of each event name.
EVENTS: dict[str, Any] = {
    get_args(kind.model_fields["type"].annotation)[0]: kind
    for kind in get_args(get_args(ResponseStreamEvent)[0])
}


def create(client: TestClient, **fields: Any) -> httpx2.Response:
    return client.post("/v1/responses", json={"model": "m", "input": QUESTION, **fields})


def created(client: TestClient, **fields: Any) -> Response:
    response = create(client, **fields)
    assert response.status_code == 200, response.text
    return Response.model_validate(response.json())  # the SDK's own type reads it


def streamed(client: TestClient, **fields: Any) -> list[Any]:
    """The stream's events, each read by the SDK's event types, its ``event:`` line its type."""
    body = {"model": "m", "input": QUESTION, "stream": True, **fields}
    with client.stream("POST", "/v1/responses", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        blocks = response.read().decode().strip().split("\n\n")
    events = []
    for block in blocks:
        name, data = block.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert name == f"event: {event['type']}"
        events.append(EVENTS[event["type"]].model_validate(event))
    assert [event.sequence_number for event in events] == list(range(len(events)))
    return events


def error_of(response: httpx.Response | httpx2.Response, status: int = 400) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return openai_error_of(response)
