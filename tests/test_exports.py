"""One public surface: __all__ is the package's namespace, sorted and documented."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import toolrouting


def test_all_lists_every_public_name_once() -> None:
    public = {name for name in dir(toolrouting) if not name.startswith("_")}
    assert set(toolrouting.__all__) == public
    assert len(toolrouting.__all__) == len(set(toolrouting.__all__))


def test_every_exported_class_and_function_is_documented() -> None:
    for name in toolrouting.__all__:
        value = getattr(toolrouting, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name} has no docstring"


def test_every_module_lists_its_names_and_they_exist() -> None:
    for info in pkgutil.iter_modules(toolrouting.__path__):
        if info.name == "__main__":
            continue
        module = importlib.import_module(f"toolrouting.{info.name}")
        assert hasattr(module, "__all__"), f"{info.name} has no __all__"
        for name in module.__all__:
            assert hasattr(module, name), f"{info.name}.__all__ names {name}, which it lacks"


def test_exported_names_come_from_their_modules() -> None:
    for name in toolrouting.__all__:
        value = getattr(toolrouting, name)
        module = getattr(value, "__module__", None)
        if module is not None and module.startswith("toolrouting."):
            assert name in importlib.import_module(module).__all__, f"{module} does not list {name}"
