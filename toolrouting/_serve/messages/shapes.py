"""Anthropic's Messages API shapes as this front writes them, typed so the type checker holds the
writer (``writer``) to them: a message (:class:`Message`) with its content blocks (``text``,
``tool_use``, ``thinking``) and its usage; a stream's events (:class:`StreamEvent`) with their
deltas; an error (:class:`MessagesError`); and the answer to ``count_tokens``
(:class:`TokenCount`). They are plain dictionaries at run time, written as built, so typing them
changes no byte on the wire.

One field stays free-form JSON: a ``tool_use`` block's ``input``, the call's arguments object,
whatever the tool's schema lets it hold (``dict[str, Any]``). What the reader reads stays the
client's JSON, checked field by field (``fields``): the tools' ``input_schema``, a client's
metadata and the fields it sends that no check names.
"""

# No postponed annotations: Python 3.11 reads ``NotRequired`` only from evaluated ones, so these
# keep their required and optional keys right at run time (``__required_keys__``).
from typing import Any, Literal, TypedDict

__all__ = [
    "BlockDelta",
    "ContentBlock",
    "ContentBlockDelta",
    "ContentBlockStart",
    "ContentBlockStop",
    "InputJsonDelta",
    "Message",
    "MessageDelta",
    "MessageDeltaEvent",
    "MessageStart",
    "MessageStop",
    "MessagesError",
    "MessagesErrorObject",
    "MessagesUsage",
    "Ping",
    "SignatureDelta",
    "StopReason",
    "StreamEvent",
    "TextBlock",
    "TextDelta",
    "ThinkingBlock",
    "ThinkingDelta",
    "TokenCount",
    "ToolUseBlock",
]

#: Why a message ended, in Anthropic's words for the core's reasons.
StopReason = Literal["end_turn", "max_tokens", "tool_use"]


class MessagesUsage(TypedDict):
    """The prompt's tokens the cache did not hold, those it held, and the reply's."""

    input_tokens: int
    cache_read_input_tokens: int
    output_tokens: int


class TextBlock(TypedDict):
    """The answer's text."""

    type: Literal["text"]
    text: str


class ToolUseBlock(TypedDict):
    """One call: its id, the tool, and its arguments as an object (``{}`` when a stream starts it)."""

    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class ThinkingBlock(TypedDict):
    """The decision's thought (empty when not shown) and its signature."""

    type: Literal["thinking"]
    thinking: str
    signature: str


ContentBlock = TextBlock | ToolUseBlock | ThinkingBlock


class Message(TypedDict):
    """A ``message`` object."""

    id: str
    type: Literal["message"]
    role: Literal["assistant"]
    model: str
    content: list[ContentBlock]
    stop_reason: StopReason | None
    stop_sequence: None
    usage: MessagesUsage


class TextDelta(TypedDict):
    """A part of the answer's text."""

    type: Literal["text_delta"]
    text: str


class InputJsonDelta(TypedDict):
    """A part of a call's arguments' JSON text."""

    type: Literal["input_json_delta"]
    partial_json: str


class ThinkingDelta(TypedDict):
    """A part of the thought."""

    type: Literal["thinking_delta"]
    thinking: str


class SignatureDelta(TypedDict):
    """The thought's signature, once it is whole."""

    type: Literal["signature_delta"]
    signature: str


BlockDelta = TextDelta | InputJsonDelta | ThinkingDelta | SignatureDelta


class MessageStart(TypedDict):
    """The stream's first event: the message, empty."""

    type: Literal["message_start"]
    message: Message


class Ping(TypedDict):
    """The event after ``message_start``."""

    type: Literal["ping"]


class ContentBlockStart(TypedDict):
    """A block begins, at its index."""

    type: Literal["content_block_start"]
    index: int
    content_block: ContentBlock


class ContentBlockDelta(TypedDict):
    """A part of the block at ``index``."""

    type: Literal["content_block_delta"]
    index: int
    delta: BlockDelta


class ContentBlockStop(TypedDict):
    """The block at ``index`` is whole."""

    type: Literal["content_block_stop"]
    index: int


class MessageDelta(TypedDict):
    """Why the message ended."""

    stop_reason: StopReason | None
    stop_sequence: None


class MessageDeltaEvent(TypedDict):
    """The stop reason and the usage, after the last block."""

    type: Literal["message_delta"]
    delta: MessageDelta
    usage: MessagesUsage


class MessageStop(TypedDict):
    """The stream's last event."""

    type: Literal["message_stop"]


class MessagesErrorObject(TypedDict):
    """An error's type (the SDK's ``ErrorType``) and its message."""

    type: str
    message: str


class MessagesError(TypedDict):
    """An error, answered as a body or as a stream's ``error`` event."""

    type: Literal["error"]
    error: MessagesErrorObject


StreamEvent = (
    MessageStart
    | Ping
    | ContentBlockStart
    | ContentBlockDelta
    | ContentBlockStop
    | MessageDeltaEvent
    | MessageStop
    | MessagesError
)


class TokenCount(TypedDict):
    """The answer to ``count_tokens``: the prompt's tokens."""

    input_tokens: int
