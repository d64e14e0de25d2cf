"""The prompt states' folder on disk (:class:`DiskStates`), on its own: files written, refused and evicted.

The states here are bytes of our choosing in place of llama.cpp's (the folder stores and checks
bytes, whatever they hold); tests/backends/embedded/test_backends_embedded_prompt_cache_disk.py
drives the real model through it. A file that fails a check (torn, another format version, another
model under this model's name) is never loaded and is removed; a file of another model is left
alone; the folder stays within its bytes, least recently used out, with two processes writing it
at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy
import pytest
from support.processes import ROOT

from toolrouting._backends.embedded import disk_states
from toolrouting._backends.embedded.disk_states import DiskStates

BLOCK = 64
IDENTITY = {"model": "/models/a.gguf", "size": 1000, "mtime_ns": 1, "llama_cpp": "0.3.36", "n_ctx": 4096}
OTHER = IDENTITY | {"model": "/models/b.gguf"}


def _tokens(first: int, count: int = 2 * BLOCK) -> Any:
    return numpy.arange(first, first + count, dtype=numpy.intc)


def _data(seed: int, size: int = 10_000) -> bytearray:
    return bytearray(numpy.random.default_rng(seed).integers(0, 256, size, dtype=numpy.uint8).tobytes())


def _store(folder: Path, identity: dict[str, Any] = IDENTITY, limit: int = 1 << 20) -> DiskStates:
    return DiskStates(folder, limit, identity)


def _write(store: DiskStates, tokens: Any, data: bytearray) -> None:
    assert store.write(tokens, data, len(data))


def _files(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".state"))


def _found(store: DiskStates, tokens: Any) -> list[int]:
    return [shared for shared, _ in store.candidates(tokens, BLOCK, 0)]


def test_a_state_written_is_read_back_whole_by_a_new_store(tmp_path: Path) -> None:
    tokens, data = _tokens(5), _data(1)
    _write(_store(tmp_path), tokens, data)
    store = _store(tmp_path)  # another process's view: nothing in memory
    # A prompt that shares the first block and a half: the state serves its first block.
    prompt = numpy.concatenate([tokens[: BLOCK + 30], _tokens(9000, 100)])
    [(shared, name)] = list(store.candidates(prompt, BLOCK, 0))
    assert shared == BLOCK
    loaded = store.load(name)
    assert loaded is not None
    assert list(loaded[0]) == list(tokens)
    assert bytes(loaded[1]) == bytes(data)
    assert _found(store, prompt[:BLOCK]) == [BLOCK]
    assert list(store.candidates(prompt, BLOCK, BLOCK)) == []  # nothing longer than asked


@pytest.mark.parametrize("cut", [1, 32, 10_000, 10_100])
def test_a_torn_file_is_never_loaded_and_is_removed(tmp_path: Path, cut: int) -> None:
    _write(_store(tmp_path), _tokens(5), _data(1))
    [name] = _files(tmp_path)
    path = tmp_path / name
    path.write_bytes(path.read_bytes()[:-cut])
    store = _store(tmp_path)
    for _, found in store.candidates(_tokens(5), BLOCK, 0):
        assert store.load(found) is None
    assert _files(tmp_path) == []
    assert store.counts["removed"] == 1


def test_a_changed_byte_fails_the_checksum_and_the_file_is_removed(tmp_path: Path) -> None:
    _write(_store(tmp_path), _tokens(5), _data(1))
    [name] = _files(tmp_path)
    content = bytearray((tmp_path / name).read_bytes())
    content[-100] ^= 1  # in the state's data: the header still reads as ours
    (tmp_path / name).write_bytes(bytes(content))
    store = _store(tmp_path)
    assert _found(store, _tokens(5)) == [2 * BLOCK]
    assert store.load(name) is None
    assert _files(tmp_path) == []


def test_a_file_of_another_format_version_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(disk_states, "FORMAT_VERSION", disk_states.FORMAT_VERSION + 1)
    _write(_store(tmp_path), _tokens(5), _data(1))  # checksummed whole: only the version differs
    monkeypatch.undo()
    store = _store(tmp_path)
    assert _found(store, _tokens(5)) == []
    assert _files(tmp_path) == []
    assert store.counts["removed"] == 1


def test_another_models_file_is_not_loaded_and_left_to_the_bound(tmp_path: Path) -> None:
    _write(_store(tmp_path, OTHER), _tokens(5), _data(1))
    store = _store(tmp_path)
    assert _found(store, _tokens(5)) == []
    assert len(_files(tmp_path)) == 1  # another server's, sharing the folder


def test_another_models_file_under_this_models_name_is_removed(tmp_path: Path) -> None:
    _write(_store(tmp_path, OTHER), _tokens(5), _data(1))
    [theirs] = _files(tmp_path)
    _write(_store(tmp_path), _tokens(7000), _data(2))
    [ours] = [name for name in _files(tmp_path) if name != theirs]
    os.replace(tmp_path / theirs, tmp_path / (ours.split("-")[0] + "-" + theirs.split("-")[1]))
    store = _store(tmp_path)
    assert _found(store, _tokens(5)) == []
    assert _files(tmp_path) == [ours]
    assert store.counts["removed"] == 1


def test_the_folder_stays_within_its_bytes_least_recently_used_out(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    _write(_store(probe), _tokens(0), _data(0))
    [name] = _files(probe)
    size = (probe / name).stat().st_size
    folder = tmp_path / "states"
    store = _store(folder, limit=3 * size + size // 2)  # room for three
    for n in range(3):
        _write(store, _tokens(1000 * n), _data(n))
        time.sleep(0.02)  # modification times in order
    first = _store(folder)
    [(_, oldest)] = list(first.candidates(_tokens(0), BLOCK, 0))
    assert first.load(oldest) is not None  # read: now the most recently used
    time.sleep(0.02)
    _write(store, _tokens(3000), _data(3))
    kept = _store(folder)
    assert [bool(_found(kept, _tokens(1000 * n))) for n in range(4)] == [True, False, True, True]
    assert sum((folder / name).stat().st_size for name in _files(folder)) <= 3 * size + size // 2


def test_a_state_over_the_whole_bound_is_not_written(tmp_path: Path) -> None:
    store = _store(tmp_path, limit=5_000)
    assert not store.write(_tokens(0), _data(0), 10_000)
    assert _files(tmp_path) == []


def test_a_state_that_extends_another_takes_its_place(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _write(store, _tokens(0), _data(0))
    _write(store, _tokens(0, 4 * BLOCK), _data(1))
    assert len(_files(tmp_path)) == 1
    assert not store.write(_tokens(0, 3 * BLOCK), _data(2), 10_000)  # the longer one serves it
    assert _found(_store(tmp_path), _tokens(0, 3 * BLOCK)) == [3 * BLOCK]


def test_the_writer_thread_writes_after_the_request_and_close_waits_for_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    for n in range(3):
        store.store(_tokens(1000 * n), _data(n), 10_000)
    store.close()
    assert len(_files(tmp_path)) == 3
    assert store.counts["written"] == 3


_WRITER = """
import sys, numpy
from pathlib import Path
from toolrouting._backends.embedded.disk_states import DiskStates

