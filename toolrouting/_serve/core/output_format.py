"""An answer's schema (a request's ``response_format``, read by ``fields``), checked before any request.

The answer's settings carry the schema, so every backend
decodes under it as it decodes a route: our grammar in-process and for the servers that take a
GBNF grammar, the server's own structured output elsewhere. The Responses API's ``text.format`` is
the same format, flat: ``{"type": "json_schema", "name", "schema", "strict"}``.

A reply is valid under the schema by construction only where the grammar enforces every keyword,
so the schema is checked first against what the backend's compiler does with it
(:func:`~toolrouting.preflight`): a keyword it refuses, or one it lets values past (``pattern``,
a range, ``oneOf``), is a 400 that names the keyword by its path under
``response_format.json_schema.schema`` (``text.format.schema`` on the Responses front).
``format`` is let through: JSON Schema makes it an annotation, which validators do not assert by
default. A backend whose compiler is unknown (the
``openai`` dialect's server, a backend of the caller's own) gets the schema as it is.
"""

from __future__ import annotations

import re

from ..._backends import AsyncEmbeddedLlama
from ..._errors import ChatRequestError, GrammarError
from ..._preflight import Target, preflight
from .exchange import OutputFormat

__all__ = [
    "checked_format",
    "format_target",
    "refused_in_route",
    "refused_schema",
    "schema_path",
]

#: The dialects that take our GBNF grammar in place of the schema (``Settings.grammar``); the
#: others that convert a schema themselves use llama.cpp's converter (Ollama and KoboldCpp too).
_GRAMMAR_DIALECTS = ("llama.cpp", "llama-cpp-python", "koboldcpp")
_LLAMA_CPP_DIALECTS = (*_GRAMMAR_DIALECTS, "ollama")
#: Keywords a compiler may leave unenforced and the reply still validate: annotations.
_ANNOTATIONS = ("format",)
#: The keywords under which a pointer's next token is a property's name, not an index.
_KEYWORD = re.compile(r"\$?[A-Za-z]+")
_NAMED = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")


def format_target(backend: object) -> Target | None:
    """The compiler that turns an answer's schema into a grammar on ``backend``, ``None`` unknown.

    Our own where the backend decodes under our grammar (the embedded model, the grammar
    dialects with ``grammar="ours"``), llama.cpp's where the server converts the schema itself.
    """
    settings = getattr(backend, "settings", None)
    ours = getattr(settings, "grammar", None) == "ours"
    if isinstance(backend, AsyncEmbeddedLlama):
        return "toolrouting" if ours else None
    dialect = getattr(backend, "dialect", None)
    if ours and dialect in _GRAMMAR_DIALECTS:
        return "toolrouting"
    return "llama.cpp" if dialect in _LLAMA_CPP_DIALECTS else None


def checked_format(output: OutputFormat, backend: object) -> None:
    """Refuse (400) a schema the backend's compiler refuses or does not wholly enforce."""
    target = format_target(backend)
    if target is None:
        return
    try:
        findings = preflight(output.schema, target)
    except (TypeError, ValueError) as error:
        raise ChatRequestError(str(error), output.at) from None
    for finding in findings:
        if finding.severity == "info" or finding.keyword in _ANNOTATIONS:
            continue
        what = "refuses" if finding.severity == "error" else "does not enforce"
        raise ChatRequestError(
            f"the answer cannot be guaranteed under this schema: the grammar compiler ({target}) "
            f"{what} it here ({finding.effect}: {finding.message})",
            schema_path(
                output.at, finding.pointer, finding.keyword or _named(finding.pointer, finding.message)
            ),
            code="unsupported_schema",
        )


def refused_schema(output: OutputFormat, error: GrammarError) -> ChatRequestError:
    """The 400 of a schema the backend's grammar refused when the answer was asked."""
    return ChatRequestError(
        f"the answer's schema cannot become a grammar: {error.reason}",
        schema_path(output.at, error.pointer, _named(error.pointer, error.reason)),
        code="unsupported_schema",
    )


def refused_in_route(output: OutputFormat, tools: int, error: GrammarError) -> Exception:
    """A grammar refused on a route of ``tools`` tools whose ``none`` holds the answer: the
    answer's schema's 400 when the refused part is that schema's, else the error itself."""
    inside = f"/anyOf/{tools}/properties/answer"  # none follows the tools
    if error.pointer == inside or error.pointer.startswith(inside + "/"):
        pointer = error.pointer[len(inside) :]
    elif error.pointer.startswith("/$defs/none."):
        pointer = "/$defs/" + error.pointer[len("/$defs/none.") :]
    else:
        return error
    reason = error.reason.replace(error.pointer, pointer or "/", 1)
    return refused_schema(output, GrammarError(reason, pointer))


def schema_path(at: str, pointer: str, keyword: str) -> str:
    """A JSON pointer into a schema, and a keyword there, as a parameter path under ``at``."""
    path, previous = at, ""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]] if pointer else []
    for token in [*tokens, *([keyword] if keyword else [])]:
        path += f"[{token}]" if token.isdigit() and previous not in _NAMED else f".{token}"
        previous = token
    return path


def _named(pointer: str, reason: str) -> str:
    """The keyword a refusal names after its pointer (``/properties/a prefixItems: ...``), if any."""
    head, _, rest = reason.partition(":")
    where, _, keyword = head.partition(" ")
    return keyword if rest and where == (pointer or "/") and _KEYWORD.fullmatch(keyword) else ""
