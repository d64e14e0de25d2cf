"""The chat completions API's shapes as this front writes them, typed so the type checker holds
the writer (``writer``) to them: a completion (:class:`ChatCompletion`) with its one choice, its
assistant message and its tool calls; a stream's chunks (:class:`ChatCompletionChunk`) and their
deltas; the usage object both carry. They are plain dictionaries at run time, written as built,
so typing them changes no byte on the wire.

Only what this server writes is here, with the values it writes (``logprobs`` is always
``null``, a message's ``refusal`` too); the error body is the one every front shares
(``errors.ErrorBody``). A call's ``arguments`` is the JSON text the model wrote, a string, so no
field of these shapes is a client's free-form JSON. What the reader reads stays the client's
JSON, checked field by field (``fields``): the tools' declarations, whose ``parameters`` are a
JSON schema of the client's, go to the core as the dictionaries the catalogue takes.
"""

# No postponed annotations: Python 3.11 reads ``NotRequired`` only from evaluated ones, so these
# keep their required and optional keys right at run time (``__required_keys__``).
from typing import Literal, NotRequired, TypedDict

__all__ = [
    "AssistantMessage",
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChatFinishReason",
    "ChatToolCall",
    "ChatUsage",
    "Choice",
    "ChunkChoice",
    "Delta",
    "FunctionCall",
    "FunctionCallDelta",
    "PromptTokensDetails",
    "ToolCallDelta",
]

#: Why a choice ended: the core's reasons, and ``function_call`` for a legacy ``functions`` call.
ChatFinishReason = Literal["stop", "length", "tool_calls", "function_call"]


class PromptTokensDetails(TypedDict):
    """The prompt's tokens the backend's prompt cache held."""

    cached_tokens: int


class ChatUsage(TypedDict):
    """The usage object: the decision's tokens and the answer's, together."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails


class FunctionCall(TypedDict):
    """A call's tool and its arguments' JSON text: a tool call's ``function``, or the legacy
    ``message.function_call``."""

    name: str
    arguments: str


class ChatToolCall(TypedDict):
    """One of a message's ``tool_calls``."""

    id: str
    type: Literal["function"]
    function: FunctionCall


class AssistantMessage(TypedDict):
    """A completion's message: its text, or its calls (``tool_calls``, or the legacy
    ``function_call``), after the thought when reasoning was asked (``reasoning_content``)."""

    role: Literal["assistant"]
    content: str | None
    refusal: None
    reasoning_content: NotRequired[str]
    function_call: NotRequired[FunctionCall]
    tool_calls: NotRequired[list[ChatToolCall]]


class Choice(TypedDict):
    """A completion's one choice."""

    index: int
    message: AssistantMessage
    logprobs: None
    finish_reason: ChatFinishReason | None


class ChatCompletion(TypedDict):
    """A ``chat.completion`` object."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[Choice]
    usage: ChatUsage


class FunctionCallDelta(TypedDict, total=False):
    """A call's part in a delta: its name with its head, then its arguments' text in parts."""

    name: str
    arguments: str


class ToolCallDelta(TypedDict):
    """A tool call's part in a delta, by its index: its id and type with its head."""

    index: int
    id: NotRequired[str]
    type: NotRequired[Literal["function"]]
    function: FunctionCallDelta


class Delta(TypedDict, total=False):
    """A chunk's delta: the role on the first piece of an answer, a call's head and a thought's
    parts; then the answer's text, a thought's, or a call's; empty on the finish reason's chunk."""

    role: Literal["assistant"]
    content: str | None
    reasoning_content: str
    function_call: FunctionCallDelta
    tool_calls: list[ToolCallDelta]


class ChunkChoice(TypedDict):
    """A chunk's one choice."""

    index: int
    delta: Delta
    logprobs: None
    finish_reason: ChatFinishReason | None


class ChatCompletionChunk(TypedDict):
    """A ``chat.completion.chunk`` object: one choice, or none and the usage (the last chunk)."""

    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: NotRequired[ChatUsage]