folder, seed, limit = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
identity = {"model": "/models/a.gguf", "size": 1000, "mtime_ns": 1, "llama_cpp": "0.3.36", "n_ctx": 4096}
rng = numpy.random.default_rng(seed)
for n in range(40):
    store = DiskStates(folder, limit, identity)  # a fresh view now and then, as a restart has
    tokens = numpy.arange(1000 * (n % 7), 1000 * (n % 7) + 128, dtype=numpy.intc)
    data = bytearray(rng.integers(0, 256, 20_000 + n % 5, dtype=numpy.uint8).tobytes())
    store.write(tokens, data, len(data))
    for _, name in store.candidates(tokens, 64, 0):
        store.load(name)
"""


def test_two_processes_writing_one_folder_leave_whole_files_within_the_bound(tmp_path: Path) -> None:
    limit = 90_000  # four states of about 21 KB
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), str(seed), str(limit)], cwd=ROOT)
        for seed in (1, 2)
    ]
    assert [writer.wait(timeout=300) for writer in writers] == [0, 0]
    names = _files(tmp_path)
    assert names
    assert sum((tmp_path / name).stat().st_size for name in names) <= limit
    assert [name for name in os.listdir(tmp_path) if name.endswith(".tmp")] == []
    store = _store(tmp_path, limit=limit)
    for name in names:
        assert store.load(name) is not None, f"{name} does not pass its checks"
    assert store.counts["removed"] == 0
