"""A preflight rule's case, and how the compiler it describes proves it.

A case names a schema, the finding the preflight must report (pointer, keyword, severity)
and how the compiler proves it: ``refuses`` (it will not compile the schema), ``differs``
(on the witness value, its grammar and JSON Schema disagree) or ``agrees`` (it follows the
schema where other compilers do not).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Literal

from jsonschema import Draft202012Validator

from toolrouting import Finding, format_findings, preflight

__all__ = ["OBJECT_A", "STRING", "Case", "proven", "reported"]


STRING: dict[str, Any] = {"type": "string"}


OBJECT_A: dict[str, Any] = {"type": "object", "properties": {"a": STRING}}


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    schema: dict[str, Any]
    pointer: str
    keyword: str
    severity: Literal["error", "warning", "info"]
    check: Literal["refuses", "differs", "agrees"]
    witness: str | None = None


def _valid(schema: dict[str, Any], witness: str) -> bool:
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    valid: bool = validator.is_valid(json.loads(witness))
    return valid


def reported(case: Case, target: str) -> Finding:
    findings = preflight(case.schema, target)
    matching = [f for f in findings if f.pointer == case.pointer and f.keyword == case.keyword]
    assert matching, f"no finding at {case.pointer!r} {case.keyword!r}:\n{format_findings(findings)}"
    # A keyword may carry a whole-schema note too (properties: the key order) beside the finding.
    severe = [f for f in matching if f.severity == case.severity]
    assert severe, f"{case.keyword!r} at {case.pointer!r} is not {case.severity}: {matching}"
    return severe[0]


def proven(case: Case, compiler: Any) -> None:
    error = compiler.error(case.schema)
    if case.check == "refuses":
        assert error is not None, "the compiler took the schema"
        return
    assert error is None, error
    assert case.witness is not None
    valid = _valid(case.schema, case.witness)
    accepted = compiler.accepts(case.schema, case.witness)
    if case.check == "differs":
        assert accepted != valid, f"the compiler agrees with JSON Schema on {case.witness} ({valid})"
    else:
        assert accepted == valid
