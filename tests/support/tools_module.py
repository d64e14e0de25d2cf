"""A module of Python tools written for one test, importable by the name ``--tools`` takes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

__all__ = ["tools_module"]


def tools_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> str:
    """``source`` as the module ``name`` in ``tmp_path``, the working folder and on the path for
    the test: the ``MODULE:TOOLS`` that ``--tools`` takes. The module is dropped from
    ``sys.modules`` after, so the next test's module of the same name is imported afresh."""
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return f"{name}:TOOLS"
