"""The limits of one run as one frozen value: rounds, repeats of one call, repairs in a round."""

from __future__ import annotations

import dataclasses

from .._json import is_count, shown
from .._limits import DEFAULT_MAX_REPAIRS, DEFAULT_MAX_REPEATS, DEFAULT_MAX_ROUNDS, SHOWN_VALUE_CHARS
from .result import LimitName

__all__ = ["RunLimits", "check_count"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunLimits:
    """How far a routing run may go; pass it as ``RoutingLoop(..., limits=RunLimits(...))``."""

    max_rounds: int = DEFAULT_MAX_ROUNDS
    """Rounds before an action is answered by a notice instead of being run; at least 1."""
    max_repeats: int = DEFAULT_MAX_REPEATS
    """Times one call (tool and canonical arguments) may run again; 0 runs each call once."""
    max_repairs: int = DEFAULT_MAX_REPAIRS
    """Refused replies fed back for repair in one round before the run fails."""

    def __post_init__(self) -> None:
        check_count("max_rounds", self.max_rounds, 1)
        check_count("max_repeats", self.max_repeats, 0)
        check_count("max_repairs", self.max_repairs, 0)

    def of(self, limit: LimitName) -> int:
        """The value of the named limit a run can trip."""
        return self.max_rounds if limit == "max_rounds" else self.max_repeats


def check_count(name: str, value: object, least: int) -> None:
    """Refuse ``value`` for the setting ``name`` unless it is an int (not a bool) of at least ``least``."""
    if not is_count(value, least):
        raise ValueError(
            f"{name} must be an integer of at least {least}, not {shown(value, SHOWN_VALUE_CHARS)}"
        )
