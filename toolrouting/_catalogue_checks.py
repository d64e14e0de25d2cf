"""The catalogue checks: every declaration a route is built from is checked and copied here first."""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import unicodedata
from collections.abc import Mapping, Sequence
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, NotRequired, TypedDict

from . import _json
from ._errors import CatalogueError
from ._json import pointer_token
from ._limits import (
    MAX_CAUSE_QUOTE,
    MAX_SCHEMA_NESTING,
    MAX_SCHEMA_VALUES,
    SHOWN_NAME_CHARS,
    SHOWN_VALUE_CHARS,
    VALID_SCHEMA_MEMORY,
)
from ._metaschema import schema_problem
from ._names import NONE_TOOL, tool_name_problem

__all__ = ["CheckedTool", "FunctionSpec", "ToolSpec", "checked_catalogue", "shown", "shown_name"]


class FunctionSpec(TypedDict):
    """The ``function`` part of a tools-for-llm declaration."""

    name: str
    description: NotRequired[str]
    parameters: NotRequired[Mapping[str, Any]]


class ToolSpec(TypedDict):
    """A tool in the tools-for-llm (OpenAI chat completions) shape."""

    type: str
    function: FunctionSpec


def _unencodable(value: object) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


# json.dumps rebuilds its C encoder on every call; for a catalogue of a thousand tools that
# set-up is most of the work, so the encoder is made once (where CPython has one).
_C_ENCODER = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, _unencodable, encode_basestring, None, ":", ",", False, False, False)
)


def _encode(value: Any) -> str:
    if _C_ENCODER is None:
        return json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    return "".join(_C_ENCODER(value, 0))


def _decode(text: str) -> Any:
    return _DECODER.raw_decode(text)[0]


_DECODER = json.JSONDecoder()

# The compact JSON text of parameters that passed the metaschema check: the loop re-reads
# the same catalogue every round, and the check is the one step that is not done in C.
_VALID_PARAMETERS: set[str] = set()

_NO_PARAMETERS_JSON = json.dumps({"type": "object", "properties": {}, "additionalProperties": False})


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CheckedTool:
    """One catalogue entry that passed the checks: its position, name, description and parameters."""

    position: int
    """The entry's 0-based index in the catalogue."""
    name: str
    description: str | None
    """The description, as given; ``None`` when the entry has none."""
    parameters: dict[str, Any]
    """A detached copy of the parameter schema (plain dicts and lists)."""


def checked_catalogue(tools: Sequence[Mapping[str, Any]]) -> list[CheckedTool]:
    """Every entry of ``tools`` checked and copied; raises :class:`CatalogueError` at the first bad one."""
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
        raise CatalogueError(
            None, f"a tool catalogue is a sequence of tool declarations (a list), not {type(tools).__name__}"
        )
    seen: dict[str, int] = {}
    folded: dict[str, int] = {}
    entries = []
    screened = _screened(tools)
    for index, tool in enumerate(tools):
        name, description, parameters = _entry(index, tool, screened)
        if name in seen:
            raise CatalogueError(
                index, f"the name {shown_name(name)} is used twice (first by entry {seen[name]})"
            )
        # A model reads names, and some tokenizers normalise text (NFKC): two names that
        # differ only there cannot be told apart reliably, so they are one name.
        key = _folded(name)
        first = folded.get(key)
        if first is not None:
            raise CatalogueError(
                index,
                f"the name {shown_name(name)} is entry {first}'s name up to case and Unicode normalisation",
            )
        seen[name] = folded[key] = index
        entries.append(CheckedTool(position=index, name=name, description=description, parameters=parameters))
    return entries


def _screened(tools: Sequence[Any]) -> set[int]:
    """The ids of the plain parameter dicts in ``tools`` that are, all together, within the size limits.

    One walk over every tool's parameters at once costs a fraction of one walk per tool; only
    when the whole catalogue is past a limit is each tool walked on its own, to name it.
    """
    roots = []
    for tool in tools:
        function = tool.get("function") if type(tool) is dict else None
        parameters = function.get("parameters") if type(function) is dict else None
        if type(parameters) is dict:
            roots.append(parameters)
    return {id(root) for root in roots} if _size_problem(roots, "") is None else set()


