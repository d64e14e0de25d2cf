"""The field checks every front's reader shares, each refusal in one wording.

The body is a JSON object; a model name a string; a message's role one the front knows; a token
cap a positive integer; a flag a boolean; an object field an object, a list a list; the tools a
list of declarations, an entry of a type no tool here has refused by its type; ``tool_choice``'s
offer made of declared tools, a mode that needs tools refused without them; a field the server
cannot honour refused by its name (``unserved``), log-probabilities among them. A refused value
is named by its JSON kind (:func:`json_kind`: ``an array``, ``null``) or quoted
(:func:`shown_value`); a sampling number, the text of a list of content parts and the answer's
format (``response_format``: ``{"type": "json_schema", "json_schema": {"name", "schema",
"strict"}}`` asks for an answer under ``schema``, ``{"type": "json_object"}`` for any JSON object,
``{"type": "text"}`` or none for free text; the Responses API's ``text.format`` is the same
format, flat) are read here too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._errors import ChatRequestError
from .._json import is_count, shown
from .._limits import SHOWN_VALUE_CHARS
from .core import OutputFormat, ToolChoice

__all__ = [
    "declared_name",
    "declared_tools",
    "default_choice",
    "flag",
    "json_kind",
    "known_role",
    "listed",
    "logprobs_refused",
    "mode_choice",
    "model_name",
    "number_field",
    "object_field",
    "parts_text",
    "read_response_format",
    "request_body",
    "shown_value",
    "token_cap",
    "tools_needed",
    "unserved",
    "unserved_fields",
    "unserved_tool",
]

#: OpenAI's rule for ``json_schema.name``, which the ``openai`` dialect sends on.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_JSON_KINDS = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array"}


def json_kind(value: object) -> str:
    """What a JSON value is, as an error shows it (``an array``, ``null``)."""
    if value is None:
        return "null"
    return "an object" if isinstance(value, Mapping) else _JSON_KINDS.get(type(value), type(value).__name__)


def shown_value(value: object) -> str:
    """A value quoted in an error, at most ``SHOWN_VALUE_CHARS`` of it."""
    return shown(value, SHOWN_VALUE_CHARS)


def request_body(body: object) -> Mapping[str, Any]:
    """The request's decoded body, once it is a JSON object."""
    if not isinstance(body, Mapping):
        raise ChatRequestError(f"the body is a JSON object, not {json_kind(body)}")
    return body


def model_name(body: Mapping[str, Any]) -> str | None:
    """The ``model`` the request names, ``None`` when absent."""
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise ChatRequestError(f"a model name is a string, not {json_kind(model)}", "model")
    return model


def token_cap(body: Mapping[str, Any], name: str) -> int | None:
    """``body[name]`` as the answer's cap of tokens, ``None`` when absent."""
    cap = body.get(name)
    if cap is not None and not is_count(cap, 1):
        raise ChatRequestError(f"a token cap is a positive integer, not {shown_value(cap)}", name)
    return cap


def flag(body: Mapping[str, Any], name: str, default: bool, at: str | None = None) -> bool:
    """``body[name]`` as a boolean, ``default`` when absent; ``at`` is where it is when not ``name``."""
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ChatRequestError(f"{name} is a boolean, not {json_kind(value)}", at or name)
    return value


