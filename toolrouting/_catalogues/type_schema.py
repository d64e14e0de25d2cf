"""Type hints as JSON schema, and JSON values back as the Python values the hints ask for.

The two halves of one mapping: :func:`schema_of` says what a model may write for a hint,
:func:`converted` turns what it wrote into the value the function expects. A hint one half
knows, the other must know too, so they sit side by side and share their tables.
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, cast

from .._json import shown
from .._limits import MAX_REPLY_QUOTE, SHOWN_NAME_CHARS

__all__ = ["Mismatch", "converted", "schema_of"]


class Mismatch(Exception):
    """Arguments that do not fit a signature; the message says where."""


_PRIMITIVES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    None: {"type": "null"},
}
_SEQUENCES = (list, tuple, set, frozenset, Sequence, typing.Sequence)
_MAPPINGS = (dict, Mapping, typing.Mapping)


def _json_type(value: object) -> str | None:
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if isinstance(value, kind):
            return name
    return "null" if value is None else None


def schema_of(annotation: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of a type hint; nested pydantic models add to ``definitions``.

    Raises :class:`TypeError` for a hint with no JSON schema, saying which hints have one.
    """
    if annotation is Any or annotation is inspect.Parameter.empty:
        return {}
    if annotation in _PRIMITIVES:
        return dict(_PRIMITIVES[annotation])
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        schema = schema_of(args[0], definitions)
        notes = [note for note in annotation.__metadata__ if isinstance(note, str)]
        return {"description": notes[0], **schema} if notes else schema
    if origin is typing.Literal:
        kinds = {_json_type(value) for value in args}
        if None in kinds:
            raise TypeError(f"a Literal of {shown(args, SHOWN_NAME_CHARS)} has values JSON cannot carry")
        return {"type": kinds.pop(), "enum": list(args)} if len(kinds) == 1 else {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [schema_of(arg, definitions) for arg in args]}
    if annotation in _SEQUENCES or origin in _SEQUENCES:
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            raise TypeError("a fixed-length tuple has no JSON schema every compiler takes; use tuple[X, ...]")
        schema = {"type": "array"}
        if args:
            schema["items"] = schema_of(args[0], definitions)
        return schema
    if annotation in _MAPPINGS or origin in _MAPPINGS:
        if args and args[0] is not str:
            raise TypeError("a dict parameter has str keys (JSON object keys are strings)")
        schema = {"type": "object"}
        if args:
            schema["additionalProperties"] = schema_of(args[1], definitions)
        return schema
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        values = [member.value for member in annotation]
        kinds = {_json_type(value) for value in values}
        if None in kinds or not values:
            raise TypeError(f"the values of {annotation.__name__} are not JSON scalars")
        return {"type": kinds.pop(), "enum": values} if len(kinds) == 1 else {"enum": values}
    model = _pydantic_model(annotation)
    if model is not None:
        schema = model.model_json_schema(ref_template="#/$defs/{model}")
        definitions.update(schema.pop("$defs", {}))
        return cast(dict[str, Any], schema)
    hint = (
        f"{annotation.__module__}.{annotation.__qualname__}"
        if isinstance(annotation, type)
        else repr(annotation)
    )
    raise TypeError(
        f"{hint[:SHOWN_NAME_CHARS]} has no JSON schema here; use str, int, float, bool, list, dict, ..."
    )


def _pydantic_model(annotation: Any) -> Any:
    """``annotation`` when it is a pydantic model class, else None (pydantic stays optional)."""
    if not isinstance(annotation, type) or not hasattr(annotation, "model_json_schema"):
        return None
    try:
        import pydantic
    except ImportError:
        return None
    return annotation if issubclass(annotation, pydantic.BaseModel) else None


def converted(value: Any, annotation: Any, path: str) -> Any:
    """``value`` as the Python value ``annotation`` asks for; :class:`Mismatch` if it does not fit."""
    if annotation is Any or annotation is inspect.Parameter.empty:
        return value
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return converted(value, args[0], path)
    if annotation in _PRIMITIVES:
        return _primitive(value, annotation, path)
    if origin is typing.Literal:
        if any(value == option and type(value) is type(option) for option in args):
            return value
        raise Mismatch(f"{path} is {_kind_of(value)}, not one of {shown(list(args), SHOWN_NAME_CHARS)}")
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            try:
                return converted(value, arg, path)
            except Mismatch:
                continue
        raise Mismatch(
            f"{path} is {_kind_of(value)}, which fits none of {shown(annotation, SHOWN_NAME_CHARS)}"
        )
    if annotation in _SEQUENCES or origin in _SEQUENCES:
        if not isinstance(value, list):
            raise Mismatch(f"{path} should be an array, not {_kind_of(value)}")
        items = [converted(item, args[0] if args else Any, f"{path}[{i}]") for i, item in enumerate(value)]
        container = origin or annotation
        if container not in (tuple, set, frozenset):
            return items
        try:
            return container(items)
        except TypeError as error:  # a set of arrays or objects: they are not hashable
            raise Mismatch(f"{path} cannot be a {container.__name__}: {error}") from None
    if annotation in _MAPPINGS or origin in _MAPPINGS:
        if not isinstance(value, dict):
            raise Mismatch(f"{path} should be an object, not {_kind_of(value)}")
        item_type = args[1] if args else Any
        return {
            key: converted(item, item_type, f"{path}.{key[:MAX_REPLY_QUOTE]}") for key, item in value.items()
        }
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        try:
            return annotation(value)
        except ValueError:
            options = [member.value for member in annotation]
            raise Mismatch(
                f"{path} is {_kind_of(value)}, not one of {shown(options, SHOWN_NAME_CHARS)}"
            ) from None
    model = _pydantic_model(annotation)
    if model is not None:
        import pydantic

        try:
            return model.model_validate(value)
        except pydantic.ValidationError as error:
            first = error.errors()[0]
            where = ".".join(map(str, (path, *first["loc"])))
            raise Mismatch(f"{where}: {first['msg']}") from None
    return value


def _primitive(value: Any, annotation: Any, path: str) -> Any:
    expected = _PRIMITIVES[annotation]["type"]
    actual = _json_type(value)
    if actual == expected or (expected == "number" and actual == "integer"):
        if expected != "number":
            return value
        try:
            return float(value)
        except OverflowError:  # an integer too large for a float
            raise Mismatch(f"{path} is too large for a float") from None
    raise Mismatch(f"{path} should be {_article(expected)}, not {_kind_of(value)}")


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _kind_of(value: Any) -> str:
    """The JSON kind of ``value`` with its article (``a string``, ``an array``): never the value itself."""
    kind = _json_type(value) or ("an array" if isinstance(value, list) else "an object")
    return kind if kind.startswith("an ") else _article(kind)
