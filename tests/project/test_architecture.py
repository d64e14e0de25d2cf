"""The tree is the architecture: which part may import which, and only through its front door.

Parts: the flat routing core (``toolrouting._*.py``), then one package each for the route
grammar, the backends, the loop, the catalogues, the preflight, the demo, batch runs, traces, the
server, the shortlist, grounding and the command line; and, outside the package, the benchmarks
(``benchmarks/``): a package of what the scripts share (``benchmarks/common/``) and one of scripts
for each purpose.
docs/architecture.md draws the same table.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from support.architecture import CORE_PACKAGES, MAY_IMPORT
from support.paths import ROOT

import toolrouting

PACKAGE = Path(toolrouting.__file__).parent
BENCHMARKS = ROOT / "benchmarks"
TESTS = ROOT / "tests"

#: The packages of benchmarks/: what the scripts share, imported by any of them, and one for each
#: purpose, whose scripts and modules import only that one and the shared one.
SHARED = "common"
GROUPS = {"speed", "quality", "serve"}
#: The modules of benchmarks/ a test may import, what the two share (tests/conftest.py puts the
#: repository's root on the path for them): the decision cases (``corpus``), the hostile replies
#: (``hostile``), and a way's records scored and charted (``scoring``), all of ``benchmarks.common``.
SHARED_WITH_TESTS = {"corpus", "hostile", "scoring"}


#: Lines a module may have: one that needs more holds more than one concern.
MAX_MODULE_LINES = 400


def _part(module: str) -> str:
    """The part a dotted module name belongs to (``toolrouting._loop.run`` -> ``_loop``)."""
    pieces = module.split(".")
    if len(pieces) >= 2 and pieces[1] in MAY_IMPORT:
        return pieces[1]
    return "core"


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(relative.parts).removesuffix(".__init__")
        if name not in ("toolrouting", "toolrouting.__main__"):
            yield name, path


def _imports(name: str, path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """``(line, absolute module, imported names)`` of every import of toolrouting code in a module."""
    for line, target, names in _all_imports(name, path):
        if target.startswith("toolrouting"):
            yield line, target, names


def _all_imports(name: str, path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """``(line, absolute module, imported names)`` of every import in a module."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            yield node.lineno, target, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []


def test_parts_import_only_the_parts_below_them() -> None:
    wrong = []
    for name, path in _modules():
        part = _part(name)
        for line, target, _ in _imports(name, path):
            other = _part(target)
            if other != part and other not in MAY_IMPORT[part]:
                wrong.append(f"{name}:{line} ({part}) imports {target} ({other})")
    assert wrong == []


def test_no_private_name_crosses_a_module_and_parts_meet_at_their_package() -> None:
    wrong = []
    for name, path in _modules():
        part = _part(name)
        for line, target, names in _imports(name, path):
            private = [n for n in names if n.startswith("_")]
            # "from . import _json" imports a module of the core, not a private name.
            modules = {n for n in private if (PACKAGE.parent / target.replace(".", "/") / f"{n}.py").exists()}
            if set(private) - modules:
                wrong.append(f"{name}:{line} imports private {sorted(set(private) - modules)} from {target}")
            other = _part(target)
            if other != part and other != "core" and target != f"toolrouting.{other}":
                wrong.append(f"{name}:{line} reaches into {target} instead of toolrouting.{other}")
    assert wrong == []


#: The server's layers (``toolrouting._serve``), by the name under it ("" for the package):
#: what its core stands on, the core (one package, ``core``), and the fronts, one per API.
SERVE_BELOW_CORE = {"error_replies", "request_log"}
SERVE_CORE = "core"
SERVE_FRONTS = {"chat", "responses", "messages"}
#: What puts the fronts together, and so alone may import one besides the front itself: the
#: route table, the app and the package's front door.
SERVE_ASSEMBLY = {"", "endpoints", "app"}
#: What makes a routed decision: a front (a request read, a reply written) imports none of it
#: but through the serve core, so no API's front routes, renders instructions or retries.
ROUTING = (
    "_loop",
    "_grammar",
    "_route_schema",
    "_catalogue_prompt",
    "_parse",
    "_routed_backend",
    "_result_messages",
)


def _serve_room(module: str) -> str | None:
    """What a dotted module is under ``toolrouting._serve`` ("" for the package), ``None``
    outside the server."""
    pieces = module.split(".")
    if pieces[:2] != ["toolrouting", "_serve"]:
        return None
    return pieces[2] if len(pieces) > 2 else ""


def test_every_serve_front_routes_through_the_one_core() -> None:
    wrong = []
    for name, path in _modules():
        if _serve_room(name) in (None, SERVE_CORE):
            continue
        for line, target, _ in _imports(name, path):
            if set(target.split(".")[1:2]) & set(ROUTING):
                wrong.append(f"{name}:{line} imports {target}, the routing the serve core does")
    assert wrong == []


def test_the_serve_core_is_one_package_the_fronts_call_and_nothing_climbs_back_up() -> None:
    """Outside the core, the server imports it from its package alone, never from its modules;
    the core imports only what it stands on, and that imports nothing above it; a front is
    imported only by itself and by what puts the fronts together."""
    wrong = []
    for name, path in _modules():
        room = _serve_room(name)
        if room is None:
            continue
        for line, target, _ in _imports(name, path):
            other = _serve_room(target)
            if other is None or other == room:
                continue
            if other == SERVE_CORE and target != f"toolrouting._serve.{SERVE_CORE}":
                wrong.append(f"{name}:{line} reaches into {target} instead of toolrouting._serve.core")
            if room == SERVE_CORE and other not in SERVE_BELOW_CORE:
                wrong.append(f"{name}:{line}: the core imports {target}, above it")
            if room in SERVE_BELOW_CORE and other not in SERVE_BELOW_CORE:
                wrong.append(f"{name}:{line}: what the core stands on imports {target}, above it")
            if other in SERVE_FRONTS and room not in SERVE_ASSEMBLY:
                wrong.append(f"{name}:{line} imports the front {target}")
    assert wrong == []