def object_field(body: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """``body[name]`` as an object, ``None`` when absent."""
    value = body.get(name)
    if value is not None and not isinstance(value, Mapping):
        raise ChatRequestError(f"{name} is an object, not {json_kind(value)}", name)
    return value


def listed(value: object, name: str, of: str | None = None, at: str | None = None) -> list[Any]:
    """``value`` (the field ``name``, at ``at`` when not at the top) as a list (of ``of``)."""
    if not isinstance(value, list):
        kind = "a list" if of is None else f"a list of {of}"
        raise ChatRequestError(f"{name} is {kind}, not {json_kind(value)}", at or name)
    return value


def known_role(item: Mapping[str, Any], at: str, roles: Sequence[str]) -> Any:
    """The ``role`` of the message at ``at``, once it is one of ``roles``."""
    role = item.get("role")
    if role not in roles:
        raise ChatRequestError(
            f"the role {shown_value(role)} is not one of {', '.join(roles)}",
            f"{at}.role",
            code="unknown_role",
        )
    return role


def number_field(body: Mapping[str, Any], name: str, most: float) -> float | None:
    """``body[name]`` as a sampling number between 0 and ``most`` (``temperature``, ``top_p``),
    ``None`` when absent; anything else is refused by its name. Every front reads them so."""
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ChatRequestError(f"{name} is a number, not {shown_value(value)}", name)
    if not 0 <= value <= most:
        raise ChatRequestError(f"{name} is between 0 and {most:g}, not {shown_value(value)}", name)
    return float(value)


def parts_text(value: object, at: str, kinds: tuple[str, ...]) -> str:
    """The text of a list of content parts (``at`` is where it is): parts of the ``kinds`` that
    carry a ``text``, and ``refusal`` parts; any other part is refused by its index."""
    if not isinstance(value, list):
        raise ChatRequestError(f"content is a string or a list of text parts, not {json_kind(value)}", at)
    texts = []
    for index, part in enumerate(value):
        kind = part.get("type") if isinstance(part, Mapping) else None
        key = "refusal" if kind == "refusal" else "text"
        if kind not in (*kinds, "refusal"):
            raise ChatRequestError(
                f"a content part of type {shown_value(kind)} is not supported: only text is served",
                f"{at}[{index}]",
                code="unsupported_content",
            )
        text = part.get(key)
        if not isinstance(text, str):
            raise ChatRequestError(f"a {kind} part carries its {key} as a string", f"{at}[{index}].{key}")
        texts.append(text)
    return "".join(texts)


def declared_tools(
    value: object, of: str, declaration: Callable[[Any, str], dict[str, Any]] | None = None
) -> tuple[dict[str, Any], ...]:
    """A request's ``tools`` (a list of ``of``) as chat completions' declarations, in their order,
    so a catalogue error's ``tools[i]`` is the same tool: ``declaration(tool, at)`` makes each
    one of the front's entries, or refuses it; without it, the entries are declarations already."""
    if value is None:
        return ()
    tools = listed(value, "tools", of)
    if declaration is None:
        return tuple(tools)
    return tuple(declaration(tool, f"tools[{index}]") for index, tool in enumerate(tools))


def unserved_tool(kind: object, at: str, served: str) -> ChatRequestError:
    """A tool of a type the server runs none of; ``served`` says which tools are served."""
    return ChatRequestError(
        f"a tool of type {shown_value(kind)} is not served: only {served}",
        f"{at}.type",
        code="unsupported_tool",
    )


def default_choice(tools: Sequence[object]) -> ToolChoice:
    """The offer of a request that sends no ``tool_choice``: every tool and ``none``, or no decision."""
    return ToolChoice("auto" if tools else "none")


def mode_choice(value: object, tools: Sequence[object]) -> ToolChoice | None:
    """The offer of a ``tool_choice`` that is absent or one of OpenAI's modes (``"auto"``,
    ``"required"``, ``"none"``); ``None`` for any other value, which is the front's to read."""
    if value is None:
        return default_choice(tools)
    if value == "none":
        return ToolChoice("none")
    if value in ("auto", "required"):
        return tools_needed(ToolChoice(value), value, tools)
    return None


def tools_needed(
    mode: ToolChoice, asked: str, tools: Sequence[object], field: str = "tool_choice", declared: str = "tools"
) -> ToolChoice:
    """``mode``, the offer a ``field`` of ``asked`` makes, once there are tools to offer."""
    if not tools:
        raise ChatRequestError(f"{field} {asked!r} needs {declared} to choose from", field)
    return mode


def declared_name(
    name: object,
    tools: Sequence[Mapping[str, Any]],
    at: str,
    forms: str,
    *,
    field: str = "tool_choice",
    declared: str = "tools",
) -> str:
    """The tool a ``tool_choice`` (``field``) names at ``at``, once ``tools`` (``declared``)
    declares it; a name that is no string is refused with the field's ``forms``."""
    if not isinstance(name, str):
        raise ChatRequestError(forms, at)
    functions = [tool.get("function") for tool in tools if isinstance(tool, Mapping)]
    if name not in [function.get("name") for function in functions if isinstance(function, Mapping)]:
        raise ChatRequestError(
            f"{field} names {shown_value(name)}, which {declared} does not declare", at, code="unknown_tool"
        )
    return name


def unserved(reason: str, param: str) -> ChatRequestError:
    """A field that would change the reply in a way the server cannot honour, refused by name."""
    return ChatRequestError(reason, param, code="unsupported_parameter")


def unserved_fields(body: Mapping[str, Any], why: Mapping[str, str]) -> None:
    """Refuses each field of ``why`` that the body sends, saying why it is not served."""
    for name, reason in why.items():
        if body.get(name) is not None:
            raise unserved(f"{name} is not served: {reason}", name)


def logprobs_refused(param: str, leave: str, out_of: str | None = None) -> ChatRequestError:
    """Log-probabilities asked for (at ``param``): no backend gives them, so the request is
    refused rather than answered without them; ``leave`` is what to leave out (``out_of`` a list)."""
    where = "" if out_of is None else f" of {out_of}"
    return unserved(
        f"log-probabilities are not served: no backend here reports them; leave {leave} out{where}", param
    )


def read_response_format(
    value: object, at: str = "response_format", *, flat: bool = False
) -> OutputFormat | None:
    """The format a request's ``response_format`` asks for; ``None`` for free text.

    ``at`` is where the format is in the body; ``flat`` reads the Responses API's ``text.format``,
    whose ``json_schema`` format holds ``name``, ``schema`` and ``strict`` itself rather than in a
    ``json_schema`` object.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ChatRequestError(f"{at} is an object, not {json_kind(value)}", at)
    kind = value.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return OutputFormat(schema={"type": "object"}, name="json_object", strict=False, at=at)
    if kind != "json_schema":
        raise ChatRequestError(
            f"{at}'s type is text, json_object or json_schema, not {shown_value(kind)}",
            f"{at}.type",
            code="unsupported_parameter",
        )
    wrapper, at = (value, at) if flat else (value.get("json_schema"), f"{at}.json_schema")
    if not isinstance(wrapper, Mapping):
        raise ChatRequestError(
            f'json_schema is an object {{"name", "schema", "strict"}}, not {json_kind(wrapper)}', at
        )
    name = wrapper.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ChatRequestError(
            f"a schema's name is 1 to 64 letters, digits, _ or -, not {shown_value(name)}", f"{at}.name"
        )
    schema = wrapper.get("schema")
    if not isinstance(schema, Mapping):
        raise ChatRequestError(f"a schema is a JSON object, not {json_kind(schema)}", f"{at}.schema")
    strict = flag(wrapper, "strict", False, f"{at}.strict")
    return OutputFormat(schema=dict(schema), name=name, strict=strict, at=f"{at}.schema")
