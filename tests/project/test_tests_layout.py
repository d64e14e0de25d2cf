"""The tests' own layout (docs/development.md, "Where the tests live"): each test module in the
folder of tests/ that mirrors its part and named for that folder, no two modules of one name, and
none importing another (what tests share is in tests/support/).

pytest imports a test module by its bare name (its default import mode, with no ``__init__.py``
in the folders), and mypy checks tests/ as loose modules: two modules of one name would break both.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from support.paths import ROOT, TESTS

PACKAGE = ROOT / "toolrouting"

#: The folders that mirror no package of its own: the routing core's flat modules (``core``,
#: named as they are: ``test_parse.py`` for ``_parse.py``), and what holds for the repository as a
#: whole (``project``: its architecture, docs, exports, install, lock and the test servers' start).
NOT_PARTS = {"core", "project"}


def _test_modules() -> list[Path]:
    return sorted(path for path in TESTS.rglob("test_*.py") if "support" not in path.parts)


def _mirrored(folders: tuple[str, ...]) -> bool:
    """Whether a folder of tests/ mirrors a part: ``serve/chat`` is ``toolrouting/_serve/chat/``,
    ``backends/http`` the module ``toolrouting/_backends/http.py``, ``demo`` ``toolrouting/demo/``,
    ``benchmarks`` the repository's ``benchmarks/``."""
    first, *rest = folders
    for base in (PACKAGE / f"_{first}", PACKAGE / first, ROOT / first):
        if base.is_dir():
            inner = base.joinpath(*rest)
            return inner.is_dir() or inner.with_suffix(".py").is_file()
    return False


def test_every_test_module_sits_in_the_folder_of_its_part_named_for_it() -> None:
    wrong = []
    for path in _test_modules():
        folders = path.relative_to(TESTS).parts[:-1]
        where = path.relative_to(ROOT)
        if not folders:
            wrong.append(f"{where} is in no folder")
        elif folders[0] in NOT_PARTS:
            if len(folders) > 1:
                wrong.append(f"{where} is in a folder inside {folders[0]}/")
        elif not _mirrored(folders):
            wrong.append(f"{where} is in a folder that mirrors no part of the package")
        elif not (path.stem + "_").startswith(f"test_{'_'.join(folders)}_"):
            wrong.append(f"{where} is not named test_{'_'.join(folders)}_*.py")
    assert wrong == []


def test_no_two_test_modules_share_a_name() -> None:
    names = Counter(path.name for path in _test_modules())
    assert {name: count for name, count in names.items() if count > 1} == {}


def test_no_test_module_imports_another() -> None:
    stems = {path.stem for path in _test_modules()}
    wrong = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module]
            else:
                continue
            wrong += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {target}"
                for target in targets
                if target.split(".")[0] in stems
            ]
    assert wrong == []
