"""What the serve fuzzes share: arbitrary JSON put in a valid field's place, and the scripted
backend's reply that makes any 5xx the server's own."""

from __future__ import annotations

from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

from toolrouting import ROUTE_SCHEMA_NAME, ScriptedRequest

__all__ = ["IN_PROCESS", "either", "json_values", "routed_reply"]

#: In-process requests under the default profile; HYPOTHESIS_PROFILE=long raises every fuzz's counts.
IN_PROCESS = max(2000, settings().max_examples)

#: A valid action for each tool of the bare catalogue (support.serve's ``BARE_SEARCH``, ``BARE_READ``).
_ACTIONS = {"search": '{"tool":"search","arguments":{"query":"x"}}', "read": '{"tool":"read","arguments":{}}'}


def routed_reply(request: ScriptedRequest) -> str:
    """A valid action for the route the request carries, or a short answer when it carries none
    (an answer's schema, a ``response_format`` or ``text.format``, is no route). A route with a
    reasoning slot gets a thought first; a ``none`` that holds the answer (a format beside the
    tools: the fuzzed ones are json_object, under which any object is an answer) gets one."""
    schema = request.settings.json_schema
    if schema is None or request.settings.json_schema_name != ROUTE_SCHEMA_NAME:
        return "An answer."
    offered = {alt["properties"]["tool"]["const"]: alt for alt in schema["anyOf"]}
    thought = '{"thought":"x",' if "thought" in next(iter(offered.values()))["properties"] else "{"
    if "none" not in offered:
        return thought + _ACTIONS[next(iter(offered))][1:]
    held = ',"answer":{}' if "answer" in offered["none"]["properties"] else ""
    return thought + '"tool":"none"' + held + "}"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=10,
)


def either(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``valid`` two times in three, any JSON value the third."""
    return st.one_of(valid, valid, json_values)
