"""How many indexes the shortlist's ranker built, for the tests that check it builds each once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

import toolrouting._shortlist.ranker as ranker_module


def indexes_built(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the catalogues indexed from now on, in order, as each index is built."""
    built: list[int] = []
    real = ranker_module.CatalogueIndex

    def counting(tools: Sequence[Mapping[str, Any]], embeddings: Any) -> Any:
        built.append(len(tools))
        return real(tools, embeddings)

    monkeypatch.setattr(ranker_module, "CatalogueIndex", counting)
    return built
