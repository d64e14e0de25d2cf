"""Shared test set-up. Hypothesis runs a bounded number of examples in CI."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings
from support.drivers import DRIVERS, Driver
from support.fault_server import FaultServer
from support.llama_server import running, running_llama_server, start_llama_cpp_server
from support.model import TEST_THREADS

if TYPE_CHECKING:
    from support.compilers import LlamaCpp, Llguidance, Outlines

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

# The modules of benchmarks/ a test may import (tests/project/test_architecture.py's SHARED_WITH_TESTS),
# by their package, benchmarks.common: the hostile replies and the decision cases both use, and
# the scoring tests/benchmarks/test_benchmarks_versus_native.py checks. The repository's root is appended
# (`.venv/bin/pytest` does not put it on the path as `python -m pytest` does), after what is
# installed.
sys.path.append(str(Path(__file__).resolve().parent.parent))

settings.register_profile("ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "long", max_examples=100_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# --- A real `python -m llama_cpp.server` for the tests that talk to one over HTTP ---------------

#: Seconds the server gets to load the default model and answer /v1/models (it needs about two).
LLAMA_SERVER_START_LIMIT = 120.0
_LLAMA_SERVER_MODULES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
)


@pytest.fixture(scope="session")
def llama_cpp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a `python -m llama_cpp.server` on loopback with the default SmolLM2 model.

    Started once per session (the loop's end-to-end tests reuse it) and terminated at the end.
    """
    from toolrouting._backends.embedded.backend import default_model_path
    from toolrouting._errors import ModelLoadError

    missing = [name for name in _LLAMA_SERVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(
            f"python -m llama_cpp.server needs {', '.join(missing)}: pip install -e '.[dev,embedded]'"
        )
    try:
        model = default_model_path()
    except ModelLoadError as error:
        pytest.skip(str(error))
    log_path = tmp_path_factory.mktemp("llama_cpp_server") / "server.log"
    with running(
        lambda: start_llama_cpp_server(model, TEST_THREADS, log_path, limit=LLAMA_SERVER_START_LIMIT)
    ) as url:
        yield url


# --- llama.cpp's own C++ llama-server, as scripts/setup.sh builds and caches it -------------------


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of the cached C++ ``llama-server`` on loopback with the default SmolLM2 model
    (skipped only where the binary is absent: ``running_llama_server``)."""
    with running_llama_server(tmp_path_factory.mktemp("llama_server")) as url:
        yield url


# --- The loop's two drivers: its behavioural tests run once through each ---------------------


@pytest.fixture(params=sorted(DRIVERS))
def driver(request: pytest.FixtureRequest) -> Driver:
    """The sync :class:`RoutingLoop` or the :class:`AsyncRoutingLoop`, behind the sync loop's face."""
    return DRIVERS[request.param]


# --- The compilers the conformance tests hold our grammar against (tests/support/compilers.py) ---


@pytest.fixture(scope="module")
def llama() -> LlamaCpp:
    """llama-cpp-python's converter and llama.cpp's grammar engine, loaded once per module.

    test_grammar_llama_cpp.py and test_backends_embedded_llama_internals.py define a ``llama`` of their own.
    """
    from support.compilers import LlamaCpp

    return LlamaCpp()


@pytest.fixture(scope="module")
def llguidance() -> Llguidance:
    """llguidance's JSON-schema compiler, once per module."""
    from support.compilers import Llguidance

    return Llguidance()


@pytest.fixture(scope="module")
def outlines() -> Outlines:
    """outlines-core's JSON-schema compiler, once per module."""
    from support.compilers import Outlines

    return Outlines()


# --- The fault tests' real HTTP server on loopback (tests/support/fault_server.py) -------------


@pytest.fixture(scope="module")
def running_server() -> Iterator[FaultServer]:
    """One fault server for a module's tests."""
    with FaultServer() as fault_server:
        yield fault_server


@pytest.fixture
def server(running_server: FaultServer) -> Iterator[FaultServer]:
    """The module's fault server with an empty script; whatever a test held is released after it.

    A module whose ``server`` is another kind of server defines its own fixture of that name.
    """
    running_server.clear()
    yield running_server
    running_server.release.set()
