"""The lock agrees with pyproject.toml: requirements/lock.txt pins every requirement the set-up installs
(the dependencies and the extras scripts/setup.sh names) at a version its specifier allows, every pin
exact, each package of requirements/no-deps.txt at the same version, and every pip call of the
set-up installs under it. `make lock` (scripts/lock.sh) writes it; a change to pyproject.toml that
the lock does not follow fails here, naming the package.
"""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from support.paths import ROOT

LOCK = ROOT / "requirements" / "lock.txt"
NO_DEPS = ROOT / "requirements" / "no-deps.txt"
SETUP = ROOT / "scripts" / "setup.sh"


def _lines(text: str) -> list[str]:
    """A requirements file's lines, comments and blank lines left out."""
    return [line.split(" #", 1)[0].strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def _setup_extras(setup: str) -> list[str]:
    """The extras scripts/setup.sh installs toolrouting with (``--editable ".[a,b]"``)."""
    found = re.findall(r'--editable "\.\[([\w,]+)\]"', setup)
    assert len(found) == 1, "scripts/setup.sh installs toolrouting once, editable, with its extras"
    return str(found[0]).split(",")


def lock_problems(pyproject: str, lock: str, no_deps: str, extras: list[str]) -> list[str]:
    """What is wrong with ``lock`` against ``pyproject`` and ``no_deps``: a line each, none if it agrees."""
    problems = []
    pins: dict[str, Requirement] = {}
    for line in _lines(lock):
        try:
            parsed = Requirement(line)
        except InvalidRequirement as error:
            problems.append(f"lock: {line!r} is no requirement ({error})")
            continue
        specs = list(parsed.specifier)
        if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version or parsed.url:
            problems.append(f"lock: {line!r} is no exact pin (name==version)")
        name = canonicalize_name(parsed.name)
        if name in pins:
            problems.append(f"lock: {parsed.name} is pinned twice")
        pins[name] = parsed
    project = tomllib.loads(pyproject)["project"]
    wanted = [("dependencies", r) for r in project["dependencies"]]
    wanted += [(f"extra {e}", r) for e in extras for r in project["optional-dependencies"][e]]
    for where, text in wanted:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        if name == canonicalize_name(project["name"]):
            continue  # the package's own extras, listed with the others
        pin = pins.get(name)
        if pin is None:
            if requirement.marker is None or requirement.marker.evaluate():
                problems.append(f"{where}: {text!r} has no pin in the lock")
            continue
        version = next(iter(pin.specifier)).version
        if not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{where}: {text!r} is not met by the lock's {pin.name}=={version}")
        if requirement.marker is not None and pin.marker != requirement.marker:
            problems.append(f"{where}: {text!r} has a marker the lock's pin {str(pin)!r} lacks")
    for line in _lines(no_deps):
        wanted_pin = Requirement(line)
        pin = pins.get(canonicalize_name(wanted_pin.name))
        if pin is None or pin.specifier != wanted_pin.specifier:
            found = "nothing" if pin is None else str(pin)
            problems.append(f"no-deps: {line!r} is pinned in the lock as {found}")
    return problems


def test_the_lock_agrees_with_pyproject() -> None:
    setup = SETUP.read_text(encoding="utf-8")
    problems = lock_problems(
        (ROOT / "pyproject.toml").read_text(encoding="utf-8"),
        LOCK.read_text(encoding="utf-8"),
        NO_DEPS.read_text(encoding="utf-8"),
        _setup_extras(setup),
    )
    assert problems == [], "run `make lock`:\n" + "\n".join(problems)


def test_the_lock_holds_the_set_ups_own_tools() -> None:
    pinned = {canonicalize_name(Requirement(line).name) for line in _lines(LOCK.read_text(encoding="utf-8"))}
    assert {"pip", "setuptools", "build", "llama-cpp-python", "atheris", "packaging"} <= pinned


def test_every_pip_call_of_the_set_up_installs_under_the_lock() -> None:
    setup = SETUP.read_text(encoding="utf-8").replace("\\\n", " ")
    calls = [
        line for line in setup.splitlines() if "pip install" in line and not line.lstrip().startswith("#")
    ]
    assert len(calls) == 3
    for call in calls:
        assert '-c "$LOCK"' in call, call
    assert "LOCK=requirements/lock.txt" in setup
    assert "-r requirements/no-deps.txt" in setup


def test_the_check_finds_each_disagreement() -> None:
    """The checker on copies broken one way each: every break is named."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    lock = LOCK.read_text(encoding="utf-8")
    no_deps = NO_DEPS.read_text(encoding="utf-8")
    extras = _setup_extras(SETUP.read_text(encoding="utf-8"))
    assert lock_problems(pyproject, lock, no_deps, extras) == []

    moved = re.sub(r"(?m)^llama[-_]cpp[-_]python==\S+", "llama_cpp_python==0.3.35", lock)
    assert lock_problems(pyproject, moved, no_deps, extras) == [
        "extra embedded: 'llama-cpp-python==0.3.36' is not met by the lock's llama_cpp_python==0.3.35",
        "extra dev: 'llama-cpp-python[server]==0.3.36' is not met by the lock's llama_cpp_python==0.3.35",
    ]
    loose = re.sub(r"(?m)^anyio==", "anyio>=", lock)
    assert [p for p in lock_problems(pyproject, loose, no_deps, extras) if "anyio" in p] == [
        f"lock: {next(line for line in loose.splitlines() if line.startswith('anyio'))!r} is no exact pin "
        "(name==version)"
    ]
    dropped = re.sub(r"(?m)^starlette==.*\n", "", lock)
    assert lock_problems(pyproject, dropped, no_deps, extras) == [
        "extra serve: 'starlette>=0.40' has no pin in the lock",
        "extra dev: 'starlette>=0.40' has no pin in the lock",
    ]
    raised = pyproject.replace('"httpx>=0.27"', '"httpx>=99"')
    assert lock_problems(raised, lock, no_deps, extras)[0].startswith(
        "dependencies: 'httpx>=99' is not met by the lock's httpx=="
    )
    unmarked = re.sub(r"(?m)^(atheris==\S+) ;.*$", r"\1", lock)
    assert [p for p in lock_problems(pyproject, unmarked, no_deps, extras) if "atheris" in p] != []
    newer = no_deps.replace("instructor==1.17.0", "instructor==1.18.0")
    assert lock_problems(pyproject, lock, newer, extras) == [
        "no-deps: 'instructor==1.18.0' is pinned in the lock as instructor==1.17.0"
    ]
    twice = lock + "anyio==1.0\n"
    assert "lock: anyio is pinned twice" in lock_problems(pyproject, twice, no_deps, extras)
