"""The embedded model's prompt states on disk: kept across sessions and restarts, in one folder.

An agent CLI sends the same system prompt and tools at the start of every session, and on a CPU
that prefix is most of what a first turn costs. :class:`DiskStates` keeps the prompt states the
memory cache keeps (:mod:`~toolrouting._backends.embedded.prompt_cache`) in files, so that a
model loaded again, in this process or another, restores the longest prefix a file holds and
evaluates only the rest.

**One file a state**, named ``<model>-<tokens>.state`` (digests of the model's identity and of
the prompt's tokens), laid out as::

    magic (8 bytes) | format version, header length, token count (3 x uint32) | data length (uint64)
    | header (JSON: the model's identity) | tokens (int32 each) | data | SHA-256 of all before (32 bytes)

The identity is what a state depends on: the GGUF's resolved path, size and modification time,
the llama-cpp-python version, the context's and model's parameters that shape the keys and values
(context size, batch sizes, cache types, flash attention, the CPU's extra buffer types) and the
block the prompt is evaluated in. A file of this model's name that fails any check (magic,
version, identity, lengths, checksum) is ignored and removed, never loaded; a file of another
identity (another model, or this one before its file changed) is left to the byte bound.

**Shared safely.** A file is written under a temporary name and moved into place
(``os.replace``), so a reader sees a whole file or none; files vanish under a reader only as a
missing file, which is skipped. The folder is bounded in bytes, least recently used out (a file's
modification time, set again when it is read): after each write, under an ``fcntl`` lock on
``.lock``, so two servers sharing the folder do not both evict. Writes happen on a thread of their
own, after the request that made the state is answered.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import queue
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["DiskStates", "state_identity"]

MAGIC = b"TRSTATE\0"
#: The layout's version: a file of another is removed, never read.
FORMAT_VERSION = 1
_FIXED = struct.Struct("<8sIIIQ")
_DIGEST = 32
_SUFFIX = ".state"
#: A temporary file older than this is a writer's that died; eviction removes it.
_STALE_SECONDS = 3600.0

_CONTEXT_FIELDS = ("n_ctx", "n_batch", "n_ubatch", "type_k", "type_v", "flash_attn_type", "swa_full")
_MODEL_FIELDS = ("use_extra_bufts", "n_gpu_layers")


def state_identity(llama_cpp: Any, llama: Any, path: Path, block: int) -> dict[str, Any]:
    """What a prompt state of ``llama`` depends on, beyond its tokens."""
    stat = path.stat()
    params = {
        name: int(getattr(params, name))
        for params, names in ((llama.context_params, _CONTEXT_FIELDS), (llama.model_params, _MODEL_FIELDS))
        for name in names
        if hasattr(params, name)
    }
    return {
        "model": str(path.resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "llama_cpp": str(getattr(llama_cpp, "__version__", "")),
        "block": block,
        **params,
    }


@dataclasses.dataclass(frozen=True)
class _Entry:
    tokens: Any
    """The state's prompt tokens (a numpy array)."""


