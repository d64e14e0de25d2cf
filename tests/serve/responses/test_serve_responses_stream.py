"""The Responses front's stream in-process: its events, each read by the openai SDK's own types,
rebuild the same call or answer a whole response gets, end ``incomplete`` at the cap, and a
failure is answered with its status before the first event, as an ``error`` event after it.
"""

# ruff: noqa: F811 - the fixtures imported from support.serve_app are the tests' parameters
from __future__ import annotations

from starlette.testclient import TestClient
from support.responses_cases import ACTION, QUESTION, SEARCH, created, error_of, streamed
from support.serve_app import backend, client  # noqa: F401 - a scripted backend, served in-process

from toolrouting import AsyncScriptedBackend, BackendHTTPError, Completion


def test_the_stream_rebuilds_the_same_call(client: TestClient, backend: AsyncScriptedBackend) -> None:
    backend.enqueue(ACTION, ACTION)
    whole = created(client, tools=[SEARCH]).output[0]
    events = streamed(client, tools=[SEARCH])
    kinds = [event.type for event in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-3:] == [
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert set(kinds[3:-3]) == {"response.function_call_arguments.delta"}
    deltas = "".join(event.delta for event in events[3:-3])
    assert deltas == events[-3].arguments == whole.arguments  # type: ignore[union-attr]
    final = events[-1].response
    assert (final.id, final.status) == (events[0].response.id, "completed")
    assert (final.output[0].name, final.output[0].call_id, final.output[0].id) == (
        "search",
        "route-1",
        events[2].item.id,
    )
    assert final.usage.total_tokens > 0


def test_a_streamed_answer_carries_its_text_and_is_stored(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue('{"tool":"none"}', "The latch holds the door.")
    events = streamed(client, tools=[SEARCH])
    kinds = [event.type for event in events]
    assert kinds[2:4] == ["response.output_item.added", "response.content_part.added"]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert text == events[-4].text == "The latch holds the door."
    final = events[-1].response
    assert client.get(f"/v1/responses/{final.id}").json() == final.model_dump(mode="json", exclude_unset=True)


def test_a_streamed_answer_cut_at_its_cap_ends_incomplete(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue("one two three four")
    events = streamed(client, max_output_tokens=2)
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"
    assert events[-1].response.output[0].content[0].text == "one two"


def test_a_failure_before_the_first_event_keeps_its_status(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue(BackendHTTPError(500, "http://x/v1", "boom", "the server answered 500"))
    response = client.post("/v1/responses", json={"input": QUESTION, "stream": True})
    assert error_of(response, 502)["code"] == "BackendHTTPError"


def test_a_failure_after_the_first_event_is_an_error_event(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue(Completion(text='{"tool":"search","arguments":{"query":"la', finish_reason="length"))
    events = streamed(client, tools=[SEARCH])
    assert events[-1].type == "error"
    assert "routing cap" in events[-1].message
    assert events[-1].code == "BackendResponseError"
