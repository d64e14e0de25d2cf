"""``pattern`` and ``patternProperties`` keys are checked as ECMA-262 regular expressions (JSON Schema's
dialect), not as Python's: judged against regress, a Rust implementation of ECMA-262's.

A pattern is valid in one of ECMA-262's two modes: with the ``u`` flag (what JSON Schema's test
suite reads, ``\\p{Lu}``) or without (Annex B's lenient syntax, ``a{`` as text). The check must
accept every pattern valid with ``u`` and refuse every pattern neither mode accepts.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from support.catalogues import declared
from support.ecma import regress_accepts

from toolrouting import CatalogueError, route_schema
from toolrouting._metaschema import schema_problem


def _checked(pattern: str) -> bool:
    return schema_problem({"type": "string", "pattern": pattern}) is None


@pytest.mark.parametrize(
    ("pattern", "valid"),
    [
        ("\\p{Lu}", True),
        ("[\\p{L}\\d]+", True),
        ("(?<year>\\d{4})-\\k<year>", True),
        ("(?<=a+)b", True),
        ("(?<!x)y", True),
        ("[^]", True),
        ("\\u{1F600}", True),
        ("\\cJ", True),
        ("^[a-z]+$", True),
        ("(?P<n>a)(?P=n)", False),
        ("(?i)abc", False),
        ("a++", False),
        ("\\Aabc\\Z", False),
        ("(?#comment)", False),
        ("(?>atomic)", False),
        ("(", False),
        ("a{2,1}", False),
    ],
)
def test_ecma_262_syntax_is_accepted_and_python_only_syntax_refused(pattern: str, valid: bool) -> None:
    assert _checked(pattern) is valid
    assert regress_accepts(pattern, "u") is valid or regress_accepts(pattern, "") is valid
    if not valid:
        tool = declared(
            "t", parameters={"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
        )
        with pytest.raises(CatalogueError, match="/parameters/properties/s/pattern is not"):
            route_schema([tool])


REGEX_TEXT = st.text(alphabet="ab()[]{}?*+\\^$|.-:<>=!,Pkpu0129LdwAZ#i_", max_size=8)


#: An assertion with a quantifier: ECMA-262's grammar has no such term with the u flag (its
#: Term is an Assertion or a quantified Atom), and regress accepts it anyway.
_QUANTIFIED_ASSERTION = re.compile(r"(?:\\[bB]|[$^])[*+?{]")


@given(REGEX_TEXT)
def test_the_check_agrees_with_ecma_262(pattern: str) -> None:
    assume(not _QUANTIFIED_ASSERTION.search(pattern))
    if regress_accepts(pattern, "u"):
        assert _checked(pattern), pattern
    elif not regress_accepts(pattern, ""):
        assert not _checked(pattern), pattern