def _entry(index: int, tool: object, screened: set[int]) -> tuple[str, str | None, dict[str, Any]]:
    # type() first: Mapping's ABC check is slow, and a catalogue is nearly always plain dicts.
    if type(tool) is not dict and not isinstance(tool, Mapping):
        raise CatalogueError(index, f"a tool declaration is a mapping, not {type(tool).__name__}")
    if tool.get("type") != "function":
        raise CatalogueError(
            index, f'the declaration is not "type": "function" (type is {shown(tool.get("type"))})'
        )
    function = tool.get("function")
    if type(function) is not dict and not isinstance(function, Mapping):
        raise CatalogueError(index, 'the declaration has no "function" mapping')
    if "name" not in function:
        raise CatalogueError(index, "the function has no name")
    name = function["name"]
    problem = tool_name_problem(name)
    if problem is not None:
        raise CatalogueError(index, problem)
    if _folded(name) == NONE_TOOL:
        raise CatalogueError(
            index, f"a tool named {shown_name(name)} would be indistinguishable from the handoff"
        )
    description = function.get("description")
    if description is not None and not (isinstance(description, str) and _encodable(description)):
        raise CatalogueError(index, f"the description of {shown_name(name)} is not a string of Unicode text")
    parameters = function.get("parameters")
    if parameters is None:
        return name, description, json.loads(_NO_PARAMETERS_JSON)
    if (type(parameters) is not dict and not isinstance(parameters, Mapping)) or parameters.get(
        "type"
    ) != "object":
        raise CatalogueError(
            index, f'the parameters of {shown_name(name)} are not an object schema ("type": "object")'
        )
    problem = None if id(parameters) in screened else _size_problem(parameters, "/parameters")
    if problem is not None:
        raise CatalogueError(index, f"the parameters of {shown_name(name)} {problem}")
    detached, text = _detach(parameters, index, "/parameters")
    if text not in _VALID_PARAMETERS:
        problem = schema_problem(detached, "/parameters")
        if problem is not None:
            raise CatalogueError(
                index,
                f"the parameters of {shown_name(name)} are not a JSON Schema: {problem[:MAX_CAUSE_QUOTE]}",
            )
        if len(_VALID_PARAMETERS) >= VALID_SCHEMA_MEMORY:
            _VALID_PARAMETERS.clear()
        _VALID_PARAMETERS.add(text)
    return name, description, detached


_PLAIN = frozenset({dict, list})
_SCALARS = frozenset({str, int, float, bool, type(None)})
_JSON_TYPES = _PLAIN | _SCALARS


def _size_problem(value: Any, pointer: str) -> str | None:
    """Why ``value`` is too deep or too large as JSON text to copy, or ``None``.

    Counted before anything copies or encodes it: a structure that shares one sub-dict
    many times is small in memory, and as text (or as a copied tree) it doubles with each
    level. Stops at the first level or value past the limit, so it is quick either way; the
    place is looked for only once the limit is passed.

    Plain dicts and lists are walked a level at a time by ``gc.get_referents`` (in C: a dict
    gives its values, a list its items), which halves the cost on a catalogue of a thousand
    small tools; any other container sends the walk to :func:`_size_walk`.
    """
    if type(value) not in _PLAIN:
        return _size_walk(value, pointer)
    count = 0
    level: list[Any] = [value]
    depth = 0
    while level:
        if depth > MAX_SCHEMA_NESTING:
            return _size_walk(value, pointer)
        found = gc.get_referents(*level)
        count += len(found)
        if count > MAX_SCHEMA_VALUES:
            return _size_walk(value, pointer)
        if not set(map(type, found)) <= _JSON_TYPES:
            return _size_walk(value, pointer)
        level = [item for item in found if type(item) in _PLAIN]
        depth += 1
    return None


