"""Every ``pip install`` line of README.md and docs/ runs as written, in one clean venv, in page
order, from a copy of the checkout (so ``'.[mcp]'`` is this package): each ends with pip's exit 0,
and each distribution it names is then installed. README's ``'.[serve,embedded]'`` is
tests/project/test_install.py's, which goes on to fetch the model and serve.

The venv is clean (no checkout on the path) and pip installs under requirements/lock.txt, the
versions the snippets after each line were run at; llama-cpp-python comes from pip's cache, which
the set-up filled. A few minutes, most of it pip.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.docs import ShellLine, distribution, pip_installs
from support.paths import ROOT

import toolrouting

pytestmark = pytest.mark.network

#: What a build of the checkout is given (as test_install.py gives it).
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE")


def _named(line: ShellLine) -> list[str]:
    """The distributions ``line`` installs: this package for ``.[...]``, else each requirement's name."""
    names = []
    for word in line.commands()[0][2:]:
        if word.startswith("-"):
            continue
        names.append("toolrouting" if word.startswith(".") else distribution(word))
    return names


def test_the_pages_name_the_installs_this_runs() -> None:
    pages = {line.page for line in pip_installs()}
    assert {"docs/embedded.md", "docs/mcp.md", "docs/serve.md"} <= pages
    assert all(_named(line) for line in pip_installs())


def test_every_pip_install_line_runs_as_written_in_a_clean_venv(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in BUILD_INPUTS:
        shutil.copy2(ROOT / name, checkout / name)
    package = Path(toolrouting.__file__).parent
    shutil.copytree(package, checkout / "toolrouting", ignore=shutil.ignore_patterns("__pycache__"))
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    lock = str(ROOT / "requirements" / "lock.txt")
    env.update(PIP_CONSTRAINT=lock, PIP_BUILD_CONSTRAINT=lock, PIP_DISABLE_PIP_VERSION_CHECK="1")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    for line in pip_installs():
        done = subprocess.run(
            ["bash", "-c", line.text], cwd=checkout, env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, f"{line.page}: {line.text}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "freeze"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    installed = {re.split("==| @ ", row)[0].lower().replace("_", "-") for row in listed.splitlines()}
    wanted = {name.lower().replace("_", "-") for line in pip_installs() for name in _named(line)}
    assert wanted - installed == set()
    # And each installed at the version the suite's snippets ran at.
    lock = (ROOT / "requirements" / "lock.txt").read_text(encoding="utf-8")
    for name in wanted - {"toolrouting"}:
        pinned = re.search(rf"^{re.escape(name)}==(\S+)$", lock, re.MULTILINE)
        if pinned is not None:
            assert f"{name}=={pinned[1]}".lower() in listed.lower().replace("_", "-"), name
    assert importlib.metadata.version("toolrouting") == toolrouting.__version__
    # What the pages import after these lines imports in that venv alone.
    modules = "llama_cpp, mcp, openai, anthropic, agents, pydantic_ai, langchain, langgraph, instructor"
    code = f"import {modules}, toolrouting; print(toolrouting.__file__)"
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert Path(done.stdout.strip()).is_relative_to(venv)
