"""Docs that cannot drift: every example in the README and docs/ runs as a doctest."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_examples_run(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # examples read the repository's sample files by relative path
    result = doctest.testfile(
        str(page),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        verbose=False,
    )
    assert result.failed == 0, (
        f"{result.failed} example(s) in {page.name} failed; run the doctest to see them"
    )


def test_the_readme_draws_the_error_tree_of_the_code() -> None:
    import re

    import toolrouting
    from toolrouting import _errors

    def names(text: str) -> list[str]:
        return re.findall(r"[├└]── (\w+)", text)

    drawn = names((ROOT / "README.md").read_text(encoding="utf-8"))
    assert drawn == names(_errors.__doc__ or "")
    assert sorted(drawn) == sorted(set(_errors.__all__) - {"ToolRoutingError"})
    for name in drawn:
        assert issubclass(getattr(toolrouting, name), toolrouting.ToolRoutingError)
