"""The ranker that indexes each catalogue once: BM25, and on request (``semantic=True``, the
``semantic`` extra) the meaning of the words beside it.

A catalogue's index (:class:`CatalogueIndex`) is built the first time the catalogue is ranked
and kept, keyed on its bytes (the declarations pickled, hashed), so a loop's rounds and a server's
requests over one catalogue check it, read it and embed it once, and then pay only the query:
a catalogue that changes in any byte is a new key, and so a new index. The index holds the
checked catalogue, its FTS5 table (``bm25``) and, semantic, a unit vector a tool from the
static embeddings (``embeddings``) of its name's words and its description's first sentence.

A tool's hybrid score is the cosine of its vector and the query's, plus
:data:`HYBRID_BM25_WEIGHT` times its BM25 score over the catalogue's best: the words a question
shares with a tool still count, and a tool that shares none is found by what the words mean.
The weight was fitted on half the decision cases and the recall reported on the other half
(docs/benchmarks/catalogues.md, "Large catalogues: a ranker that reads meanings").

The default ranker is BM25 alone, whatever is installed: the hybrid keeps more of a case's tools,
but the look-alikes it adds are what the model then picks, and among BM25's eight the model chose
the right tool more often (docs/benchmarks/catalogues.md, "The default ranker, chosen by
decisions").
"""

from __future__ import annotations

import gc
import hashlib
import pickle
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._catalogue_checks import CheckedTool, checked_catalogue
from .._limits import MAX_SCHEMA_NESTING
from .bm25 import Bm25Table
from .embeddings import StaticEmbeddings, semantic_missing, static_embeddings
from .terms import terms

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "HYBRID_BM25_WEIGHT",
    "INDEXED_CATALOGUES",
    "INDEXED_VALUES",
    "CatalogueIndex",
    "IndexedRanker",
    "catalogue_key",
    "default_ranker",
    "embedded_text",
]

#: The share of a tool's BM25 score, over the best of its catalogue, added to its cosine.
#: Fitted on the even decision cases (by id) to the most expected tools among the 8 kept at
#: 20, 50, 100 and 300 distractors, from 0 to 1.5: 0.2.
HYBRID_BM25_WEIGHT = 0.2
#: Catalogues whose index a ranker keeps, the least recently ranked dropped first: a server's
#: clients send a few catalogues, and an index of a thousand tools is about 2 MB.
INDEXED_CATALOGUES = 8
#: JSON values a catalogue may hold and still be kept indexed: a thousand tools of the MCP
#: servers' hold about 30,000. A larger one is checked and ranked on every call, unkept.
INDEXED_VALUES = 1_000_000
#: Levels of a catalogue above its tools' parameters: the list, a tool, its function.
_DECLARATION_LEVELS = 3
_PLAIN_TYPES = frozenset({dict, list, str, int, float, bool, type(None)})
#: Scores are rounded to this many decimals, so that two tools whose scores differ only in the
#: last bits of a float (which a platform's vector arithmetic may round either way) tie, and
#: the tie goes to the earlier tool, the same on every platform.
_SCORE_DECIMALS = 6


def catalogue_key(tools: Sequence[Mapping[str, Any]]) -> str | None:
    """A digest of the declarations' bytes, or ``None`` for a catalogue that is not lists,
    dicts and scalars alone within :data:`INDEXED_VALUES` values (the catalogue checks say what
    is wrong with it, or it is ranked unkept).

    The bytes are the catalogue pickled without its memo: each value with its type (``1``,
    ``1.0`` and ``true`` differ) and written out wherever it stands, so that equal catalogues
    are equal bytes however their objects are shared; at a thousand tools the count and the
    bytes take about 3 ms, where JSON text took 6 ms for the bytes alone.
    """
    if not _plain_and_bounded(tools):
        return None
    digest = _Digest()
    pickler = pickle.Pickler(digest, protocol=5)
    pickler.fast = True  # no memo: a shared object is written again wherever it stands
    try:
        pickler.dump(tools)
    except (pickle.PicklingError, TypeError, ValueError, RecursionError):
        return None
    return digest.hash.hexdigest()


class _Digest:
    """The file a key's pickler writes to: it hashes what is written."""

    def __init__(self) -> None:
        self.hash = hashlib.blake2b(digest_size=16)

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        return len(data)


def _plain_and_bounded(tools: object) -> bool:
    """Whether ``tools`` is lists, dicts and scalars alone, within the values and the levels a
    key is made of. Counted a level at a time before anything writes it: a sub-dict shared at
    every level is small in memory and doubles as bytes with each."""
    level = [tools]
    values = 0
    for _ in range(MAX_SCHEMA_NESTING + _DECLARATION_LEVELS):
        if not level:
            return True
        below = gc.get_referents(*level)  # in C: a dict's values, a list's items
        values += len(below)
        if values > INDEXED_VALUES or not set(map(type, below)) <= _PLAIN_TYPES:
            return False
        level = [item for item in below if type(item) in (dict, list)]
    return not level


