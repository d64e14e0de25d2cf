"""Weight repacking decided from the CPU features llama.cpp reports: off where its AMX kernels would
run (they crash on the first decode), on elsewhere, by hand either way; and a real load and decode
with the decision on this machine, whatever its CPU.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import pytest

from toolrouting._backends.embedded.backend import EmbeddedLlama
from toolrouting._backends.embedded.llama_internals import load_llama
from toolrouting._backends.embedded.repack import amx_features, repack_for
from toolrouting._errors import ModelLoadError
from toolrouting._settings import Settings

# llama_print_system_info as a native build prints it on a Sapphire Rapids Xeon, and on an AVX2 laptop.
AMX_XEON = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | AVX512 = 1 | "
    "AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 | "
    "REPACK = 1 | "
)
AVX2_LAPTOP = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | LLAMAFILE = 1 | "
    "OPENMP = 1 | REPACK = 1 | "
)


def test_amx_features_are_read_from_the_system_info() -> None:
    assert amx_features(AMX_XEON) == ("AMX_INT8",)
    assert amx_features(AVX2_LAPTOP) == ()
    assert amx_features("CPU : AMX_INT8 = 0 | AMX_BF16 = 1 | AMX_TILE = 1 |") == ("AMX_BF16", "AMX_TILE")
    assert amx_features("") == ()


def test_the_default_turns_repacking_off_where_amx_would_run() -> None:
    decided = repack_for(AMX_XEON, None)
    assert decided.on is False
    assert "AMX_INT8" in decided.reason
    assert "20824" in decided.reason
    assert decided.line().startswith("weight repacking off: ")


def test_the_default_keeps_repacking_elsewhere() -> None:
    decided = repack_for(AVX2_LAPTOP, None)
    assert decided.on is True
    assert decided.line().startswith("weight repacking on: ")


@pytest.mark.parametrize("info", [AMX_XEON, AVX2_LAPTOP])
def test_a_choice_by_hand_wins_over_the_cpu(info: str) -> None:
    assert repack_for(info, True).on is True
    assert repack_for(info, False).on is False
    assert "asked for" in repack_for(info, True).reason


def test_repack_must_be_a_bool_or_none() -> None:
    with pytest.raises(ValueError, match="repack is True, False or None"):
        EmbeddedLlama(repack="off")  # type: ignore[arg-type]


@pytest.mark.model
@pytest.mark.parametrize("repack", [None, False])
def test_a_real_load_decodes_with_the_decision(repack: bool | None, caplog: pytest.LogCaptureFixture) -> None:
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    with caplog.at_level(logging.INFO, logger="toolrouting.embedded"):
        backend = EmbeddedLlama(settings=Settings(max_tokens=4), repack=repack)
    try:
        assert backend.repack == repack_for(info, repack)
        # What llama.cpp was given, read back from the loaded Llama's own parameters.
        llama: Any = backend._model.llama
        assert llama.model_params.use_extra_bufts is backend.repack.on
        said = [r.getMessage() for r in caplog.records if r.name == "toolrouting.embedded"]
        assert [message for message in said if message.startswith("weight repacking")] == [
            backend.repack.line()
        ]
        # The decode ran: the prompt was evaluated and a reply came back (which tokens it holds,
        # none where the model ends at once, is the model's).
        completion = backend.complete([{"role": "user", "content": "Say hi."}])
        assert completion.usage is not None
        assert completion.usage.prompt_tokens >= 1
        assert completion.finish_reason in ("stop", "length")
    finally:
        backend.close()


@pytest.mark.model
def test_the_default_never_runs_amx_kernels() -> None:
    """The crash's path, closed: on a build that reports AMX the default loads without extra buffer
    types, and llama.cpp's own load log then names no AMX buffer (it does when they are on)."""
    code = (
        "import toolrouting._backends.embedded.backend as b, llama_cpp, sys\n"
        "import toolrouting._backends.embedded.llama_internals as li\n"
        "import toolrouting._backends.embedded.repack as r\n"
        "info = llama_cpp.llama_print_system_info().decode()\n"
        "d = r.repack_for(info, None)\n"
        "llama = li.load_llama(llama_cpp, use_extra_bufts=d.on, model_path=str(b.default_model_path()),"
        " n_ctx=512, verbose=True)\n"
        "print('AMX' if r.amx_features(info) else 'NOAMX', d.on, flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    kind, on = done.stdout.split()
    assert on == ("False" if kind == "AMX" else "True")
    if kind == "AMX":
        assert "AMX model buffer size" not in done.stderr


def test_a_release_without_the_field_is_a_load_error() -> None:
    class Params:
        pass

    class Bindings:
        @staticmethod
        def llama_model_default_params() -> Params:
            return Params()

    class LlamaCpp:
        llama_cpp = Bindings()

        @staticmethod
        def Llama(**arguments: Any) -> None:
            raise AssertionError("never loaded")

    with pytest.raises(ModelLoadError, match=r"no llama_model_params\.use_extra_bufts"):
        load_llama(LlamaCpp(), use_extra_bufts=False, model_path="x")
