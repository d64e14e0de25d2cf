"""The Responses front's store in-process (``_serve/responses/store.py``): a response continued by
its id (``previous_response_id``), read back and deleted (``GET`` / ``DELETE /v1/responses/{id}``),
the oldest evicted, and the key that guards every endpoint.
"""

# ruff: noqa: F811 - the fixtures imported from support.serve_app are the tests' parameters
from __future__ import annotations

from starlette.testclient import TestClient
from support.responses_cases import ACTION, SEARCH, create, created, error_of
from support.serve_app import backend, client  # noqa: F401 - a scripted backend, served in-process

from toolrouting import AsyncScriptedBackend
from toolrouting._serve import serve_app
from toolrouting._serve.core.exchange import ReplyIds
from toolrouting._serve.responses import ResponseStore, StoredResponse, read_responses_request
from toolrouting._serve.responses.output import response_body


def test_a_response_is_continued_by_its_id(client: TestClient, backend: AsyncScriptedBackend) -> None:
    backend.enqueue(ACTION)
    first = created(client, tools=[SEARCH], instructions="Use the notes.")
    call = first.output[0]
    assert call.type == "function_call"
    backend.enqueue('{"tool":"none"}', "It holds the door.")
    output = [{"type": "function_call_output", "call_id": call.call_id, "output": "M1: the latch"}]
    second = created(client, tools=[SEARCH], previous_response_id=first.id, input=output)
    assert (second.output_text, second.previous_response_id, second.instructions) == (
        "It holds the door.",
        first.id,
        None,
    )
    first_sent, second_sent = backend.requests[0].messages, backend.requests[1].messages
    assert "Use the notes." in first_sent[0]["content"]
    assert "Use the notes." not in second_sent[0]["content"]  # instructions are not carried over
    assert second_sent[-2:] == (
        {"role": "assistant", "content": ACTION},
        {"role": "user", "content": "Tool result for search (call route-1):\nM1: the latch"},
    )


def test_get_and_delete_read_the_store(client: TestClient, backend: AsyncScriptedBackend) -> None:
    backend.enqueue("Kept.", "Not kept.")
    kept = create(client).json()
    assert client.get(f"/v1/responses/{kept['id']}").json() == kept
    assert client.head(f"/v1/responses/{kept['id']}").status_code == 200  # reads, never deletes
    assert client.get(f"/v1/responses/{kept['id']}").json() == kept
    not_kept = created(client, store=False)
    assert error_of(client.get(f"/v1/responses/{not_kept.id}"), 404)["code"] == "not_found"
    deleted = client.delete(f"/v1/responses/{kept['id']}")
    assert deleted.json() == {"id": kept["id"], "object": "response", "deleted": True}
    assert error_of(client.get(f"/v1/responses/{kept['id']}"), 404)["code"] == "not_found"
    assert error_of(client.delete(f"/v1/responses/{kept['id']}"), 404)["code"] == "not_found"
    allowed = client.put(f"/v1/responses/{kept['id']}").headers["allow"]
    assert set(allowed.split(", ")) == {"GET", "DELETE", "HEAD"}
    refused = error_of(create(client, previous_response_id=kept["id"]))
    assert refused["code"] == "previous_response_not_found"


def test_the_store_keeps_the_last_responses_and_evicts_the_oldest() -> None:
    store = ResponseStore(limit=2)
    echo = read_responses_request({"input": "q"}, lambda _: None).echo
    for number in range(3):
        ids = ReplyIds(key=str(number), item=str(number), created=0, model="m")  # the id resp_{number}
        store.keep(StoredResponse(body=response_body(ids, echo, None), conversation=()))
    assert (len(store), store.get("resp_0"), store.conversation("resp_2")) == (2, None, ())


def test_the_key_guards_every_responses_endpoint(backend: AsyncScriptedBackend) -> None:
    with TestClient(serve_app(backend, require_key="sekret")) as client:
        for method, path in (
            ("POST", "/v1/responses"),
            ("GET", "/v1/responses/x"),
            ("DELETE", "/v1/responses/x"),
        ):
            response = client.request(method, path, json={"input": "q"})
            assert error_of(response, 401)["code"] == "invalid_api_key"
        backend.enqueue("In.")
        headers = {"Authorization": "Bearer sekret"}
        assert client.post("/v1/responses", json={"input": "q"}, headers=headers).status_code == 200
