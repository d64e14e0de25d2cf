"""OpenAI's Responses API shapes as this front reads and writes them, typed so the type checker
holds the writer (``writer``) and the reader's echo (``reader``) to them: the response object
(:class:`ResponseObject`) with its output items (a message and its ``output_text`` part, a
``function_call``, a ``reasoning`` item) and its usage; the request's fields it repeats
(:class:`ResponseEcho`); the stream's events (:class:`StreamEvent`), each with its
``sequence_number``; a deleted response. They are plain dictionaries at run time, written as
built, so typing them changes no byte on the wire. The error body is the one every front shares
(``errors.ErrorBody``); the stream's ``error`` event is here.

Where a response repeats what the client sent, the client's free-form JSON stays ``Any``: the
``tools`` as sent (their ``parameters`` are the client's JSON schemas), the ``tool_choice`` as
sent, a ``text.format``'s ``schema``, and the ``metadata`` object.
"""

# No postponed annotations: Python 3.11 reads ``NotRequired`` only from evaluated ones, so these
# keep their required and optional keys right at run time (``__required_keys__``).
from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "ContentPartEvent",
    "DeletedResponse",
    "ErrorEvent",
    "FormatEcho",
    "FunctionCallArgumentsDelta",
    "FunctionCallArgumentsDone",
    "FunctionCallItem",
    "IncompleteDetails",
    "InputTokensDetails",
    "ItemStatus",
    "MessageItem",
    "OutputItem",
    "OutputItemEvent",
    "OutputText",
    "OutputTextDelta",
    "OutputTextDone",
    "OutputTokensDetails",
    "ReasoningEcho",
    "ReasoningItem",
    "ReasoningSummaryPartEvent",
    "ReasoningSummaryTextDelta",
    "ReasoningSummaryTextDone",
    "ReasoningText",
    "ReasoningTextDelta",
    "ReasoningTextDone",
    "ResponseEcho",
    "ResponseEvent",
    "ResponseObject",
    "ResponsesUsage",
    "StreamEvent",
    "SummaryText",
    "TextEcho",
]

#: Where a response or one of its items is: being written, whole, or cut at the answer's cap.
ItemStatus = Literal["in_progress", "completed", "incomplete"]


class InputTokensDetails(TypedDict):
    """The prompt's tokens the backend's cache held; none written to a cache."""

    cached_tokens: int
    cache_write_tokens: int


class OutputTokensDetails(TypedDict):
    """The output's tokens the thought took, estimated from its characters."""

    reasoning_tokens: int


class ResponsesUsage(TypedDict):
    """A response's usage: the decision's tokens and the answer's, together."""

    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class OutputText(TypedDict):
    """A message's text part (no annotations, no log-probabilities: none is served)."""

    type: Literal["output_text"]
    text: str
    annotations: list[object]
    logprobs: list[object]


class MessageItem(TypedDict):
    """The answer as an output item: one text part (none while it is being added)."""

    id: str
    type: Literal["message"]
    role: Literal["assistant"]
    status: ItemStatus
    content: list[OutputText]


class FunctionCallItem(TypedDict):
    """One call as an output item; a namespace's tool carries its ``namespace``."""

    id: str
    type: Literal["function_call"]
    call_id: str
    name: str
    namespace: NotRequired[str]
    arguments: str
    status: ItemStatus


class SummaryText(TypedDict):
    """A reasoning item's summary part."""

    type: Literal["summary_text"]
    text: str


class ReasoningText(TypedDict):
    """A reasoning item's text part."""

    type: Literal["reasoning_text"]
    text: str


class ReasoningItem(TypedDict):
    """The decision's thought as an output item: its summary when asked, its signed thought
    (``encrypted_content``) when asked."""

    id: str
    type: Literal["reasoning"]
    summary: list[SummaryText]
    content: list[ReasoningText]
    status: ItemStatus
    encrypted_content: NotRequired[str]


OutputItem = MessageItem | FunctionCallItem | ReasoningItem


class IncompleteDetails(TypedDict):
    """Why a response is ``incomplete``: the answer was cut at its cap."""

    reason: Literal["max_output_tokens"]


class FormatEcho(TypedDict):
    """``text.format`` repeated: its type, and a ``json_schema`` format's fields as sent."""

    type: str
    name: NotRequired[str]
    schema: NotRequired[dict[str, Any]]
    strict: NotRequired[bool | None]
    description: NotRequired[str]


class TextEcho(TypedDict):
    """``text`` repeated: its format."""

    format: FormatEcho


class ReasoningEcho(TypedDict):
    """``reasoning`` repeated: the effort and the summary asked for (``None`` when not)."""

    effort: str | None
    summary: str | None