def embedded_text(tool: CheckedTool) -> str:
    """What a tool's vector is made of: its name's words and its description's first sentence.
    A whole description (the MCP servers' run to paragraphs of usage notes) found fewer tools."""
    first = (tool.description or "").split(". ", 1)[0].split("\n", 1)[0]
    return f"{' '.join(terms(tool.name))}: {first}"


class CatalogueIndex:
    """One catalogue checked, its BM25 table, and (with ``embeddings``) its tools' vectors."""

    def __init__(self, tools: Sequence[Mapping[str, Any]], embeddings: StaticEmbeddings | None) -> None:
        self.tools = checked_catalogue(tools)
        self.embeddings = embeddings
        self.bm25 = Bm25Table(self.tools)
        self.vectors: npt.NDArray[np.float32] | None = None
        if embeddings is not None:
            self.vectors = embeddings.embed([embedded_text(tool) for tool in self.tools])

    def scores(self, query: str) -> list[float]:
        """Each tool's score against ``query``, in catalogue order: hybrid with vectors, else BM25."""
        bm25 = self.bm25.scores(query)
        if self.vectors is None or self.embeddings is None or not self.tools:
            return bm25
        import numpy as np

        cosines = self.vectors @ self.embeddings.embed([query])[0]
        best = max(bm25)
        lexical = np.asarray(bm25, dtype=np.float64) / best if best > 0 else 0.0
        hybrid = cosines.astype(np.float64) + HYBRID_BM25_WEIGHT * lexical
        return [round(float(score), _SCORE_DECIMALS) for score in hybrid]


class IndexedRanker:
    """A :class:`Ranker` that indexes each catalogue once, keyed on its bytes, and ranks each
    query against the index.

    ``semantic``: ``False`` (the default, as :func:`default_ranker`'s) ranks by BM25 alone,
    ``True`` by the hybrid score (an :class:`ImportError` naming the ``semantic`` extra where it
    is not installed), ``None`` by the hybrid score where the extra is installed and by BM25
    where it is not; :attr:`semantic` says which, and :attr:`fallback` why not. The scores are
    the same as an unindexed ranking's: BM25 alone scores as :func:`bm25_scores` does. It may be
    called from several threads at once.
    """

    def __init__(self, *, semantic: bool | None = False, catalogues: int = INDEXED_CATALOGUES) -> None:
        if semantic is not None and not isinstance(semantic, bool):
            raise TypeError(f"semantic is True, False or None, not {type(semantic).__name__}")
        if isinstance(catalogues, bool) or not isinstance(catalogues, int) or catalogues < 1:
            raise ValueError(
                f"catalogues is the number of indexes kept, an int of at least 1, not {catalogues!r}"
            )
        self.fallback = semantic_missing() if semantic is None else None
        self.embeddings = (
            static_embeddings() if semantic or (semantic is None and not self.fallback) else None
        )
        self.catalogues = catalogues
        self._indexes: OrderedDict[str, CatalogueIndex] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def semantic(self) -> bool:
        """Whether this ranker reads meanings (the hybrid score) or words alone (BM25)."""
        return self.embeddings is not None

    def __call__(self, tools: Sequence[Mapping[str, Any]], query: str, /) -> list[float]:
        return self.index(tools).scores(query)

    def index(self, tools: Sequence[Mapping[str, Any]]) -> CatalogueIndex:
        """The catalogue's index, built (and the catalogue checked) the first time its bytes are seen."""
        key = catalogue_key(tools)
        if key is not None:
            with self._lock:
                found = self._indexes.get(key)
                if found is not None:
                    self._indexes.move_to_end(key)
                    return found
        built = CatalogueIndex(tools, self.embeddings)
        if key is None:
            return built
        with self._lock:
            self._indexes[key] = built
            self._indexes.move_to_end(key)
            while len(self._indexes) > self.catalogues:
                # Not closed here: another thread may be asking it; it closes when collected.
                self._indexes.popitem(last=False)
        return built

    def __repr__(self) -> str:
        way = "hybrid" if self.semantic else "BM25"
        return f"IndexedRanker({way}, {len(self._indexes)} of {self.catalogues} catalogues indexed)"


_default: IndexedRanker | None = None
_default_lock = threading.Lock()


def default_ranker() -> IndexedRanker:
    """The ranker :func:`shortlist` uses when given none, one a process, so every caller shares
    its indexes: BM25 alone, whatever extras are installed, because among its K the model chose
    the right tool more often than among the hybrid's (docs/benchmarks/catalogues.md, "The
    default ranker, chosen by decisions"); ``IndexedRanker(semantic=True)`` is the hybrid."""
    global _default
    with _default_lock:
        if _default is None:
            _default = IndexedRanker(semantic=False)
        return _default
