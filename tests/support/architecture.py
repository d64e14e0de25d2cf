"""The import rules between the package's parts, which tests/project/test_architecture.py checks
from the imports and tests/project/test_docs.py against docs/architecture.md's table."""

from __future__ import annotations

#: The packages of the flat core, read as its modules: the named limits, in one place.
CORE_PACKAGES = {"_limits"}
#: The parts each part may import, besides itself. The core imports no part.
MAY_IMPORT = {
    "core": set(),
    "_grammar": {"core"},
    "_backends": {"core", "_grammar"},
    "_loop": {"core", "_backends", "_shortlist", "_grounding"},
    "_catalogues": {"core"},
    "_preflight": {"core", "_grammar"},
    "demo": {"core"},
    "_batch": {"core", "_backends", "_loop"},
    "_traces": {"core", "_backends", "_loop"},
    "_serve": {"core", "_backends", "_loop", "_preflight", "_shortlist", "_grounding"},
    "_shortlist": {"core"},
    "_grounding": {"core"},
    "_cli": {
        "core",
        "_grammar",
        "_backends",
        "_loop",
        "_catalogues",
        "_preflight",
        "demo",
        "_batch",
        "_traces",
        "_serve",
        "_shortlist",
        "_grounding",
    },
}
