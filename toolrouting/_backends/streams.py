"""A streamed answer read as it arrives: its text pieces in order, then the whole reply.

The OpenAI-compatible servers (OpenAI, vLLM, llama.cpp's ``llama-server``, llama-cpp-python,
KoboldCpp) stream a chat completion as server-sent events, one ``chat.completion.chunk`` per
``data:`` line and ``data: [DONE]`` at the end (OpenAI API reference, "The chat completion
chunk object"); Ollama streams one JSON object per line and marks the last ``"done": true``
(ollama docs/api.md, "Generate a chat completion", streaming). llama-cpp-python's in-process
``create_chat_completion(stream=True)`` yields the same chunk objects as the servers do.

Nothing here does I/O: a backend feeds the bytes (or the in-process chunks) in and yields what
comes out, so the sync and the async backends read a stream the same way. Usage is the
server's where it reports it (the last chunk, with ``stream_options.include_usage`` or
Ollama's counts); where it does not, the completion tokens are *counted*: one per chunk that
carried text, as llama.cpp-based servers send one chunk per sampled token. That count can
only fall short (a character split across tokens arrives as one chunk; the tokens of a stop
string are never sent), and the prompt tokens stay 0, unknown.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import httpx

from .._errors import BackendConnectError, BackendResponseError
from .._json import json_type, quoted
from .._limits import MAX_BODY_QUOTE
from .._settings import Settings
from .base import Completion, TextDelta, Usage, chat_usage, is_truncated, reported_count
from .dialects import DIALECTS, WireReply
from .endpoint import Endpoint

__all__ = ["STREAM_FIELDS", "ChunkReader", "StreamReader", "stream_end"]

#: The dialects whose servers stream JSON lines; the others stream server-sent events.
_JSON_LINES = frozenset({"ollama"})

#: What a request must add to ask each dialect's server to stream. OpenAI's ``stream_options``
#: ``include_usage`` adds a last chunk with the usage (OpenAI, vLLM and SGLang honour it;
#: llama-server puts the usage on its finish chunk); servers that do not know the field
#: (llama-cpp-python, KoboldCpp) ignore it. Ollama streams unless told ``stream: false``.
STREAM_FIELDS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {
        name: MappingProxyType(
            {"stream": True}
            if name in _JSON_LINES
            else {"stream": True, "stream_options": {"include_usage": True}}
        )
        for name in DIALECTS
    }
)

#: The media type of an answer that is not a stream after all: one JSON body.
_WHOLE = "application/json"
_DONE = "[DONE]"


class ChunkReader:
    """Chat-completion chunks (or Ollama's lines) as they come: their text, then the whole reply."""

    def __init__(self, source: str, *, hint: str = "") -> None:
        self._source = source
        """Who sent the chunks, for the errors: a URL, or the in-process model."""
        self._hint = hint
        """What to check when a chunk is not one, for the errors."""
        self.pieces: list[str] = []
        self._refusal: list[str] = []
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._done = False
        self.last: Any = None
        """The last chunk read: the server's own words on the end of the reply."""

    @property
    def done(self) -> bool:
        """Whether the sender said the reply is finished: a finish reason, ``[DONE]`` or Ollama's done."""
        return self._done or self._finish_reason is not None

    def end(self) -> None:
        """The sender's ``[DONE]``: nothing follows."""
        self._done = True

    def chat_chunk(self, chunk: Any) -> str:
        """Read one ``chat.completion.chunk``; its text (often ``""``)."""
        self._check(chunk, "a chat.completion.chunk")
        self.last = chunk
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = chat_usage(usage)
        choices = chunk.get("choices", [] if isinstance(usage, dict) else None)
        if not isinstance(choices, list):
            raise self._shape_error(
                f'a streamed chunk has no "choices" list (it is a JSON {json_type(choices)})'
            )
        if not choices:
            return ""  # the usage chunk that include_usage adds
        choice = choices[0]
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(delta, dict):
            raise self._shape_error('a streamed chunk\'s first choice has no "delta" object')
        finish_reason = choice.get("finish_reason")
        if isinstance(finish_reason, str):
            self._finish_reason = finish_reason
        refusal = delta.get("refusal")
        if isinstance(refusal, str):
            self._refusal.append(refusal)
        return self._text(delta.get("content"))

    def ollama_line(self, line: Any) -> str:
        """Read one line of Ollama's stream; its text."""
        self._check(line, "an Ollama chat response")
        self.last = line
        message = line.get("message")
        text = self._text(message.get("content")) if isinstance(message, dict) else ""
        if line.get("done") is True:
            self._done = True
            done_reason = line.get("done_reason")
            self._finish_reason = done_reason if isinstance(done_reason, str) else "stop"
            self._usage = Usage(
                prompt_tokens=reported_count(line.get("prompt_eval_count")),
                completion_tokens=reported_count(line.get("eval_count")),
            )
        return text

    def reply(self) -> WireReply:
        """The whole reply, once the stream has ended; a stream cut short is a BackendConnectError."""
        text = "".join(self.pieces)
        if not self.done:
            raise BackendConnectError(
                f"{self._source} ended its stream before the reply was finished (no finish reason and no "
                f"[DONE], {len(text)} characters of text so far); the server may have crashed or restarted"
            )
        refusal = "".join(self._refusal)
        if not text and refusal:
            raise BackendResponseError(
                f"{self._source} streamed a reply but the model refused instead of answering: "
                f"{quoted(refusal, MAX_BODY_QUOTE)}"
            )
        counted = Usage(completion_tokens=sum(1 for piece in self.pieces if piece))
        return WireReply(
            text=text, finish_reason=self._finish_reason, usage=self._usage if self._usage else counted
        )

    def completion(self, cap: int | None) -> Completion:
        """:meth:`reply` as the :class:`Completion` of a request capped at ``cap``."""
        reply = self.reply()
        return Completion(
            text=reply.text,
            finish_reason=reply.finish_reason,
            usage=reply.usage,
            truncated=is_truncated(reply.finish_reason, reply.usage.completion_tokens, cap),
            raw=self.last,
        )

    def _text(self, content: object) -> str:
        if content is None:
            return ""
        if not isinstance(content, str):
            raise self._shape_error(f"a streamed chunk's content is a JSON {json_type(content)}, not text")
        self.pieces.append(content)
        return content

    def _check(self, chunk: Any, expected: str) -> None:
        if not isinstance(chunk, dict):
            raise self._shape_error(f"a streamed chunk is a JSON {json_type(chunk)}, not {expected} object")
        if "error" in chunk:
            error = quoted(json.dumps(chunk["error"], ensure_ascii=False), MAX_BODY_QUOTE)
            raise BackendResponseError(
                f"{self._source} reported an error in the middle of its stream: {error}; the reply so far "
                "is lost, and the same request may succeed later"
            )

    def _shape_error(self, problem: str) -> BackendResponseError:
        hint = f"; {self._hint}" if self._hint else ""
        return BackendResponseError(
            f"{self._source} streamed something other than a chat completion: {problem}{hint}"
        )


class StreamReader:
    """The bytes of a streamed HTTP answer, fed as they arrive: server-sent events, or Ollama's JSON lines.

    A server that ignores ``stream`` and answers ``application/json`` is read whole when the body
    ends (``whole`` is then True and the caller reads it as a plain answer).
    """

    def __init__(self, url: str, content_type: str, dialect: str) -> None:
        self.chunks = ChunkReader(
            url, hint=f"check that the dialect matches the server (known: {', '.join(DIALECTS)})"
        )
        self._url = url
        self.whole = content_type.split(";", 1)[0].strip().lower() == _WHOLE
        """Whether the answer is one JSON body rather than a stream."""
        self._lines = dialect in _JSON_LINES
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial: list[str] = []
        """The start of a line whose end has not arrived yet."""
        self._data: list[str] = []
        self._event = ""
        self.body = bytearray()
        """The body of an answer that is not a stream, kept to be read whole."""

    def feed(self, data: bytes) -> list[str]:
        """The text pieces ``data`` completes, in order."""
        if self.whole:
            self.body += data
            return []
        first, *rest = self._decoder.decode(data).split("\n")
        self._partial.append(first)
        if not rest:
            return []  # no line ended: only the new part was scanned, so a long line costs no more
        lines = ["".join(self._partial), *rest[:-1]]
        self._partial = [rest[-1]]
        return [piece for line in lines if (piece := self._line(line.removesuffix("\r")))]

    def finish(self) -> list[str]:
        """The pieces the end of the body completes; call :meth:`ChunkReader.reply` after it."""
        if self.whole:
            return []
        last = "".join(self._partial) + self._decoder.decode(b"", final=True)
        tail = [self._line(last.removesuffix("\r"))] if last else []
        if not self._lines:
            tail.append(self._line(""))  # an event the server did not close with a blank line
        self._partial = []
        return [piece for piece in tail if piece]

    def _line(self, line: str) -> str:
        if self._lines:
            return self.chunks.ollama_line(self._json(line)) if line.strip() else ""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return ""  # a comment: servers ping with them
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        return ""

    def _dispatch(self) -> str:
        """One whole event: its data lines, joined."""
        if not self._data:
            return ""
        data, event = "\n".join(self._data), self._event
        self._data, self._event = [], ""
        if data.strip() == _DONE:
            self.chunks.end()
            return ""
        chunk = self._json(data)
        if event == "error" and not (isinstance(chunk, dict) and "error" in chunk):
            chunk = {"error": chunk}
        return self.chunks.chat_chunk(chunk)

    def _json(self, text: str) -> Any:
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            raise BackendResponseError(
                f"{self._url} streamed an event that is not JSON: {quoted(text, MAX_BODY_QUOTE)}; check that "
                "base_url points at the model server and that the dialect matches it"
            ) from None


def stream_end(
    endpoint: Endpoint, response: httpx.Response, reader: StreamReader, settings: Settings
) -> list[TextDelta | Completion]:
    """What a stream yields once the body has ended: the last pieces, then the whole completion.

    An answer that was not a stream is read as a plain one and handed over as one piece.
    """
    if reader.whole:
        completion = endpoint.completion(endpoint.answered(response, bytes(reader.body)), settings)
        return [TextDelta(completion.text), completion] if completion.text else [completion]
    pieces: list[TextDelta | Completion] = [TextDelta(piece) for piece in reader.finish()]
    pieces.append(endpoint.finished(reader.chunks.reply(), reader.chunks.last, settings))
    return pieces
