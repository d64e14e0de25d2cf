"""A GGUF file's metadata, read before llama.cpp loads it: what the context's size is chosen from.

llama-cpp-python makes the context with the model (``Llama(n_ctx=...)``), so the model's trained
context and the shape of its attention must be known before it loads. A GGUF file opens with
its metadata: a header, then key-value pairs (GGUF versions 2 and 3, little- or big-endian).
:func:`gguf_metadata` reads them from the mapped file without loading a weight: each scalar and
string by its key, each array of numbers as a tuple (a per-layer count, for one), and each
array of strings (the vocabulary) stepped over.
"""

from __future__ import annotations

import mmap
import os
import struct
from typing import Any

__all__ = ["GGUFError", "gguf_metadata"]

_MAGIC = b"GGUF"
_STRING = 8
_ARRAY = 9
#: Scalar value types by their GGUF number: struct's format of one.
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


class GGUFError(ValueError):
    """A file that is not a GGUF file this reader can read, and why."""


class _Reader:
    def __init__(self, data: Any, order: str) -> None:
        self.data = data
        self.order = order
        self.at = 0

    def take(self, size: int) -> Any:
        end = self.at + size
        if size < 0 or end > len(self.data):
            raise GGUFError(f"the metadata runs past the end of the file (byte {self.at})")
        piece = self.data[self.at : end]
        self.at = end
        return piece

    def number(self, kind: str) -> Any:
        size = struct.calcsize(kind)
        return struct.unpack(self.order + kind, self.take(size))[0]

    def string(self) -> str:
        return bytes(self.take(self.number("Q"))).decode("utf-8", errors="replace")

    def value(self, kind: int) -> Any:
        if kind in _SCALARS:
            return self.number(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item, count = self.number("I"), self.number("Q")
            if item == _STRING:
                for _ in range(count):
                    self.take(self.number("Q"))
                return None
            if item not in _SCALARS:
                raise GGUFError(f"an array of value type {item}, which GGUF does not define")
            fmt = _SCALARS[item]
            return struct.unpack(f"{self.order}{count}{fmt}", self.take(count * struct.calcsize(fmt)))
        raise GGUFError(f"a value of type {kind}, which GGUF does not define")


def gguf_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The metadata of the GGUF file at ``path``: each key's value, ``None`` for an array of strings.

    Raises :class:`GGUFError` for a file that is not GGUF, or whose metadata is cut short, and
    :class:`OSError` for one that cannot be read.
    """
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size < 24:
            raise GGUFError(f"the file is {size} bytes, too short for a GGUF header")
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped, memoryview(mapped) as data:
            return _read(data)


def _read(data: memoryview) -> dict[str, Any]:
    if bytes(data[:4]) != _MAGIC:
        raise GGUFError(f"it starts with {bytes(data[:4])!r}, not GGUF's magic {_MAGIC!r}")
    order = "<"
    version = struct.unpack("<I", data[4:8])[0]
    if version > 0xFFFF:  # written big-endian
        order, version = ">", struct.unpack(">I", data[4:8])[0]
    if version not in (2, 3):
        raise GGUFError(f"GGUF version {version}; this reader reads versions 2 and 3")
    reader = _Reader(data, order)
    reader.at = 8
    reader.number("Q")  # the tensors' count
    pairs = reader.number("Q")
    metadata: dict[str, Any] = {}
    for _ in range(pairs):
        key = reader.string()
        metadata[key] = reader.value(reader.number("I"))
    return metadata
