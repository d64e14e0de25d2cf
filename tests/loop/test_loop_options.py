"""What a loop takes and refuses when it is made and run: its options, one set for both drivers with
their defaults, its limits as one value, the messages it routes, the backend and the provider.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest
from support.catalogues import NONE, QUESTION, lookup
from support.drivers import Driver
from support.loop_desk import Desk, loop_of

from toolrouting import (
    DEFAULT_RETRIES,
    DEFAULT_ROUTING_CAP,
    Action,
    AsyncRoutingLoop,
    LoopOptions,
    RoutingLoop,
    ScriptedBackend,
    parse_route,
)
from toolrouting._loop.run_limits import RunLimits
from toolrouting._provider import RestorableToolProvider, ToolProvider
from toolrouting.demo.store import MemoryStore


def test_messages_must_end_with_a_user_message(driver: Driver) -> None:
    loop = loop_of(driver, ScriptedBackend())
    with pytest.raises(ValueError, match="end with a user message"):
        loop.run([*QUESTION, {"role": "assistant", "content": "hi"}])
    with pytest.raises(ValueError, match="message 0"):
        loop.run([{"role": "tool", "content": "x"}])
    with pytest.raises(TypeError, match="not a tool provider"):
        driver.loop(ScriptedBackend(), object())
    with pytest.raises(ValueError, match="max_rounds"):
        driver.loop(ScriptedBackend(), Desk(), max_rounds=0)


def test_a_backend_that_cannot_route_is_refused_when_the_loop_is_made(driver: Driver) -> None:
    with pytest.raises(TypeError, match=r"^object cannot route: a backend needs clone\(\) and settings"):
        driver.loop(object(), Desk())


def test_the_limits_travel_as_one_value_or_as_the_old_keywords(driver: Driver) -> None:
    backend = [lookup("a"), lookup("b"), lookup("c"), NONE]
    given = loop_of(driver, ScriptedBackend(backend), limits=RunLimits(max_rounds=2)).run(QUESTION)
    spelled = loop_of(driver, ScriptedBackend(backend), max_rounds=2).run(QUESTION)
    assert given.reason == spelled.reason == "max_rounds"
    assert given.messages == spelled.messages
    loop = loop_of(driver, ScriptedBackend(), max_repeats=3, retries=4)
    assert loop.limits == RunLimits(max_repeats=3)
    assert (loop.max_rounds, loop.max_repeats, loop.max_repairs, loop.retries) == (8, 3, 1, 4)
    with pytest.raises(TypeError, match="limits= or as max_rounds=, not both"):
        loop_of(driver, ScriptedBackend(), limits=RunLimits(), max_rounds=2)
    with pytest.raises(TypeError, match="takes a RunLimits, not dict"):
        loop_of(driver, ScriptedBackend(), limits={"max_rounds": 2})
    for bad in ({"max_rounds": 0}, {"max_repeats": -1}, {"max_repairs": True}):
        with pytest.raises(ValueError, match=f"{next(iter(bad))} must be an integer of at least"):
            RunLimits(**bad)
    with pytest.raises(dataclasses.FrozenInstanceError):
        loop.limits.max_rounds = 1


def test_both_drivers_take_one_set_of_options_with_their_defaults(driver: Driver) -> None:
    loop = loop_of(driver, ScriptedBackend())
    assert (loop.cap, loop.limits, loop.retries, loop.answer, loop.instructions, loop.thought) == (
        DEFAULT_ROUTING_CAP,
        RunLimits(),
        DEFAULT_RETRIES,
        False,
        True,
        None,
    )
    assert (loop.stream_answer, loop.stream_decisions, loop.on_event, loop.transcript) == (
        False,
        False,
        None,
        None,
    )
    with pytest.raises(
        TypeError, match=r"RoutingLoop\.__init__\(\) got an unexpected keyword argument 'max_round'"
    ):
        loop_of(driver, ScriptedBackend(), max_round=2)
    made: Any = RoutingLoop if driver.name == "sync" else AsyncRoutingLoop
    with pytest.raises(TypeError, match="takes 3 positional arguments but 4 were given"):
        made(ScriptedBackend(), Desk(), 64)  # the options are keywords only
    # Beside the options, a driver's own keywords are only how it waits, and where it calls sync
    # tools and how many of a decision's calls it runs at once.
    parameters = inspect.signature(made).parameters.values()
    own = {parameter.name for parameter in parameters if parameter.kind is inspect.Parameter.KEYWORD_ONLY}
    assert own == ({"sleep"} if driver.name == "sync" else {"sleep", "sync_tools", "max_concurrent_calls"})
    assert (loop.max_calls, loop.shortlist, loop.ranker, loop.abstain) == (1, None, None, "off")
    assert LoopOptions.__optional_keys__ == {
        "cap",
        "limits",
        "max_rounds",
        "max_repairs",
        "max_repeats",
        "retries",
        "answer",
        "instructions",
        "max_calls",
        "thought",
        "stream_answer",
        "stream_decisions",
        "on_event",
        "transcript",
        "shortlist",
        "ranker",
        "abstain",
    }


def test_an_action_is_an_accepted_route_in_its_round() -> None:
    route = parse_route(lookup("latch"), ["lookup"])
    action = Action.from_route(3, route)
    assert action == Action(round=3, tool="lookup", arguments={"word": "latch"}, text=lookup("latch"))
    with pytest.raises(ValueError, match=r"^only an accepted route is an action, .*: the reply is not"):
        Action.from_route(1, parse_route("Sure!", ["lookup"]))


def test_restore_is_a_declared_seam() -> None:
    assert isinstance(MemoryStore.sample(), RestorableToolProvider)
    assert not isinstance(Desk(), RestorableToolProvider)  # restore() is optional: Desk still routes
    assert isinstance(Desk(), ToolProvider)
