"""Tools from plain Python callables: declarations from signatures, and a provider that calls them.

::

    tools = FunctionTools(search_notes, read_note)
    tools.tools_for_llm()                      # the catalogue, in tools-for-llm shape
    tools.call("search_notes", {"query": "latch"})   # ToolOutput(content='[...]')

Type hints become JSON schema (``str``, ``int``, ``float``, ``bool``, ``None``, lists,
tuples, sets, dicts, ``Literal``, ``Enum``, ``Optional`` / ``X | None``, unions,
``Annotated[X, "description"]``, and pydantic models when pydantic is installed); the
description is the docstring's first paragraph, and a Google- or NumPy-style parameter
section describes the parameters.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from .._catalogue import ToolSpec
from .._errors import CatalogueError
from .._provider import ToolOutput, exception_text, shortened
from .._route_schema import route_tool_names

__all__ = ["FunctionTools", "function_tool"]


def function_tool(function: Callable[..., Any], *, name: str | None = None) -> ToolSpec:
    """The tools-for-llm declaration of ``function``; :class:`CatalogueError` (entry 0) if it has none."""
    return _Declared.of(function, 0, name).spec


class FunctionTools:
    """A tool provider over plain callables, in the order given.

    ``call`` never raises for what a model or a tool did: an unknown tool, arguments
    that do not fit the signature, and an exception inside the function all come back as
    a :class:`ToolOutput` with ``is_error`` set. A return value becomes the content: a
    string as it is, anything else as compact JSON.
    """

    def __init__(self, *functions: Callable[..., Any]) -> None:
        declared = [_Declared.of(function, index) for index, function in enumerate(functions)]
        route_tool_names([d.spec for d in declared])  # duplicate names, "none", ...
        self._tools = {d.spec["function"]["name"]: d for d in declared}

    def tools_for_llm(self) -> list[dict[str, Any]]:
        """The catalogue in tools-for-llm shape, a fresh copy each time."""
        return [cast(dict[str, Any], json.loads(json.dumps(d.spec))) for d in self._tools.values()]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """Call the tool ``name`` with ``arguments``; every failure is an error result."""
        declared = self._tools.get(name)
        if declared is None:
            offered = ", ".join(self._tools)[:200]
            return ToolOutput(f"there is no tool named {name!r:.80}; the tools are: {offered}", is_error=True)
        try:
            args, kwargs = declared.bind(arguments)
        except _Mismatch as mismatch:
            return ToolOutput(
                shortened(f"the arguments do not fit {declared.name}: {mismatch}"), is_error=True
            )
        try:
            result = declared.function(*args, **kwargs)
        except Exception as error:  # a tool's failure is the model's to read, not the loop's to die of
            return ToolOutput(exception_text(error), is_error=True)
        return _rendered(name, result)


def _rendered(name: str, result: object) -> ToolOutput:
    if isinstance(result, str):
        return ToolOutput(result)
    try:
        return ToolOutput(
            json.dumps(result, default=_jsonable, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        )
    except (TypeError, ValueError) as error:
        return ToolOutput(shortened(f"{name} returned a value that is not JSON: {error}"), is_error=True)


def _jsonable(value: object) -> object:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    dump = getattr(value, "model_dump", None)  # a pydantic model
    if callable(dump):
        return dump(mode="json")
    isoformat = getattr(value, "isoformat", None)  # date, time, datetime
    if callable(isoformat):
        return isoformat()
    raise TypeError(f"a {type(value).__name__} is not JSON")


class _Mismatch(Exception):
    """Arguments that do not fit a signature; the message says where."""


@dataclasses.dataclass(frozen=True)
class _Parameter:
    name: str
    annotation: Any
    kind: inspect._ParameterKind
    required: bool


@dataclasses.dataclass(frozen=True)
class _Declared:
    function: Callable[..., Any]
    spec: ToolSpec
    parameters: tuple[_Parameter, ...]
    name: str

    @classmethod
    def of(cls, function: Callable[..., Any], index: int, name: str | None = None) -> _Declared:
        if not callable(function):
            raise CatalogueError(index, f"a tool function is callable, not {type(function).__name__}")
        tool_name = name or getattr(function, "__name__", None) or type(function).__name__
        if inspect.iscoroutinefunction(function):
            raise CatalogueError(index, f"{tool_name} is async; give FunctionTools a plain function")
        try:
            signature = inspect.signature(function)
            hints = _parameter_hints(function if inspect.isroutine(function) else type(function).__call__)
        except Exception as error:  # an annotation string may hold any expression, or none at all
            raise CatalogueError(index, f"the signature of {tool_name} cannot be read: {error}") from None
        summary, described = _docstring(inspect.getdoc(function) or "")
        properties: dict[str, Any] = {}
        required: list[str] = []
        definitions: dict[str, Any] = {}
        parameters = []
        for parameter in signature.parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise CatalogueError(
                    index, f"{tool_name} takes *{parameter.name}; a tool takes named parameters only"
                )
            annotation = hints.get(parameter.name, Any)
            try:
                schema = _schema_of(annotation, definitions)
            except TypeError as error:
                raise CatalogueError(index, f"parameter {parameter.name!r} of {tool_name}: {error}") from None
            if parameter.name in described and "description" not in schema:
                schema = {"description": described[parameter.name], **schema}
            if parameter.default is parameter.empty:
                required.append(parameter.name)
            else:
                default = _json_default(parameter.default)
                if default is not _NO_DEFAULT:
                    schema["default"] = default
            properties[parameter.name] = schema
            parameters.append(
                _Parameter(parameter.name, annotation, parameter.kind, parameter.default is parameter.empty)
            )
        schema_: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema_["required"] = required
        schema_["additionalProperties"] = False
        if definitions:
            schema_["$defs"] = definitions
        function_spec: dict[str, Any] = {"name": tool_name}
        if summary:
            function_spec["description"] = summary
        function_spec["parameters"] = schema_
        spec = cast(ToolSpec, {"type": "function", "function": function_spec})
        route_tool_names([spec])  # the name and the schema, checked now with this entry's index
        return cls(function, spec, tuple(parameters), tool_name)

    def bind(self, arguments: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        if not isinstance(arguments, Mapping):
            raise _Mismatch(f"the arguments are a {type(arguments).__name__}, not an object")
        known = {p.name for p in self.parameters}
        unknown = [key for key in arguments if key not in known]
        if unknown:
            raise _Mismatch(f"unknown argument {unknown[0]!r:.80}")
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for parameter in self.parameters:
            if parameter.name not in arguments:
                if parameter.required:
                    raise _Mismatch(f"missing argument {parameter.name!r}")
                continue
            value = _converted(arguments[parameter.name], parameter.annotation, parameter.name)
            if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
                args.append(value)
            else:
                kwargs[parameter.name] = value
        return args, kwargs


_NO_DEFAULT = object()


def _parameter_hints(target: Callable[..., Any]) -> dict[str, Any]:
    """The evaluated hints of ``target``'s parameters; the return hint is never needed, so never read."""
    unwrapped = inspect.unwrap(target)
    annotations = {k: v for k, v in getattr(unwrapped, "__annotations__", {}).items() if k != "return"}
    holder = types.SimpleNamespace(__annotations__=annotations)
    return typing.get_type_hints(
        holder, globalns=getattr(unwrapped, "__globals__", None), include_extras=True
    )


