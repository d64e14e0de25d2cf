"""Static word embeddings: a text's vector is the mean of its tokens' rows in one table.

The table and its tokenizer are WordLlama's ``l2_supercat_256`` (256 numbers a token, Llama 2's
32,000 tokens, 16 MB), which the ``wordllama`` wheel carries. They are read here from the
installed package's folder, by path: the package itself is never imported (its import sets the
root logger's level, and its loader looks for the tokenizer under another folder's name and then
asks the network for it), so nothing here touches the network. What a text costs is a tokenizer
pass and a mean of rows, well under a millisecond for a question. Measured against a sentence
transformer (all-MiniLM-L6-v2), multilingual-e5-small and the backend models' own embeddings
(docs/benchmarks/catalogues.md, "Large catalogues: a ranker that reads meanings"), this table found more of
the decision cases' tools than any of them, at a thousandth of their time a text.

numpy and ``tokenizers`` come with the ``semantic`` extra; they are imported when a table is
loaded, so the package imports without them.
"""

from __future__ import annotations

import importlib.util
import json
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "EMBEDDING_TEXT_CHARS",
    "SEMANTIC_EXTRA",
    "StaticEmbeddings",
    "semantic_missing",
    "static_embeddings",
]

#: What ``pip`` installs for the semantic ranker.
SEMANTIC_EXTRA = "toolrouting[semantic]"
#: The distributions the table needs, by the module each is imported as.
_NEEDED = {"numpy": "numpy", "tokenizers": "tokenizers", "wordllama": "wordllama"}
#: The files of the wordllama wheel read here, and the table's shape and type.
_WEIGHTS = Path("weights", "l2_supercat_256.safetensors")
_TOKENIZER = Path("tokenizers", "l2_supercat_tokenizer_config.json")
_TENSOR = "embedding.weight"
_SHAPE = (32000, 256)
#: Characters of a text that are embedded: the first ones. A question is a few hundred; a
#: conversation with its tool results may be megabytes, and the mean of its first thousand or
#: so tokens says what it is about.
EMBEDDING_TEXT_CHARS = 4000

_loaded: StaticEmbeddings | None = None
_loading = threading.Lock()


def semantic_missing() -> str | None:
    """What is missing for the semantic ranker (a sentence naming the extra), or ``None``."""
    missing = [name for name, module in _NEEDED.items() if importlib.util.find_spec(module) is None]
    if not missing:
        return None
    return f"{' and '.join(missing)} not installed: pip install '{SEMANTIC_EXTRA}'"


class StaticEmbeddings:
    """A token table and its tokenizer: :meth:`embed` turns texts into unit vectors."""

    def __init__(self, table: npt.NDArray[np.float16], tokenizer_path: Path) -> None:
        from tokenizers import Tokenizer

        self.table = table
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))

    @property
    def dimensions(self) -> int:
        return int(self.table.shape[1])

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit vector a text, the mean of its tokens' rows (a zero vector for a text of no
        token), each text cut to its first :data:`EMBEDDING_TEXT_CHARS` characters."""
        import numpy as np

        vectors = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        encoded = self.tokenizer.encode_batch(
            [text[:EMBEDDING_TEXT_CHARS] for text in texts], add_special_tokens=False
        )
        for row, encoding in enumerate(encoded):
            if encoding.ids:
                vectors[row] = self.table[encoding.ids].astype(np.float32).mean(axis=0)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.asarray(vectors / np.maximum(norms, np.float32(1e-12)), dtype=np.float32)


def static_embeddings() -> StaticEmbeddings:
    """The table of the installed wordllama wheel, loaded once a process (a fraction of a second).

    Raises :class:`ImportError` naming the ``semantic`` extra where it is not installed, and
    :class:`ValueError` naming the file where the wheel's files are not what they should be.
    """
    global _loaded
    missing = semantic_missing()
    if missing is not None:
        raise ImportError(f"the semantic ranker needs {missing}")
    with _loading:
        if _loaded is None:
            spec = importlib.util.find_spec("wordllama")
            folders = list(spec.submodule_search_locations or []) if spec is not None else []
            if not folders:
                raise ImportError(f"wordllama is not an installed package: pip install '{SEMANTIC_EXTRA}'")
            folder = Path(folders[0])
            _loaded = StaticEmbeddings(_read_table(folder / _WEIGHTS), folder / _TOKENIZER)
        return _loaded


def _read_table(path: Path) -> npt.NDArray[np.float16]:
    """The one float16 tensor of a safetensors file: an 8-byte header length, a JSON header
    naming each tensor's type, shape and byte range, then the bytes."""
    import numpy as np

    try:
        data = path.read_bytes()
    except OSError as error:
        raise ValueError(f"the semantic ranker's table cannot be read: {error}") from None
    try:
        (length,) = struct.unpack("<Q", data[:8])
        header: Any = json.loads(data[8 : 8 + length])
        entry = header[_TENSOR]
        start, end = entry["data_offsets"]
        if (
            entry["dtype"] != "F16"
            or tuple(entry["shape"]) != _SHAPE
            or end - start != 2 * _SHAPE[0] * _SHAPE[1]
        ):
            raise ValueError(f"{_TENSOR} is {entry['dtype']} {entry['shape']}")
        body = data[8 + length + start : 8 + length + end]
        return np.frombuffer(body, dtype="<f2").reshape(_SHAPE)
    except (struct.error, ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"{path} is not the table the semantic ranker reads ({_TENSOR}, float16, {_SHAPE}): {error}"
        ) from None
