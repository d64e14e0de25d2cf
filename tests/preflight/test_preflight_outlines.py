"""The preflight's outlines rules, each checked against outlines-core, and the index a long string
bound would need."""

from __future__ import annotations

import pytest
from support.compilers import Outlines
from support.preflight import Case, proven, reported
from support.preflight_outlines import OUTLINES_CASES

from toolrouting import preflight
from toolrouting._limits import OUTLINES_MAX_STRING_BOUND


@pytest.mark.parametrize("case", OUTLINES_CASES, ids=lambda c: c.id)
def test_outlines_rule(case: Case, outlines: Outlines) -> None:
    reported(case, "outlines")
    proven(case, outlines)


def test_outlines_index_of_a_long_string_bound_does_not_fit(outlines: Outlines) -> None:
    # outlines-core builds its index from the regex when a model decodes: time and memory grow
    # exponentially with a string's length bound. Built in a subprocess under 1 GiB and 60 s.
    limit = OUTLINES_MAX_STRING_BOUND
    assert outlines.index_fits({"type": "string", "maxLength": 8}, 2**30, 60)
    too_long = {"type": "string", "maxLength": limit + 4}
    assert reported(Case("bound", too_long, "", "maxLength", "error", "refuses"), "outlines")
    assert not outlines.index_fits(too_long, 2**30, 60)
    assert not [
        f for f in preflight({"type": "string", "maxLength": limit}, "outlines") if f.severity == "error"
    ]
