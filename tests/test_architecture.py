"""The tree is the architecture: which part may import which, and only through its front door.

Parts: the flat routing core (``toolrouting._*.py``), then one package each for the route
grammar, the backends, the loop, the catalogues, the preflight, the demo, batch runs, traces, the
server, the shortlist, grounding and the command line; and, outside the package, the benchmarks
(``benchmarks/``).
docs/architecture.md draws the same table.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import toolrouting

PACKAGE = Path(toolrouting.__file__).parent
ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
TESTS = ROOT / "tests"

#: The modules of benchmarks/ a test may import, what the two share (tests/conftest.py puts
#: benchmarks/ on the path for them): the decision cases (``corpus``), the hostile replies
#: (``hostile``), and a way's records scored and charted (``scoring``).
SHARED_WITH_TESTS = {"corpus", "hostile", "scoring"}

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


#: The server's one translation core: the request and the reply, what a conversation sends, the
#: decision, the serving of both.
SERVE_CORE = {"protocol", "conversation", "plan", "serving", "call_pieces"}
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


def test_every_serve_front_routes_through_the_one_core() -> None:
    wrong = []
    for name, path in _modules():
        pieces = name.split(".")
        if pieces[1:2] != ["_serve"] or len(pieces) < 3 or pieces[2] in SERVE_CORE:
            continue
        for line, target, _ in _imports(name, path):
            if set(target.split(".")[1:2]) & set(ROUTING):
                wrong.append(f"{name}:{line} imports {target}, the routing the serve core does")
    assert wrong == []


def _benchmarks() -> Iterator[tuple[str, Path]]:
    for path in sorted(BENCHMARKS.glob("*.py")):
        yield path.stem, path


def test_no_module_is_over_the_size_one_concern_takes() -> None:
    """Every module of the package, every module of benchmarks/, script or not, and every module
    of tests/ (its support modules too)."""
    modules = [
        *_modules(),
        *((f"benchmarks/{path.name}", path) for _, path in _benchmarks()),
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
                wrong.append(f"benchmarks/{path.name}:{line} imports private {private} from {target}")
            if part == "core":
                core_module = target == "toolrouting" or (PACKAGE / f"{target.split('.')[1]}.py").exists()
                if target.count(".") > 1 or not core_module:
                    wrong.append(f"benchmarks/{path.name}:{line} imports {target}, not a part's front door")
            elif target != f"toolrouting.{part}":
                wrong.append(
                    f"benchmarks/{path.name}:{line} reaches into {target} instead of toolrouting.{part}"
                )
    assert wrong == []


def test_benchmarks_and_tests_do_not_import_each_other() -> None:
    """No benchmark imports a test module (``support``, ``conftest``) or another benchmark
    script, nor edits ``sys.path``; no test imports a benchmark but those of :data:`SHARED_WITH_TESTS`,
    each a module of benchmarks/ that is no script and imports no other benchmark."""
    benchmarks = {name for name, _ in _benchmarks()}
    scripts = {name for name, path in _benchmarks() if _is_script(path)}
    tested = {path.stem for path in TESTS.rglob("*.py")} | {"support", "tests"}
    wrong = [
        f"{name} is shared with the tests but no module of benchmarks/"
        for name in SHARED_WITH_TESTS - benchmarks
    ]
    wrong += [
        f"benchmarks/{name}.py is shared with the tests but a script" for name in SHARED_WITH_TESTS & scripts
    ]
    for name, path in _benchmarks():
        if "sys.path" in path.read_text(encoding="utf-8"):
            wrong.append(f"benchmarks/{path.name} edits sys.path")
        for line, target, _ in _all_imports(name, path):
            top = target.split(".")[0]
            if top in tested or top in scripts:
                wrong.append(f"benchmarks/{path.name}:{line} imports {target}")
            elif name in SHARED_WITH_TESTS and top in benchmarks - SHARED_WITH_TESTS:
                wrong.append(f"benchmarks/{path.name}:{line} is shared with the tests but imports {target}")
    for path in sorted(TESTS.rglob("*.py")):
        for line, target, _ in _all_imports(path.stem, path):
            top = target.split(".")[0]
            if top == "benchmarks" or (top in benchmarks and top not in SHARED_WITH_TESTS):
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports the benchmark {target}")
    assert wrong == []