def _benchmarks() -> Iterator[tuple[str, Path]]:
    """Every module of benchmarks/ by its dotted name (``benchmarks.speed.core``), packages too."""
    for path in sorted(BENCHMARKS.rglob("*.py")):
        relative = path.relative_to(ROOT).with_suffix("")
        yield ".".join(relative.parts).removesuffix(".__init__"), path


def test_no_module_is_over_the_size_one_concern_takes() -> None:
    """Every module of the package, every module of benchmarks/, script or not, and every module
    of tests/ (its support modules too)."""
    modules = [
        *_modules(),
        *((str(path.relative_to(ROOT)), path) for _, path in _benchmarks()),
        *((str(path.relative_to(ROOT)), path) for path in sorted(TESTS.rglob("*.py"))),
    ]
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules}
    over = {name: size for name, size in sizes.items() if size > MAX_MODULE_LINES}
    assert over == {}


def _is_script(path: Path) -> bool:
    return 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")


def test_benchmarks_meet_the_package_at_its_front_doors_and_use_no_private_name() -> None:
    """A benchmark imports ``toolrouting``, a module of the core, or a part's package
    (``toolrouting._loop``), never a module inside a part, and never a ``_`` name."""
    wrong = []
    for name, path in _benchmarks():
        for line, target, names in _imports(name, path):
            part = _part(target)
            private = [n for n in names if n.startswith("_")]
            if private:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports private {private} from {target}")
            if part == "core":
                top = target.split(".")[1] if "." in target else ""
                core_module = (
                    target == "toolrouting" or (PACKAGE / f"{top}.py").exists() or top in CORE_PACKAGES
                )
                if target.count(".") > 1 or not core_module:
                    wrong.append(f"{path.relative_to(ROOT)}:{line} imports {target}, not a part's front door")
            elif target != f"toolrouting.{part}":
                wrong.append(
                    f"{path.relative_to(ROOT)}:{line} reaches into {target} instead of toolrouting.{part}"
                )
    assert wrong == []


def _package(name: str) -> str:
    """The package of benchmarks/ a module is in: ``common``, a purpose, or ``""`` at the top."""
    pieces = name.split(".")
    return pieces[1] if len(pieces) > 2 or (len(pieces) == 2 and pieces[1] in {SHARED, *GROUPS}) else ""


def test_benchmarks_are_grouped_by_purpose() -> None:
    """benchmarks/ holds the shared package and one package a purpose, and no script stands
    outside a purpose; the shared package holds no script."""
    packages = {path.parent.name for path in BENCHMARKS.glob("*/__init__.py")}
    assert packages == {SHARED, *GROUPS}
    loose = {path.stem for path in BENCHMARKS.glob("*.py")} - {"__init__"}
    assert loose == set()
    assert [name for name, path in _benchmarks() if _package(name) == SHARED and _is_script(path)] == []


def test_benchmarks_and_tests_do_not_import_each_other() -> None:
    """No benchmark imports a test module (``support``, ``conftest``), a script, or a purpose's
    module from another package than its own, nor edits ``sys.path``; the shared modules import
    only each other. No test imports a benchmark but those of :data:`SHARED_WITH_TESTS`, each a
    shared module that imports only shared modules."""
    modules = dict(_benchmarks())
    scripts = {name for name, path in modules.items() if _is_script(path)}
    tested = {path.stem for path in TESTS.rglob("*.py")} | {"support", "tests"}
    shared = {f"benchmarks.{SHARED}.{name}" for name in SHARED_WITH_TESTS}
    wrong = [
        f"{name} is shared with the tests but no module of benchmarks/" for name in shared - set(modules)
    ]
    for name, path in modules.items():
        where = path.relative_to(ROOT)
        if "sys.path" in path.read_text(encoding="utf-8"):
            wrong.append(f"{where} edits sys.path")
        for line, target, names in _all_imports(name, path):
            top = target.split(".")[0]
            imported = {target} | {f"{target}.{n}" for n in names if f"{target}.{n}" in modules}
            if top in tested:
                wrong.append(f"{where}:{line} imports {target}")
            if top != "benchmarks":
                continue
            for module in imported - {target} if len(imported) > 1 else imported:
                package = _package(module)
                if module in scripts:
                    wrong.append(f"{where}:{line} imports the script {module}")
                elif package not in (SHARED, _package(name)):
                    wrong.append(f"{where}:{line} imports {module}, of another purpose")
                elif name in shared and module not in shared | {f"benchmarks.{SHARED}"}:
                    wrong.append(f"{where}:{line} is shared with the tests but imports {module}")
    for path in sorted(TESTS.rglob("*.py")):
        for line, target, names in _all_imports(path.stem, path):
            if target.split(".")[0] != "benchmarks":
                continue
            imported = {f"{target}.{n}" for n in names if f"{target}.{n}" in modules} or {target}
            if imported - shared:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports the benchmark {target}")
    assert wrong == []
