"""Whether llama.cpp repacks the model's weights into its extra CPU buffer types, decided once per load.

llama.cpp can copy a model's weights into "extra" buffer types laid out for one instruction set:
``CPU_REPACK`` for AVX2 and AVX-512 (sound, and faster where the quantisation has a repacked
kernel) and, in a build for a CPU with Intel AMX (Sapphire Rapids and later Xeons), ``AMX``. The
AMX matrix multiply crashes the process on the first decode (a segmentation fault in
``ggml_backend_amx_mul_mat``, ggml-org/llama.cpp#20824, closed without a fix), and llama.cpp offers
no switch for one extra buffer type alone: ``use_extra_bufts`` turns them all on or off
(``llama-server --no-repack`` is the same switch).

So the default, ``repack=None``, turns repacking off where the build reports AMX
(``llama_print_system_info``: a native build on such a CPU has it) and keeps it on elsewhere;
``repack=True`` or ``False`` decides it by hand (``toolrouting run --repack`` / ``--no-repack``).
The decision and its reason are one :class:`Repack`, which the backend logs and shows.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

__all__ = ["Repack", "amx_features", "decided_repack", "repack_for"]

#: The upstream report of the crash, named in the reason a decision gives.
AMX_CRASH = "ggml-org/llama.cpp#20824"

# "AMX_INT8 = 1" in llama_print_system_info's "CPU : SSE3 = 1 | ... |" list.
_FEATURE = re.compile(r"\b(AMX[A-Z0-9_]*)\s*=\s*1\b")


@dataclasses.dataclass(frozen=True)
class Repack:
    """Whether the weights are repacked into llama.cpp's extra buffer types, and why."""

    on: bool
    """``True``: llama.cpp's extra buffer types are used (``use_extra_bufts``)."""
    reason: str
    """Why, in a sentence a log line can carry."""

    def line(self) -> str:
        """The one log line of the decision."""
        state = "on" if self.on else "off"
        return f"weight repacking {state}: {self.reason}"


def amx_features(system_info: str) -> tuple[str, ...]:
    """The AMX features llama.cpp's ``llama_print_system_info`` reports present, in its order."""
    return tuple(dict.fromkeys(_FEATURE.findall(system_info)))


def repack_for(system_info: str, requested: bool | None) -> Repack:
    """The decision for a build whose ``llama_print_system_info`` is ``system_info``.

    ``requested`` is the caller's choice (``None``: decide from the CPU features).
    """
    amx = amx_features(system_info)
    if requested is True:
        if amx:
            return Repack(
                True, f"asked for, on a build with {', '.join(amx)}, whose kernels can crash ({AMX_CRASH})"
            )
        return Repack(True, "asked for")
    if requested is False:
        return Repack(False, "asked for (the weights stay as the GGUF holds them)")
    if amx:
        return Repack(
            False,
            f"this build of llama.cpp uses {', '.join(amx)}, whose matrix multiply crashes on the first "
            f"decode ({AMX_CRASH}); --repack turns it on",
        )
    return Repack(True, "no AMX in this build of llama.cpp, so the AVX repacked kernels are used")


def decided_repack(llama_cpp: Any, requested: bool | None) -> Repack:
    """:func:`repack_for` the features the loaded ``llama_cpp`` module's build reports
    (``llama_print_system_info``): the one decision every load of a model makes."""
    info = llama_cpp.llama_print_system_info()
    text = info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)
    return repack_for(text, requested)
