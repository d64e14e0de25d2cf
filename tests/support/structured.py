"""The typed answer the structured-output tests ask for, its schema, and the model served for them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from support.serve import served_embedded

QUESTION: list[Any] = [{"role": "user", "content": "Describe the storage-room latch in one line."}]
NOTE: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string", "maxLength": 40}, "stars": {"type": "integer"}},
    "required": ["title", "stars"],
    "additionalProperties": False,
}


def json_schema(schema: dict[str, Any], strict: bool | None = None, name: str = "note") -> dict[str, Any]:
    wrapper: dict[str, Any] = {"name": name, "schema": schema}
    if strict is not None:
        wrapper["strict"] = strict
    return {"type": "json_schema", "json_schema": wrapper}


class Note(BaseModel):
    title: str
    stars: int


#: Schemas a grammar dialect's backend cannot guarantee, and the keyword each is refused at, as a
#: path under the schema (the Responses front's tests name them under ``text.format.schema``).
UNGUARANTEED: list[tuple[dict[str, Any], str]] = [
    # Our grammar refuses positional items outright.
    (
        {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}]}}},
        "properties.pair.prefixItems",
    ),
    # It does not enforce a pattern: a reply could break the schema, so it is refused too.
    (
        {"type": "object", "properties": {"code": {"anyOf": [{"type": "string", "pattern": "^A"}]}}},
        "properties.code.anyOf[0].pattern",
    ),
]


@pytest.fixture(scope="module")
def embedded() -> Iterator[str]:
    with served_embedded(model="smollm2", answer_tokens=64) as url:
        yield url
