"""The words a tool is ranked by, and the words of a query: one tokeniser for both.

A tool's name is read as words: ``git_diff_unstaged``, ``fs.readFile`` and ``get-HTTPStatus``
are ``git diff unstaged``, ``fs read file`` and ``get http status``. The same split applies to
descriptions and queries, so an identifier a user or a tool result writes (``repo_path``,
``readFile``) meets the tool's words. Stemming is left to the index (FTS5's ``porter``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from typing import Any

from .._catalogue_checks import CheckedTool

__all__ = ["QUERY_STOPWORDS", "ToolText", "query_terms", "terms", "tool_text"]

_LUCENE_STOP_WORDS = (
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with"
)
#: Words a query is not ranked by: Lucene's English stop words, the list its standard analyzer
#: drops. A conversation is prose, and "the", "for" or "with" in a tool's description would
#: otherwise rank it up; on the decision cases hidden among 100 distractors, dropping them
#: raised recall@8 from 0.673 to 0.720 (docs/benchmarks/catalogues.md, "Large catalogues: the shortlist").
QUERY_STOPWORDS = frozenset(_LUCENE_STOP_WORDS.split())

# Letters and digits: "_", ".", "-" and every other mark split words.
_WORD = re.compile(r"[^\W_]+")
# A case change inside a word: "readFile" -> "read File", "HTTPStatus" -> "HTTP Status".
_CASE_CHANGE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Schema keys whose values are instances (what a value may be), never schemas to walk.
_INSTANCE_KEYS = frozenset({"default", "examples", "const", "enum"})
# Schema keys whose values map a name to a schema: the schemas are walked, not the map.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def terms(text: str) -> list[str]:
    """The lower-case words of ``text``, split at anything but a letter or digit and at case changes."""
    return _WORD.findall(_CASE_CHANGE.sub(" ", text).lower())


def _words(text: str) -> str:
    return " ".join(terms(text))


def query_terms(text: str) -> list[str]:
    """The distinct words of a query a ranker looks for, in order, stop words left out."""
    return [word for word in dict.fromkeys(terms(text)) if word not in QUERY_STOPWORDS]


@dataclasses.dataclass(frozen=True, slots=True)
class ToolText:
    """What one tool is ranked by, as three fields of space-separated words."""

    name: str
    description: str
    parameters: str


def tool_text(tool: CheckedTool) -> ToolText:
    """A checked tool's name, its description, and its parameters' names, descriptions and
    string ``enum``/``const`` values, each as words."""
    return ToolText(
        _words(tool.name),
        _words(tool.description or ""),
        _words(" ".join(_parameter_texts(tool.parameters))),
    )


def _parameter_texts(parameters: Mapping[str, Any]) -> Iterator[str]:
    """Every property name, description and string value a schema may take, in document order.

    A checked catalogue's parameters are detached plain dicts and lists within the nesting and
    size limits, so the walk is bounded; an explicit stack keeps it off Python's call stack.
    """
    stack: list[Any] = [parameters]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
            continue
        if not isinstance(node, dict):
            continue
        description = node.get("description")
        if isinstance(description, str):
            yield description
        properties = node.get("properties")
        if isinstance(properties, dict):
            yield " ".join(properties)
        for key in ("enum", "const"):
            values = node.get(key)
            for value in values if isinstance(values, list) else [values]:
                if isinstance(value, str):
                    yield value
        children: list[Any] = []
        for key, value in node.items():
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                children.extend(value.values())
            elif key not in _INSTANCE_KEYS:
                children.append(value)
        stack.extend(reversed(children))
