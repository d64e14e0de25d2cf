"""Reasoning as every front asks for it (Anthropic's ``thinking``, OpenAI's ``reasoning``), read
into one :class:`Reasoning`, and the signature a thought goes out with and is checked by when a
client sends it back.

Three fields ask for reasoning before a decision: Anthropic's ``thinking`` (``enabled`` with
``budget_tokens``, ``adaptive`` with ``output_config.effort``, ``disabled``), the Responses API's
``reasoning.effort`` and chat completions' ``reasoning_effort``. Each becomes a budget of tokens
(the request's own, or ``SERVE_REASONING_EFFORTS`` of the effort it names), at most
``SERVE_REASONING_CAP``: a budget is a maximum, so a larger one is served as the cap, and the
response's ``x-toolrouting-reasoning-budget`` header says so. The core serves it as the route's
``thought`` slot, or in the model's own tags where it has them (a backend's ``reasoning_budget``).
A request that asks for none gets none: the server adds no budget by itself.

A thought goes back to the client with a signature (Messages' ``signature``, the Responses
``encrypted_content``): the thought's text and an HMAC of it under the server's secret, so a
client that sends the thought back (with its text left out, as Claude Code's ``display:
"omitted"`` asks) gives the server the text it wrote, and a thought the server did not write is
refused. The text is signed, not encrypted: it is the client's to read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Collection, Mapping

from .._errors import ChatRequestError
from .._json import is_count
from .._limits import SERVE_REASONING_CAP, SERVE_REASONING_EFFORTS
from .core import Reasoning
from .fields import json_kind, shown_value

__all__ = ["EFFORTS", "Signer", "budget_reasoning", "effort_reasoning", "messages_reasoning"]

#: The effort levels OpenAI's APIs name, ``none`` among them (no reasoning).
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
#: What a signature starts with, so that a later way of signing can be told apart.
_VERSION = b"\x01"
_DIGEST = hashlib.sha256().digest_size


def effort_reasoning(
    effort: object, at: str, efforts: Collection[str] = EFFORTS, *, shown: bool = True
) -> Reasoning | None:
    """The reasoning an effort level asks for (at ``at`` in the body); ``None`` for ``none`` or
    none named. A value that is no effort of ``efforts`` is refused with the ones there are."""
    if effort is None or effort == "none":
        return None
    if not isinstance(effort, str) or effort not in efforts:
        raise ChatRequestError(
            f"an effort is one of {', '.join(efforts)}, not {shown_value(effort)}", at, code="invalid_value"
        )
    return Reasoning(budget=SERVE_REASONING_EFFORTS[effort], shown=shown)


def budget_reasoning(budget: object, at: str, max_tokens: int | None, *, shown: bool = True) -> Reasoning:
    """The reasoning a budget of tokens asks for (at ``at``): a positive integer, below the answer's
    cap ``max_tokens`` (Anthropic's rule). A budget is the most the thought may take, so one over
    ``SERVE_REASONING_CAP`` is served as that cap (``Reasoning.asked`` keeps what was asked)."""
    if not is_count(budget, 1):
        raise ChatRequestError(f"a thinking budget is a positive integer, not {shown_value(budget)}", at)
    assert isinstance(budget, int)  # is_count checked it
    if max_tokens is not None and budget >= max_tokens:
        raise ChatRequestError(
            f"the budget of {budget} tokens is not below max_tokens ({max_tokens}): send a budget "
            "below max_tokens, as the thinking is part of the reply",
            at,
        )
    if budget > SERVE_REASONING_CAP:  # a budget is a maximum: served within the bound, not refused
        return Reasoning(budget=SERVE_REASONING_CAP, shown=shown, asked=budget)
    return Reasoning(budget=budget, shown=shown)


def messages_reasoning(body: Mapping[str, object], max_tokens: int | None) -> Reasoning | None:
    """The reasoning a Messages request asks for in Anthropic's ``thinking``: ``enabled`` its
    ``budget_tokens``, ``adaptive`` the budget of ``output_config.effort`` (``high`` unnamed,
    Anthropic's default), ``disabled`` (or no ``thinking``) none. ``display: "omitted"`` writes
    the thought's signature alone."""
    thinking = body.get("thinking")
    if thinking is None:
        return None
    if not isinstance(thinking, Mapping):
        raise ChatRequestError(f"thinking is an object, not {json_kind(thinking)}", "thinking")
    kind = thinking.get("type")
    display = thinking.get("display", "summarized")
    if display not in ("summarized", "omitted"):
        raise ChatRequestError(
            f'thinking.display is "summarized" or "omitted", not {shown_value(display)}', "thinking.display"
        )
    shown = display != "omitted"
    if kind == "disabled":
        return None
    if kind == "enabled":
        return budget_reasoning(
            thinking.get("budget_tokens"), "thinking.budget_tokens", max_tokens, shown=shown
        )
    if kind == "adaptive":
        config = body.get("output_config")
        effort = config.get("effort", "high") if isinstance(config, Mapping) else "high"
        efforts = ("low", "medium", "high", "xhigh", "max")
        return effort_reasoning(effort, "output_config.effort", efforts, shown=shown)
    raise ChatRequestError(
        f'thinking\'s type is "enabled", "adaptive" or "disabled", not {shown_value(kind)}', "thinking.type"
    )


class Signer:
    """Signs a thought for the client to send back, and reads one back, under one secret.

    ``secret`` is the server's (``serve_app(reasoning_secret=...)``, ``TOOLROUTING_SERVE_SECRET``);
    without one it is random, so a thought sent back to a server that restarted since, or to
    another process, is refused: give each the same secret to keep them valid."""

    def __init__(self, secret: str | None = None) -> None:
        self._key = secret.encode() if secret else secrets.token_bytes(32)

    def sign(self, text: str) -> str:
        """The signature ``text`` goes out with: the text and its HMAC, in base64 (URL-safe)."""
        data = text.encode()
        mac = hmac.digest(self._key, data, "sha256")
        return base64.urlsafe_b64encode(_VERSION + mac + data).decode("ascii")

    def read(self, signature: object, at: str) -> str:
        """The text ``signature`` signs, once this server's secret signed it; anything else is a 400
        at ``at`` that says what to send instead."""
        if isinstance(signature, str):
            try:
                raw = base64.urlsafe_b64decode(signature.encode("ascii"))
            except (binascii.Error, ValueError):
                raw = b""
            mac, data = raw[1 : 1 + _DIGEST], raw[1 + _DIGEST :]
            if raw[:1] == _VERSION and hmac.compare_digest(mac, hmac.digest(self._key, data, "sha256")):
                try:
                    return data.decode()
                except UnicodeDecodeError:
                    pass
        raise ChatRequestError(
            "this reasoning was not written by this server (or the server restarted without "
            "TOOLROUTING_SERVE_SECRET): send it back as the server wrote it, or leave it out",
            at,
            code="invalid_signature",
        )