class DiskStates:
    """Prompt states of one model identity in ``directory``, its files bounded by ``limit_bytes``."""

    def __init__(self, directory: Path, limit_bytes: int, identity: Mapping[str, Any]) -> None:
        import numpy

        self._numpy = numpy
        self.directory = directory
        self.limit_bytes = limit_bytes
        self._header = json.dumps(dict(identity), sort_keys=True).encode("utf-8")
        self._prefix = hashlib.sha256(self._header).hexdigest()[:16] + "-"
        self._index: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[Any, Any, int] | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self.counts = dict.fromkeys(("written", "read", "removed"), 0)
        directory.mkdir(parents=True, exist_ok=True)

    # --- reading ---

    def candidates(self, tokens: Any, block: int, longer_than: int) -> Iterator[tuple[int, str]]:
        """The files that share more than ``longer_than`` tokens of ``tokens``, in whole blocks,
        longest first: (tokens shared, file name)."""
        found = []
        for name, entry in self._refresh().items():
            shared = self._common(entry.tokens, tokens)
            shared -= shared % block
            if shared > longer_than:
                found.append((shared, name))
        yield from sorted(found, reverse=True)

    def load(self, name: str) -> tuple[Any, Any] | None:
        """A file's tokens and state data (a ctypes byte array), every check passed; ``None`` for a
        file gone or refused (and then removed)."""
        import ctypes

        path = self.directory / name
        try:
            with path.open("rb") as file:
                content = bytearray(os.fstat(file.fileno()).st_size)
                got = file.readinto(content)
        except FileNotFoundError:
            self._forget(name)
            return None
        except OSError:
            return None
        parsed = self._parse(content, got)
        if parsed is None:
            self._remove(name)
            return None
        tokens, offset, size = parsed
        with contextlib.suppress(OSError):
            os.utime(path)  # used: the most recent
        self.counts["read"] += 1
        return tokens, (ctypes.c_uint8 * size).from_buffer(content, offset)

    def _parse(self, content: bytearray, got: int) -> tuple[Any, int, int] | None:
        view = memoryview(content)
        if got != len(content) or len(content) < _FIXED.size + _DIGEST:
            return None
        if hashlib.sha256(view[:-_DIGEST]).digest() != bytes(view[-_DIGEST:]):
            return None
        head = self._head(bytes(view[: _FIXED.size + len(self._header)]))
        if head is None:
            return None
        count, size = head
        start = _FIXED.size + len(self._header)
        if start + 4 * count + size + _DIGEST != len(content):
            return None
        tokens = self._numpy.frombuffer(view[start : start + 4 * count], dtype="<i4").astype(self._numpy.intc)
        return tokens, start + 4 * count, size

    def _head(self, head: bytes) -> tuple[int, int] | None:
        """A header's token count and data length, where its magic, version and identity are ours."""
        if len(head) < _FIXED.size:
            return None
        magic, version, header_length, count, size = _FIXED.unpack_from(head)
        if (magic, version, header_length) != (MAGIC, FORMAT_VERSION, len(self._header)):
            return None
        if head[_FIXED.size :] != self._header:
            return None
        return count, size

    def _refresh(self) -> dict[str, _Entry]:
        """The index of this identity's files, as the folder holds them now."""
        try:
            names = {name for name in os.listdir(self.directory) if self._ours(name)}
        except OSError:
            names = set()
        with self._lock:
            for gone in set(self._index) - names:
                del self._index[gone]
            index = dict(self._index)
        for name in names - set(index):
            entry = self._read_entry(name)
            if entry is not None:
                index[name] = entry
                with self._lock:
                    self._index[name] = entry
        return index

    def _read_entry(self, name: str) -> _Entry | None:
        path = self.directory / name
        try:
            with path.open("rb") as file:
                head = file.read(_FIXED.size + len(self._header))
                parsed = self._head(head)
                if parsed is None:
                    self._remove(name)
                    return None
                count, size = parsed
                raw = file.read(4 * count)
                whole = os.fstat(file.fileno()).st_size
        except OSError:
            return None
        if len(raw) != 4 * count or whole != len(head) + 4 * count + size + _DIGEST:
            self._remove(name)
            return None
        return _Entry(tokens=self._numpy.frombuffer(raw, dtype="<i4").astype(self._numpy.intc))

    # --- writing ---

    def store(self, tokens: Any, data: Any, size: int) -> None:
        """Write a state on the writer thread: ``data`` (``size`` bytes) is not changed after."""
        if self._writer is None or not self._writer.is_alive():
            self._writer = threading.Thread(target=self._write_all, name="prompt-states", daemon=True)
            self._writer.start()
        self._queue.put((tokens, data, size))

    def close(self) -> None:
        """Write what is queued and stop the writer thread."""
        if self._writer is not None and self._writer.is_alive():
            self._queue.put(None)
            self._writer.join()
        self._writer = None

    def _write_all(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                with contextlib.suppress(OSError):
                    self.write(*item)
            finally:
                self._queue.task_done()

    def write(self, tokens: Any, data: Any, size: int) -> bool:
        """Write one state now (a state already held, or one a held file extends, is not written
        again), then keep the folder within its bound. Whether a file was written."""
        np = self._numpy
        raw = np.ascontiguousarray(tokens, dtype="<i4").tobytes()
        whole = _FIXED.size + len(self._header) + len(raw) + size + _DIGEST
        if whole > self.limit_bytes:
            return False
        name = self._prefix + hashlib.sha256(raw).hexdigest()[:32] + _SUFFIX
        index = self._refresh()
        for held, entry in index.items():
            if len(entry.tokens) >= len(tokens) and self._common(entry.tokens, tokens) == len(tokens):
                with contextlib.suppress(OSError):
                    os.utime(self.directory / held)
                return False
        head = _FIXED.pack(MAGIC, FORMAT_VERSION, len(self._header), len(tokens), size) + self._header
        digest = hashlib.sha256(head)
        digest.update(raw)
        digest.update(memoryview(data)[:size])
        temporary = self.directory / f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            with temporary.open("wb") as file:
                file.write(head)
                file.write(raw)
                file.write(memoryview(data)[:size])
                file.write(digest.digest())
            os.replace(temporary, self.directory / name)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise
        self.counts["written"] += 1
        with self._lock:
            self._index[name] = _Entry(tokens=np.array(tokens, dtype=np.intc))
        for held, entry in index.items():
            if len(entry.tokens) < len(tokens) and self._common(entry.tokens, tokens) == len(entry.tokens):
                self._remove(held, counted=False)  # the new one serves whatever it served
        self.evict(keep=name)
        return True

    def evict(self, keep: str = "") -> None:
        """Remove the least recently used files (of any identity) until the folder is within its
        bound, and temporary files a dead writer left."""
        with self._locked():
            files = []
            now = time.time()
            try:
                names = os.listdir(self.directory)
            except OSError:
                return
            for name in names:
                try:
                    stat = os.stat(self.directory / name)
                except OSError:
                    continue  # gone: another server removed it
                if name.endswith(".tmp") and now - stat.st_mtime > _STALE_SECONDS:
                    self._unlink(name)
                elif name.endswith(_SUFFIX):
                    files.append((name == keep, stat.st_mtime_ns, name, stat.st_size))
            total = sum(file[3] for file in files)
            for _, _, name, size in sorted(files):
                if total <= self.limit_bytes:
                    break
                if self._unlink(name):
                    self._forget(name)
                total -= size

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        descriptor = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    # --- the folder ---

    def _ours(self, name: str) -> bool:
        return name.startswith(self._prefix) and name.endswith(_SUFFIX)

    def _remove(self, name: str, *, counted: bool = True) -> None:
        if self._unlink(name) and counted:
            self.counts["removed"] += 1
        self._forget(name)

    def _unlink(self, name: str) -> bool:
        try:
            os.unlink(self.directory / name)
        except OSError:
            return False
        return True

    def _forget(self, name: str) -> None:
        with self._lock:
            self._index.pop(name, None)

    def _common(self, held: Any, tokens: Any) -> int:
        size = min(len(held), len(tokens))
        differ = self._numpy.flatnonzero(held[:size] != tokens[:size])
        return int(differ[0]) if differ.size else size
