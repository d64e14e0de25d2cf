"""Abstention: a decision's calls turned into ``none`` when grounding says their values were invented.

``off`` never abstains. ``grounding`` abstains when a call of the decision leaves at least
half of its checked arguments ungrounded (``ABSTAIN_SHARE``): the decision becomes a ``none``
whose answer says what was missing (:attr:`Abstention.reason`), so the answer asks the user for
it or says that no offered tool fits.

Why half, not any ungrounded argument nor all of them: on the Berkeley Function Calling
Leaderboard's irrelevance, simple and multiple cases through ``toolrouting serve`` (the 0.5B
measurement model, docs/benchmarks/decisions.md, "Knowing when not to call"), abstaining at any ungrounded
argument took 2.5 points more of irrelevance on the fit half but cost 3 points of multiple's right
calls, at the edge of what a right call may lose, and on the held-out half cost simple 3.3; at
half, irrelevance went from 45.8% to 75.0% on the held-out half with simple and multiple within
2 points. Requiring all of them left most invented calls in (57.5% irrelevance). A call of one checked
argument abstains as under any. The share of a text's words that grounds it (``WORD_SHARE``)
moved one fit-half decision (93 to 94 of 120) between a half and all, and no held-out one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from .check import grounding
from .evidence import Evidence

__all__ = ["ABSTAIN_POLICIES", "ABSTAIN_SHARE", "AbstainPolicy", "Abstention", "abstention", "checked_policy"]

AbstainPolicy = Literal["off", "grounding"]
#: The policies of abstention, ``off`` first.
ABSTAIN_POLICIES: tuple[AbstainPolicy, ...] = get_args(AbstainPolicy)
#: The share of a call's checked arguments that, ungrounded, make ``grounding`` abstain.
ABSTAIN_SHARE = 0.5


@dataclasses.dataclass(frozen=True, kw_only=True)
class Abstention:
    """A decision not made, and why: the call's tool and the arguments the conversation does not give."""

    tool: str
    arguments: tuple[str, ...]
    reason: str
    """In words the answer can use: ``get_weather needs city, which the conversation does not give``."""


def checked_policy(policy: object) -> AbstainPolicy:
    """``policy`` if it is one of :data:`ABSTAIN_POLICIES`; anything else is refused, naming them."""
    if isinstance(policy, str) and policy in ABSTAIN_POLICIES:
        return policy
    named = ", ".join(repr(name) for name in ABSTAIN_POLICIES)
    raise ValueError(f"abstain is one of {named}, not {policy!r}"[:200])


def abstention(
    policy: AbstainPolicy,
    calls: Sequence[tuple[str, Mapping[str, Any], Mapping[str, Any]]],
    evidence: Evidence,
) -> Abstention | None:
    """Whether ``policy`` abstains from a decision's ``calls`` (each its tool, its arguments and
    the tool's parameters schema), held against the conversation's ``evidence``: the first call
    with at least ``ABSTAIN_SHARE`` of its checked arguments ungrounded, or ``None`` when the
    calls go ahead."""
    if policy == "off":
        return None
    for tool, arguments, parameters in calls:
        found = grounding(tool, arguments, parameters, evidence)
        if found.checked and found.share >= ABSTAIN_SHARE:
            return Abstention(
                tool=tool,
                arguments=tuple(item.argument for item in found.ungrounded),
                reason=found.reason(),
            )
    return None
