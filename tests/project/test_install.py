"""The install a user makes: the sdist and wheel that ``python -m build`` makes of the package's own
files, the wheel installed with the ``serve`` extra in a clean venv (pip from PyPI, under
requirements/lock.txt), where ``toolrouting --version``, ``toolrouting serve --help``, the import and
the demo's notes work; the wheel holds every file of the package, its licence and its type marker;
and ``pip install 'toolrouting[traces]'``, the form the errors name an extra in, adds one to it.

It builds from a copy of only what a build needs (pyproject.toml, README.md, LICENSE and the
package), so the checkout is left as it was and a file the build needs beyond those fails here.
About a minute, most of it pip.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.paths import ROOT

import toolrouting

PACKAGE = Path(toolrouting.__file__).parent
LOCK = ROOT / "requirements" / "lock.txt"
#: What the build is given: the project's metadata, the files it names, and the package.
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE")

pytestmark = pytest.mark.network


def _run(command: list[str | Path], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _package_files() -> set[str]:
    """Every file of the package in the checkout, as a wheel names it (compiled files left out)."""
    return {
        path.relative_to(PACKAGE.parent).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def _clean_env(tmp_path: Path) -> dict[str, str]:
    """The environment without the checkout on the path; pip and build pinned by the lock."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_CONSTRAINT"] = str(LOCK)
    env["PIP_BUILD_CONSTRAINT"] = str(LOCK)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["HOME"] = env.get("HOME", str(tmp_path))
    return env


def test_the_built_wheel_installs_and_runs_in_a_clean_venv(tmp_path: Path) -> None:
    pytest.importorskip("build", reason="needs build, of the dev extra: pip install -e '.[dev]'")
    source = tmp_path / "source"
    source.mkdir()
    for name in BUILD_INPUTS:
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(PACKAGE, source / "toolrouting", ignore=shutil.ignore_patterns("__pycache__"))
    env = _clean_env(tmp_path)
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--outdir", dist, source], tmp_path, env)
    (wheel,) = dist.glob("toolrouting-*.whl")
    assert len(list(dist.glob("toolrouting-*.tar.gz"))) == 1  # the wheel was built from the sdist

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {name for name in names if name.startswith("toolrouting/")} == _package_files()
    assert {"toolrouting/py.typed", "toolrouting/demo/data/storage-room-latch.txt"} <= names
    info = next(name.split("/")[0] for name in names if name.endswith(".dist-info/METADATA"))
    assert f"{info}/licenses/LICENSE" in names

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], tmp_path, env)
    python, command = venv / "bin" / "python", venv / "bin" / "toolrouting"
    _run([python, "-m", "pip", "install", "--quiet", f"{wheel}[serve]"], tmp_path, env)

    version = _run([command, "--version"], tmp_path, env)
    assert version.startswith(f"toolrouting {toolrouting.__version__} (")
    assert "usage: toolrouting serve" in _run([command, "serve", "--help"], tmp_path, env)
    assert "usage: toolrouting fetch-model" in _run([command, "fetch-model", "--help"], tmp_path, env)
    code = (
        "import pathlib, toolrouting, toolrouting.demo\n"
        "notes = toolrouting.demo.sample_notes()\n"
        "print(pathlib.Path(toolrouting.__file__).parent)\n"
        "print(len(notes), notes[0][0])\n"
    )
    where, count = _run([python, "-c", code], tmp_path, env).splitlines()
    assert Path(where).is_relative_to(venv)  # the installed package, not the checkout
    shipped = len(list((PACKAGE / "demo" / "data").iterdir()))
    assert count.split()[0] == str(shipped)
    assert (Path(where) / "py.typed").is_file()

    # An extra added to the installed package, as the errors that name one say to (`traces`: small).
    _run([python, "-m", "pip", "install", "--quiet", "toolrouting[traces]"], tmp_path, env)
    _run([python, "-c", "import toolrouting; toolrouting.RunTracer()"], tmp_path, env)


def test_the_readmes_install_lines_work_from_a_checkout(tmp_path: Path) -> None:
    """README.md's "Install", line by line, in a clean venv: ``pip install '.[serve,embedded]'`` in
    a copy of the checkout (llama-cpp-python from pip's cache, which the set-up filled),
    ``toolrouting fetch-model`` into an empty cache, and ``toolrouting serve`` on the model it
    fetched, answering a chat completion with tools: a 200 whose decision is one of the offered."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for line in ("pip install '.[serve,embedded]'", "toolrouting fetch-model", "toolrouting serve"):
        assert f"\n{line} " in readme, f"README.md's install no longer says {line!r}"
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in BUILD_INPUTS:
        shutil.copy2(ROOT / name, checkout / name)
    shutil.copytree(PACKAGE, checkout / "toolrouting", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**_clean_env(tmp_path), "OMP_WAIT_POLICY": "passive"}
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], tmp_path, env)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    _run(["pip", "install", "--quiet", ".[serve,embedded]"], checkout, env)  # pip's own cache
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # the model's cache, empty
    _run(["toolrouting", "fetch-model"], tmp_path, env)
    assert (tmp_path / "cache" / "toolrouting" / "models").is_dir()
    with _served(["toolrouting", "serve", "--port", "0", "-q"], tmp_path, env) as url:
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
        body = {"model": "m", "messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": tools}
        reply = httpx.post(f"{url}/chat/completions", json=body, timeout=300)
    assert reply.status_code == 200, reply.text
    message = reply.json()["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    assert all(call["function"]["name"] == "get_weather" for call in calls)
    assert calls or isinstance(message["content"], str)


@contextlib.contextmanager
def _served(command: list[str], cwd: Path, env: dict[str, str]) -> Iterator[str]:
    """``command`` (a ``toolrouting serve --port 0``) started: its base URL, read from the line it
    says it serves on, until the block ends."""
    process = subprocess.Popen(command, cwd=cwd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if "serving http://" in line:
                yield line.split("serving ", 1)[1].strip()
                return
        raise AssertionError(f"toolrouting serve ended without serving (exit {process.wait()})")
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
