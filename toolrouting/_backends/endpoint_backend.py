"""What both HTTP backends show of their endpoint, and how they clone: built anew, sharing the pool.

Beside the endpoint, a backend may know the tags its server's model reasons between
(``reasoning_tags=``, llama-server only: :mod:`server_reasoning` reasons there) and carry a
``reasoning_budget``, set by ``clone(reasoning_budget=N)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self, cast

import httpx

from .._settings import Settings
from .endpoint import Endpoint
from .reasoning_tags import ReasoningTags, checked_reasoning_budget

__all__ = ["EndpointBackend"]

#: How an HTTP backend is given its model's reasoning tags, for the error of a budget without them.
_GIVE_TAGS = "reasoning_tags= (served_reasoning_tags reads a llama-server's)"


class EndpointBackend:
    """What both HTTP backends show of their endpoint, and how they clone: built anew, sharing the pool."""

    clone_keys: ClassVar[frozenset[str]] = frozenset(
        {
            "base_url",
            "model",
            "api_key",
            "dialect",
            "timeout",
            "settings",
            "reasoning_tags",
            "reasoning_budget",
        }
    )
    _endpoint: Endpoint
    _client: httpx.Client | httpx.AsyncClient
    _settings: Settings
    _tags: ReasoningTags | None = None
    _reasoning_budget: int | None = None

    def _reasons(self, tags: ReasoningTags | None) -> None:
        """Take the model's reasoning tags, which only llama-server's native endpoints serve."""
        if tags is not None and not isinstance(tags, ReasoningTags):
            raise TypeError(f"reasoning_tags is a ReasoningTags, not {type(tags).__name__}")
        if tags is not None and self._endpoint.dialect.name != "llama.cpp":
            raise ValueError(
                "reasoning in the model's own tags takes llama-server's /apply-template and /completion: "
                f"reasoning_tags needs dialect='llama.cpp', not {self._endpoint.dialect.name!r}"
            )
        self._tags = tags

    @property
    def reasoning_tags(self) -> ReasoningTags | None:
        """The tags the server's model reasons between (``reasoning_tags=``); ``None``: not given."""
        return self._tags

    @property
    def reasoning_budget(self) -> int | None:
        """The most tokens the model reasons in its tags before each reply; ``None``: it does not."""
        return self._reasoning_budget

    @property
    def dialect(self) -> str:
        return self._endpoint.dialect.name

    @property
    def base_url(self) -> str:
        return self._endpoint.base_url

    @property
    def url(self) -> str:
        """The endpoint requests are posted to."""
        return self._endpoint.url

    @property
    def model(self) -> str | None:
        return self._endpoint.model

    @property
    def timeout(self) -> float:
        return self._endpoint.timeout

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r}, model={self.model!r}, dialect={self.dialect!r})"

    def _clone(self, changes: Mapping[str, Any]) -> Self:
        # Built anew, so a changed base_url, dialect or timeout is checked as at construction;
        # the pool passed in is one this clone does not own.
        endpoint = self._endpoint
        built: Self = cast("Any", type(self))(
            changes.get("base_url", endpoint.base_url),
            model=changes.get("model", endpoint.model),
            api_key=changes.get("api_key", endpoint.api_key),
            dialect=changes.get("dialect", endpoint.dialect.name),
            timeout=changes.get("timeout", endpoint.timeout),
            settings=changes.get("settings", self._settings),
            reasoning_tags=changes.get("reasoning_tags", self._tags),
            http_client=self._client,
        )
        built._reasoning_budget = checked_reasoning_budget(
            changes.get("reasoning_budget", self._reasoning_budget),
            built.reasoning_tags,
            _GIVE_TAGS,
        )
        return built
