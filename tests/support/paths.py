"""Where the tests find the repository: its root, and tests/ (its shared data beside support/).

A test module sits in a folder of tests/ that mirrors the package (tests/serve/chat/, …), at
whatever depth; it reaches a file of the repository from these, not from its own place.
"""

from __future__ import annotations

from pathlib import Path

#: The repository's root.
ROOT = Path(__file__).resolve().parents[2]
#: tests/: the shared catalogues (catalogues/), the recorded exchanges (serve_recorded/), support/.
TESTS = ROOT / "tests"