def _size_walk(value: Any, pointer: str) -> str | None:
    """:func:`_size_problem` over any mappings, lists and tuples, and with the reason."""
    count = 0
    level: list[Any] = [value]
    depth = 0
    while level:
        if depth > MAX_SCHEMA_NESTING:
            return (
                "nest too deeply or refer to themselves: past "
                f"{MAX_SCHEMA_NESTING} levels of JSON at {_deepest(value, pointer)}"
            )
        below: list[Any] = []
        for node in level:
            items = node.values() if type(node) is dict else node if type(node) is list else _items(node)
            count += len(items)
            # Most values are strings and numbers: one type test each, isinstance only for the rest.
            below += [item for item in items if type(item) not in _SCALARS and _container(item)]
        if count > MAX_SCHEMA_VALUES:
            return (
                f"hold more than {MAX_SCHEMA_VALUES:,} JSON values as text (a sub-schema shared by "
                "reference many times is copied each time)"
            )
        level, depth = below, depth + 1
    return None


def _container(item: Any) -> bool:
    return type(item) in _PLAIN or isinstance(item, (Mapping, list, tuple))


def _items(node: Any) -> Any:
    return list(node.values()) if isinstance(node, Mapping) else list(node)


def _deepest(value: Any, pointer: str) -> str:
    """The JSON pointer, cut to MAX_CAUSE_QUOTE, of a value past MAX_SCHEMA_NESTING levels down."""
    stack: list[tuple[Any, tuple[Any, ...], int]] = [(value, (), 0)]
    while stack:
        node, place, depth = stack.pop()
        if depth > MAX_SCHEMA_NESTING:
            keys = []
            while place:
                place, key = place
                keys.append(pointer_token(str(key))[:SHOWN_VALUE_CHARS])
            where = pointer + "".join(f"/{key}" for key in reversed(keys))
            return where[:MAX_CAUSE_QUOTE] + ("…" if len(where) > MAX_CAUSE_QUOTE else "")
        pairs = node.items() if isinstance(node, Mapping) else enumerate(node)
        stack.extend((item, (place, key), depth + 1) for key, item in pairs if _container(item))
    return pointer


def _detach(value: Any, index: int, pointer: str) -> tuple[Any, str]:
    """A deep copy of a JSON value and its compact JSON text; what JSON cannot carry is a CatalogueError."""
    try:
        # The common case in C: a round trip through JSON text copies and checks at once.
        # It also turns non-string keys and tuples into something else, hence the comparison.
        text = _encode(value)
        text.encode("utf-8")  # a lone surrogate is no JSON text (RFC 8259 section 8.2)
        copy = _decode(text)
        if copy == value:
            return copy, text
    except (TypeError, ValueError, RecursionError):
        pass
    try:
        copy = _detach_checked(value, index, pointer)
    except RecursionError:
        raise CatalogueError(index, f"{pointer} nests too deeply or refers to itself") from None
    return copy, _encode(copy)


def _detach_checked(value: Any, index: int, pointer: str) -> Any:
    if isinstance(value, Mapping):
        copy: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CatalogueError(index, f"{pointer or '/'} has a key that is not a string: {shown(key)}")
            if not _encodable(key):
                raise CatalogueError(index, f"{pointer or '/'} has a key with a lone surrogate")
            copy[key] = _detach_checked(item, index, f"{pointer}/{pointer_token(key)}")
        return copy
    if isinstance(value, (list, tuple)):
        return [_detach_checked(item, index, f"{pointer}/{i}") for i, item in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        raise CatalogueError(index, f"{pointer} is {value}, which JSON cannot carry")
    if isinstance(value, str) and not _encodable(value):
        raise CatalogueError(index, f"{pointer} has a lone surrogate, which JSON text cannot carry")
    if isinstance(value, int) and not _writable(value):
        raise CatalogueError(index, f"{pointer} is an integer too long for Python to write out")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise CatalogueError(index, f"{pointer} is a {type(value).__name__}, which JSON cannot carry")


def _folded(name: str) -> str:
    if name.isascii():
        return name.lower()  # NFKC leaves ASCII as it is, and ASCII casefolds to lower case
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _writable(number: int) -> bool:
    try:
        int.__repr__(number)  # over sys.get_int_max_str_digits() digits, json.dumps raises
    except ValueError:
        return False
    return True


def shown(value: object) -> str:
    """A catalogue value as an error message quotes it: its repr, bounded."""
    return _json.shown(value, SHOWN_VALUE_CHARS)


def shown_name(name: object) -> str:
    """A tool name as an error message quotes it: its repr, bounded longer than other values."""
    return _json.shown(name, SHOWN_NAME_CHARS)
