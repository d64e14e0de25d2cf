"""Tools from plain Python callables: declarations from signatures, and a provider that calls them.

::

    tools = FunctionTools(search_notes, read_note)
    tools.tools_for_llm()                      # the catalogue, in tools-for-llm shape
    tools.call("search_notes", {"query": "latch"})   # ToolOutput(content='[...]')
    await tools.acall("search_notes", {"query": "latch"})   # the same, from async code

A tool may be an ``async def``: ``acall`` (what :class:`AsyncRoutingLoop` awaits) awaits it on
the caller's event loop, and runs a plain function in a worker thread so it does not block that
loop; ``call`` (what :class:`RoutingLoop` calls) runs a plain function directly and an async one
to completion on an event loop of its own, which it refuses from a thread where one is running.

Type hints become JSON schema (``str``, ``int``, ``float``, ``bool``, ``None``, lists,
tuples, sets, dicts, ``Literal``, ``Enum``, ``Optional`` / ``X | None``, unions,
``Annotated[X, "description"]``, and pydantic models when pydantic is installed: see
``type_schema``); the description is the docstring's first paragraph, and a Google- or
NumPy-style parameter section describes the parameters (``docstrings``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, cast

import anyio.to_thread

from .._catalogue_checks import ToolSpec, shown_name
from .._errors import CatalogueError
from .._provider import ToolOutput, exception_text, shortened, unknown_tool
from .._route_schema import route_tool_names
from .docstrings import parse_docstring
from .type_schema import Mismatch, converted, schema_of

__all__ = ["FunctionTools", "function_tool"]


def function_tool(function: Callable[..., Any], *, name: str | None = None) -> ToolSpec:
    """The tools-for-llm declaration of ``function``; :class:`CatalogueError` (entry 0) if it has none."""
    return _Declared.of(function, 0, name).spec


class FunctionTools:
    """A tool provider over plain callables and ``async def`` functions, in the order given.

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
        bound = self._bound(name, arguments)
        if isinstance(bound, ToolOutput):
            return bound
        declared, run = bound
        if declared.is_async and _loop_running():
            return ToolOutput(
                f"{name} is async and this thread runs an event loop: await acall() "
                "(AsyncRoutingLoop does) instead of call()",
                is_error=True,
            )
        try:
            result = asyncio.run(run()) if declared.is_async else run()
        except Exception as error:  # a tool's failure is the model's to read, not the loop's to die of
            return ToolOutput(content=exception_text(error), is_error=True)
        return _rendered(name, result)

    async def acall(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """:meth:`call` for async code: an async tool awaited, a plain one in a worker thread."""
        bound = self._bound(name, arguments)
        if isinstance(bound, ToolOutput):
            return bound
        declared, run = bound
        try:
            if declared.is_async:
                result = await run()
            else:
                # A cancelled caller leaves the thread to finish on its own; its result is dropped.
                result = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except Exception as error:  # as in call(): the model reads the failure
            return ToolOutput(content=exception_text(error), is_error=True)
        return _rendered(name, result)

    def _bound(
        self, name: str, arguments: dict[str, Any]
    ) -> ToolOutput | tuple[_Declared, Callable[[], Any]]:
        """The tool and its call with ``arguments`` bound, or the error result when they do not fit."""
        declared = self._tools.get(name)
        if declared is None:
            return unknown_tool(name, self._tools)
        try:
            args, kwargs = declared.bind(arguments)
        except Mismatch as mismatch:
            return ToolOutput(
                content=shortened(f"the arguments do not fit {declared.name}: {mismatch}"), is_error=True
            )
        return declared, functools.partial(declared.function, *args, **kwargs)


def _loop_running() -> bool:
    """Whether this thread runs an asyncio event loop (where ``asyncio.run`` cannot start one)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _rendered(name: str, result: object) -> ToolOutput:
    if isinstance(result, str):
        return ToolOutput(content=result)
    try:
        text = json.dumps(
            result, default=_jsonable, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
    except (TypeError, ValueError) as error:
        return ToolOutput(
            content=shortened(f"{name} returned a value that is not JSON: {error}"), is_error=True
        )
    return ToolOutput(content=text)


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
    is_async: bool

    @classmethod
    def of(cls, function: Callable[..., Any], index: int, name: str | None = None) -> _Declared:
        if not callable(function):
            raise CatalogueError(index, f"a tool function is callable, not {type(function).__name__}")
        tool_name = name or getattr(function, "__name__", None) or type(function).__name__
        try:
            signature = inspect.signature(function)
            hints = _parameter_hints(function if inspect.isroutine(function) else type(function).__call__)
        except Exception as error:  # an annotation string may hold any expression, or none at all
            raise CatalogueError(index, f"the signature of {tool_name} cannot be read: {error}") from None
        docstring = parse_docstring(inspect.getdoc(function) or "")
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
                schema = schema_of(annotation, definitions)
            except TypeError as error:
                raise CatalogueError(index, f"parameter {parameter.name!r} of {tool_name}: {error}") from None
            if parameter.name in docstring.parameters and "description" not in schema:
                schema = {"description": docstring.parameters[parameter.name], **schema}
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
        if docstring.summary:
            function_spec["description"] = docstring.summary
        function_spec["parameters"] = schema_
        spec = cast(ToolSpec, {"type": "function", "function": function_spec})
        route_tool_names([spec])  # the name and the schema, checked now with this entry's index
        # A callable object is async when its __call__ is.
        is_async = inspect.iscoroutinefunction(
            function if inspect.isroutine(function) else type(function).__call__
        )
        return cls(function, spec, tuple(parameters), tool_name, is_async)

    def bind(self, arguments: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        if not isinstance(arguments, Mapping):
            raise Mismatch(f"the arguments are a {type(arguments).__name__}, not an object")
        known = {p.name for p in self.parameters}
        unknown = [key for key in arguments if key not in known]
        if unknown:
            raise Mismatch(f"unknown argument {shown_name(unknown[0])}")
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for parameter in self.parameters:
            if parameter.name not in arguments:
                if parameter.required:
                    raise Mismatch(f"missing argument {parameter.name!r}")
                continue
            value = converted(arguments[parameter.name], parameter.annotation, parameter.name)
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
