#!/bin/sh
# `make lock`: moves the pins. Resolves toolrouting[embedded,mcp,serve,semantic,dev] afresh, with
# today's newest releases, in a temporary virtual environment (pip and setuptools upgraded, the
# packages of requirements/no-deps.txt added as scripts/setup.sh adds them), and writes what it
# holds, every package at its exact version, to requirements/lock.txt: the constraints every pip
# call of scripts/setup.sh installs under. A requirement's environment marker in pyproject.toml
# (atheris: x86-64 Linux only) is kept on its pin. Takes a few minutes (llama-cpp-python comes
# from pip's cache after a first set-up; 7 to 10 minutes more without it). Then run the tests:
# tests/project/test_lock.py checks the lock against pyproject.toml.
set -eu
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
LOCK=requirements/lock.txt
EXTRAS=embedded,mcp,serve,semantic,dev
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/toolrouting-lock.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
trap 'exit 130' INT TERM

echo "lock: resolving toolrouting[$EXTRAS] afresh in $SCRATCH"
"$PYTHON" -m venv "$SCRATCH/venv"
PY="$SCRATCH/venv/bin/python"
"$PY" -m pip install --quiet --upgrade pip setuptools
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc 2>/dev/null || echo 2) \
    "$PY" -m pip install --quiet --editable ".[$EXTRAS]"
"$PY" -m pip install --quiet --no-deps -r requirements/no-deps.txt
"$PY" -m pip freeze --all --exclude-editable >"$SCRATCH/freeze.txt"

"$PY" - "$SCRATCH/freeze.txt" "$LOCK.new" "$EXTRAS" <<'PYTHON'
import sys
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

freeze, out, extras = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
with open("pyproject.toml", "rb") as file:
    project = tomllib.load(file)["project"]
wanted = [Requirement(r) for r in project["dependencies"]]
wanted += [Requirement(r) for extra in extras for r in project["optional-dependencies"][extra]]
markers = {canonicalize_name(r.name): str(r.marker) for r in wanted if r.marker is not None}
pins = []
for line in open(freeze, encoding="utf-8").read().splitlines():
    name, _, version = line.partition("==")
    if not version or " @ " in line:
        sys.exit(f"lock: pip freeze gave {line!r}, which is no exact pin")
    marker = markers.get(canonicalize_name(name))
    pins.append(f"{name}=={version}" + (f" ; {marker}" if marker else ""))
python = ".".join(map(str, sys.version_info[:2]))
header = f"""\
# The exact version of every package scripts/setup.sh installs: toolrouting's dependencies and its
# embedded, mcp, serve, semantic and dev extras, everything they depend on, pip and setuptools,
# and requirements/no-deps.txt. Used as constraints (pip install -c), so a package another
# platform does not install is no requirement. Written by `make lock` (scripts/lock.sh), on
# Python {python}; checked against pyproject.toml by tests/project/test_lock.py. Edit pyproject.toml, not this.
"""
with open(out, "w", encoding="utf-8") as file:
    file.write(header + "".join(pin + "\n" for pin in sorted(pins, key=str.lower)))
PYTHON
mv "$LOCK.new" "$LOCK"
echo "lock: wrote $LOCK ($(grep -c '==' "$LOCK") pins); git diff $LOCK shows what moved"