def _json_default(value: object) -> object:
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return _NO_DEFAULT  # a default JSON cannot show is left out, not guessed at


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


def _schema_of(annotation: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of a type hint; nested pydantic models add to ``definitions``."""
    if annotation is Any or annotation is inspect.Parameter.empty:
        return {}
    if annotation in _PRIMITIVES:
        return dict(_PRIMITIVES[annotation])
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        schema = _schema_of(args[0], definitions)
        notes = [note for note in annotation.__metadata__ if isinstance(note, str)]
        return {"description": notes[0], **schema} if notes else schema
    if origin is typing.Literal:
        kinds = {_json_type(value) for value in args}
        if None in kinds:
            raise TypeError(f"a Literal of {args!r:.60} has values JSON cannot carry")
        return {"type": kinds.pop(), "enum": list(args)} if len(kinds) == 1 else {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_schema_of(arg, definitions) for arg in args]}
    if annotation in _SEQUENCES or origin in _SEQUENCES:
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            raise TypeError("a fixed-length tuple has no JSON schema every compiler takes; use tuple[X, ...]")
        schema = {"type": "array"}
        if args:
            schema["items"] = _schema_of(args[0], definitions)
        return schema
    if annotation in _MAPPINGS or origin in _MAPPINGS:
        if args and args[0] is not str:
            raise TypeError("a dict parameter has str keys (JSON object keys are strings)")
        schema = {"type": "object"}
        if args:
            schema["additionalProperties"] = _schema_of(args[1], definitions)
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
    shown = (
        f"{annotation.__module__}.{annotation.__qualname__}"
        if isinstance(annotation, type)
        else repr(annotation)
    )
    raise TypeError(f"{shown[:80]} has no JSON schema here; use str, int, float, bool, list, dict, ...")


def _pydantic_model(annotation: Any) -> Any:
    """``annotation`` when it is a pydantic model class, else None (pydantic stays optional)."""
    if not isinstance(annotation, type) or not hasattr(annotation, "model_json_schema"):
        return None
    try:
        import pydantic
    except ImportError:
        return None
    return annotation if issubclass(annotation, pydantic.BaseModel) else None


def _converted(value: Any, annotation: Any, path: str) -> Any:
    """``value`` as the Python value ``annotation`` asks for; :class:`_Mismatch` if it does not fit."""
    if annotation is Any or annotation is inspect.Parameter.empty:
        return value
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _converted(value, args[0], path)
    if annotation in _PRIMITIVES:
        return _primitive(value, annotation, path)
    if origin is typing.Literal:
        if any(value == option and type(value) is type(option) for option in args):
            return value
        raise _Mismatch(f"{path} is {_shown(value)}, not one of {list(args)!r:.80}")
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            try:
                return _converted(value, arg, path)
            except _Mismatch:
                continue
        raise _Mismatch(f"{path} is {_shown(value)}, which fits none of {annotation!r:.80}")
    if annotation in _SEQUENCES or origin in _SEQUENCES:
        if not isinstance(value, list):
            raise _Mismatch(f"{path} should be an array, not {_shown(value)}")
        items = [_converted(item, args[0] if args else Any, f"{path}[{i}]") for i, item in enumerate(value)]
        container = origin or annotation
        if container not in (tuple, set, frozenset):
            return items
        try:
            return container(items)
        except TypeError as error:  # a set of arrays or objects: they are not hashable
            raise _Mismatch(f"{path} cannot be a {container.__name__}: {error}") from None
    if annotation in _MAPPINGS or origin in _MAPPINGS:
        if not isinstance(value, dict):
            raise _Mismatch(f"{path} should be an object, not {_shown(value)}")
        item_type = args[1] if args else Any
        return {key: _converted(item, item_type, f"{path}.{key:.64}") for key, item in value.items()}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        try:
            return annotation(value)
        except ValueError:
            options = [member.value for member in annotation]
            raise _Mismatch(f"{path} is {_shown(value)}, not one of {options!r:.80}") from None
    model = _pydantic_model(annotation)
    if model is not None:
        import pydantic

        try:
            return model.model_validate(value)
        except pydantic.ValidationError as error:
            first = error.errors()[0]
            where = ".".join(map(str, (path, *first["loc"])))
            raise _Mismatch(f"{where}: {first['msg']}") from None
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
            raise _Mismatch(f"{path} is too large for a float") from None
    raise _Mismatch(f"{path} should be {_article(expected)}, not {_shown(value)}")


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _shown(value: Any) -> str:
    kind = _json_type(value) or ("an array" if isinstance(value, list) else "an object")
    return kind if kind.startswith("an ") else _article(kind)


_PARAMETER_HEADERS = ("Args", "Arguments", "Parameters", "Params")
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?)\s*:?\s*$")
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ITEM = re.compile(r"^(\w+)\s*(?::.*)?$")


def _docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph as one line, and the parameter descriptions of an Args section."""
    lines = doc.splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary.append(line.strip())
    return " ".join(summary), _parameter_notes(lines)


def _parameter_notes(lines: list[str]) -> dict[str, str]:
    starts = [i for i, line in enumerate(lines) if line.strip().rstrip(":") in _PARAMETER_HEADERS]
    if not starts:
        return {}
    numpy = starts[0] + 1 < len(lines) and _is_rule(lines[starts[0] + 1])
    body = lines[starts[0] + (2 if numpy else 1) :]
    notes: dict[str, str] = {}
    base: int | None = None
    current: str | None = None
    for position, line in enumerate(body):
        text = line.strip()
        if not text:
            continue  # NumPy style puts blank lines between entries
        indent = len(line) - len(line.lstrip())
        base = indent if base is None else base
        next_is_rule = position + 1 < len(body) and _is_rule(body[position + 1])
        if indent < base or next_is_rule:
            break  # the section ends at a dedent (Google) or the next underlined header (NumPy)
        if indent == base:
            match = (_NUMPY_ITEM if numpy else _GOOGLE_ITEM).match(text)
            if match is None:
                break
            current = match.group(1).lstrip("*")
            notes[current] = "" if numpy else match.group(2).strip()
        elif current is not None:
            notes[current] = f"{notes[current]} {text}".strip()
    return {name: text for name, text in notes.items() if text}


def _is_rule(line: str) -> bool:
    return len(line.strip()) >= 3 and set(line.strip()) == {"-"}
