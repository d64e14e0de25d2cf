"""One public surface: __all__ is the package's namespace, grouped by part, sorted and documented."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import types
from pathlib import Path

import toolrouting

INIT = Path(toolrouting.__file__)

#: The comment over each group of ``__all__`` in toolrouting/__init__.py, and the modules its names
#: come from: the flat core, or one part's package.
GROUPS = {
    "the routing core": "toolrouting._",
    "the route grammar": "toolrouting._grammar.",
    "backends": "toolrouting._backends.",
    "the loop": "toolrouting._loop.",
    "catalogues": "toolrouting._catalogues.",
    "the preflight": "toolrouting._preflight.",
    "batch runs": "toolrouting._batch.",
    "traces": "toolrouting._traces.",
    "the server": "toolrouting._serve.",
    "the shortlist": "toolrouting._shortlist.",
    "grounding": "toolrouting._grounding.",
}


def _modules() -> list[types.ModuleType]:
    found = [toolrouting]
    for info in pkgutil.walk_packages(toolrouting.__path__, "toolrouting."):
        if not info.name.endswith("__main__"):
            found.append(importlib.import_module(info.name))
    return found


def _groups() -> dict[str, list[str]]:
    """``__all__``'s names under each of its comments, as the source lists them."""
    groups: dict[str, list[str]] = {}
    current = None
    lines = INIT.read_text(encoding="utf-8").split("__all__ = [", 1)[1].split("\n]", 1)[0].splitlines()[1:]
    for line in lines:
        text = line.strip()
        if text.startswith("#"):
            current = text.lstrip("# ")
            groups[current] = []
        elif text:
            assert current is not None, "a name before the first group comment"
            groups[current].append(ast.literal_eval(text.rstrip(",")))
    return groups


def _sort_key(name: str) -> tuple[int, str]:
    """Constants, then classes and types, then functions, each alphabetical."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_lists_every_public_name_once() -> None:
    public = {
        name
        for name in dir(toolrouting)
        if not name.startswith("_") and not isinstance(getattr(toolrouting, name), types.ModuleType)
    }
    assert set(toolrouting.__all__) == public
    assert len(toolrouting.__all__) == len(set(toolrouting.__all__))


def test_all_is_grouped_by_part_and_sorted_within_each_group() -> None:
    groups = _groups()
    assert list(groups) == list(GROUPS)
    assert [name for names in groups.values() for name in names] == toolrouting.__all__
    for group, names in groups.items():
        assert names == sorted(names, key=_sort_key), group
        for name in names:
            module = getattr(getattr(toolrouting, name), "__module__", None)
            if isinstance(module, str) and module.startswith("toolrouting."):
                assert module.startswith(GROUPS[group]), f"{name} ({module}) is listed under {group}"
                if GROUPS[group] == "toolrouting._":
                    assert module.count(".") == 1, f"{name} ({module}) is not in a core module"


def test_the_imports_are_grouped_as_all_is() -> None:
    """Each comment over the imports names the group of ``__all__`` that its imports bring in."""
    comments: dict[int, str] = {}
    for number, line in enumerate(INIT.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("# --- "):
            comments[number] = line.removeprefix("# --- ").split(":", 1)[0]
    imported: dict[str, list[str]] = {}
    for node in ast.parse(INIT.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            group = comments[max(number for number in comments if number < node.lineno)]
            imported.setdefault(group, []).extend(alias.name for alias in node.names)
    assert list(imported) == list(GROUPS)
    for group, names in _groups().items():
        assert sorted(imported[group]) == sorted(names), group


def test_the_demo_is_its_own_namespace() -> None:
    import toolrouting.demo

    assert "MemoryStore" not in toolrouting.__all__
    assert not hasattr(toolrouting, "MemoryStore")  # one name: toolrouting.demo.MemoryStore
    assert toolrouting.demo.MemoryStore.__module__.startswith("toolrouting.demo.")


def test_each_thing_has_one_name() -> None:
    for dropped in ("LlamaCpp", "ToolResult"):  # EmbeddedLlama's and ToolReturned's old names
        assert not hasattr(toolrouting, dropped)
    names: dict[int, str] = {}
    for name in toolrouting.__all__:
        value = getattr(toolrouting, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert names.setdefault(id(value), name) == name, f"{name} is another name of {names[id(value)]}"


def test_every_exported_class_and_function_is_documented() -> None:
    for module in _modules():
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert inspect.getdoc(value), f"{module.__name__}.{name} has no docstring"


def test_every_module_lists_its_names_and_they_exist() -> None:
    for module in _modules():
        assert hasattr(module, "__all__"), f"{module.__name__} has no __all__"
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.__all__ names {name}, which it lacks"


def test_exported_names_come_from_their_modules() -> None:
    for package in [m for m in _modules() if hasattr(m, "__path__")]:
        for name in package.__all__:
            value = getattr(package, name)
            module = getattr(value, "__module__", None)
            if module is not None and module.startswith("toolrouting."):
                assert name in importlib.import_module(module).__all__, f"{module} does not list {name}"