class ResponseEcho(TypedDict):
    """The request's fields a response repeats, as the reader read them."""

    instructions: str | None
    metadata: dict[str, Any] | None
    tools: list[Any]
    tool_choice: Any
    parallel_tool_calls: bool
    temperature: float | None
    top_p: float | None
    max_output_tokens: int | None
    previous_response_id: str | None
    text: TextEcho
    reasoning: ReasoningEcho
    truncation: Literal["auto", "disabled"]
    store: bool


class ResponseObject(TypedDict):
    """A ``response`` object: its own fields, then the request's it repeats (``metadata`` ``{}``
    when none was sent)."""

    id: str
    object: Literal["response"]
    created_at: int
    status: ItemStatus
    completed_at: int | None
    background: bool
    error: None
    incomplete_details: IncompleteDetails | None
    model: str
    output: list[OutputItem]
    reasoning: ReasoningEcho
    usage: ResponsesUsage | None
    user: None
    instructions: str | None
    metadata: dict[str, Any]
    tools: list[Any]
    tool_choice: Any
    parallel_tool_calls: bool
    temperature: float | None
    top_p: float | None
    max_output_tokens: int | None
    previous_response_id: str | None
    text: TextEcho
    truncation: Literal["auto", "disabled"]
    store: bool


class DeletedResponse(TypedDict):
    """What ``DELETE /v1/responses/{id}`` answers."""

    id: str
    object: Literal["response"]
    deleted: bool


class _Numbered(TypedDict):
    """What every stream event carries: its place in the stream, from 0."""

    sequence_number: int


class ResponseEvent(_Numbered):
    """The response as it stands: created, in progress, completed, or incomplete."""

    type: Literal["response.created", "response.in_progress", "response.completed", "response.incomplete"]
    response: ResponseObject


class OutputItemEvent(_Numbered):
    """An output item added, or done."""

    type: Literal["response.output_item.added", "response.output_item.done"]
    output_index: int
    item: OutputItem


class ContentPartEvent(_Numbered):
    """The message's text part added, or done."""

    type: Literal["response.content_part.added", "response.content_part.done"]
    item_id: str
    output_index: int
    content_index: int
    part: OutputText


class OutputTextDelta(_Numbered):
    """A part of the answer's text."""

    type: Literal["response.output_text.delta"]
    item_id: str
    output_index: int
    content_index: int
    delta: str
    logprobs: list[object]


class OutputTextDone(_Numbered):
    """The answer's text, whole."""

    type: Literal["response.output_text.done"]
    item_id: str
    output_index: int
    content_index: int
    text: str
    logprobs: list[object]


class FunctionCallArgumentsDelta(_Numbered):
    """A part of a call's arguments' JSON text."""

    type: Literal["response.function_call_arguments.delta"]
    output_index: int
    item_id: str
    delta: str


class FunctionCallArgumentsDone(_Numbered):
    """A call's arguments, whole."""

    type: Literal["response.function_call_arguments.done"]
    item_id: str
    output_index: int
    name: str
    arguments: str


class ReasoningTextDelta(_Numbered):
    """A part of the thought."""

    type: Literal["response.reasoning_text.delta"]
    item_id: str
    output_index: int
    content_index: int
    delta: str


class ReasoningTextDone(_Numbered):
    """The thought, whole."""

    type: Literal["response.reasoning_text.done"]
    item_id: str
    output_index: int
    content_index: int
    text: str


class ReasoningSummaryPartEvent(_Numbered):
    """The summary's part added, or done."""

    type: Literal["response.reasoning_summary_part.added", "response.reasoning_summary_part.done"]
    item_id: str
    output_index: int
    summary_index: int
    part: SummaryText


class ReasoningSummaryTextDelta(_Numbered):
    """A part of the summary."""

    type: Literal["response.reasoning_summary_text.delta"]
    item_id: str
    output_index: int
    summary_index: int
    delta: str


class ReasoningSummaryTextDone(_Numbered):
    """The summary, whole."""

    type: Literal["response.reasoning_summary_text.done"]
    item_id: str
    output_index: int
    summary_index: int
    text: str


class ErrorEvent(_Numbered):
    """A failure that cut the stream: the error object's code, message and field."""

    type: Literal["error"]
    code: str | None
    message: str
    param: str | None


StreamEvent = (
    ResponseEvent
    | OutputItemEvent
    | ContentPartEvent
    | OutputTextDelta
    | OutputTextDone
    | FunctionCallArgumentsDelta
    | FunctionCallArgumentsDone
    | ReasoningTextDelta
    | ReasoningTextDone
    | ReasoningSummaryPartEvent
    | ReasoningSummaryTextDelta
    | ReasoningSummaryTextDone
    | ErrorEvent
)
