"""The model's doubt about a BFCL run's recorded calls: the margin of ``none``, the entropy of each argument.

    .venv/bin/python -m benchmarks.quality.bfcl_margin RUN.json --model MODEL.gguf --out SIGNALS.json

For every case of a run (benchmarks/quality/bfcl.py) that made a call, the decision is asked again
in-process, as ``toolrouting serve`` asked it (the catalogue's instructions, then the question,
under the GGUF's own chat template), and scored rather than sampled:

- **The margin of ``none``.** After the reply's forced head ``{"tool":"``, each action's name
  and closing quote is scored as the sum of its tokens' log-probabilities; the margin is the
  chosen tool's score less ``none``'s. Calibrated (contextual calibration, Zhao et al., ICML
  2021): each score less the same action's score for a content-free question (``N/A``) with
  the same catalogue, computed once a catalogue.
- **The entropy of the arguments' first tokens** (as Arch's gateway reads it): for each argument
  grounding checks, the entropy of the model's next-token distribution where its value begins,
  the reply as written up to there.

What a backend with token probabilities would give at the decision (the embedded model;
llama-server's ``n_probs``; OpenAI's ``logprobs``), computed here apart from the decision so
that the signals can be scored offline against the same calls as grounding
(``benchmarks/quality/bfcl_grounding.py --signals``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common.llama import decoding_llama
from toolrouting import catalogue_prompt
from toolrouting._grounding import checked_arguments

#: The head every routed reply is forced to open with, compact as the embedded model writes it.
HEAD = '{"tool":"'
#: The content-free question of contextual calibration.
CONTENT_FREE = "N/A"


class Scorer:
    """A GGUF in-process: the log-probabilities of a reply's continuations after a conversation."""

    def __init__(self, model: Path, threads: int) -> None:
        import llama_cpp
        from llama_cpp import llama_chat_format

        self.llama_cpp = llama_cpp
        self.llama = decoding_llama(model_path=str(model), n_ctx=4096, n_threads=threads, verbose=False)
        eos, bos = self.llama.token_eos(), self.llama.token_bos()

        def text(token: int) -> str:
            return self.llama.detokenize([token], special=True).decode("utf-8") if token != -1 else ""

        self.format = llama_chat_format.Jinja2ChatFormatter(
            template=self.llama.metadata["tokenizer.chat_template"],
            eos_token=text(eos),
            bos_token=text(bos),
            stop_token_ids=[eos],
        )

    def prompt(self, messages: Sequence[dict[str, str]]) -> list[int]:
        formatted = self.format(messages=list(messages))  # type: ignore[arg-type]
        return list(
            self.llama.tokenize(
                formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
            )
        )

    def tokens(self, text: str) -> list[int]:
        return list(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def logprobs(self, tokens: list[int]) -> Any:
        """The log-probabilities of the token after ``tokens``, reusing what the context holds."""
        held = self.llama.input_ids[: self.llama.n_tokens].tolist()
        common = 0
        for mine, theirs in zip(held, tokens[:-1], strict=False):
            if mine != theirs:
                break
            common += 1
        self.llama.n_tokens = common
        self.llama.eval(tokens[common:])
        n_vocab = self.llama.n_vocab()
        pointer = self.llama_cpp.llama_get_logits_ith(self.llama.ctx, -1)
        logits = np.ctypeslib.as_array(pointer, shape=(n_vocab,)).astype(np.float64)
        shifted = logits - logits.max()
        return shifted - math.log(float(np.exp(shifted).sum()))

    def continuation(self, before: list[int], text: str) -> float:
        """The log-probability of ``text``'s tokens after ``before``."""
        total, written = 0.0, self.tokens(text)
        for index, token in enumerate(written):
            total += float(self.logprobs(before + written[:index])[token])
        return total

    def entropy(self, before: list[int]) -> float:
        """The entropy, in nats, of the next token after ``before``."""
        logprobs = self.logprobs(before)
        return float(-(np.exp(logprobs) * logprobs).sum())


def _messages(tools: list[dict[str, Any]], question: list[dict[str, str]]) -> list[dict[str, str]]:
    """What serve sends for a request of these tools: the instructions, then the conversation."""
    if any(message["role"] in ("system", "developer") for message in question):
        raise SystemExit("a case with a system message: merge it as serve does before scoring it")
    return [{"role": "system", "content": catalogue_prompt(tools)}, *question]


def names_scored(scorer: Scorer, prompt: list[int], names: Sequence[str]) -> dict[str, float]:
    head = prompt + scorer.tokens(HEAD)
    return {name: scorer.continuation(head, name + '"') for name in [*names, "none"]}


def signals(
    scorer: Scorer, record: dict[str, Any], calibration: dict[str, dict[str, float]]
) -> dict[str, Any]:
    tools = record["tools"]
    names = [tool["function"]["name"] for tool in tools]
    prompt = scorer.prompt(_messages(tools, record["question"]))
    scores = names_scored(scorer, prompt, names)
    key = json.dumps(tools, sort_keys=True)
    if key not in calibration:
        free = scorer.prompt(_messages(tools, [{"role": "user", "content": CONTENT_FREE}]))
        calibration[key] = names_scored(scorer, free, names)
    call = record["calls"][0]
    reply = f'{HEAD}{call["name"]}","arguments":{call["arguments"]}}}'
    parameters: dict[str, Any] = next(
        (t["function"].get("parameters", {}) for t in tools if t["function"]["name"] == call["name"]), {}
    )
    entropies = {}
    for argument in checked_arguments(parameters):
        at = reply.find(json.dumps(argument) + ":", len(HEAD) + len(call["name"]))
        if at != -1:
            start = at + len(json.dumps(argument)) + 1
            entropies[argument] = scorer.entropy(prompt + scorer.tokens(reply[:start]))
    return {
        "chosen": call["name"],
        "scores": scores,
        "content_free": calibration[key],
        "entropies": entropies,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("run", type=Path, help="records of benchmarks/quality/bfcl.py")
    parser.add_argument("--model", required=True, type=Path, help="the GGUF the run served")
    parser.add_argument("--out", required=True, type=Path, help="the signals, JSON, by case id")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--way", help="the way whose calls are scored (default: the run's first)")
    args = parser.parse_args(argv)
    run = json.loads(args.run.read_text())
    way = args.way or next(iter(run["settings"].get("ways", {"serve": None})))
    # A case of one question each (a multi-turn case's decisions follow results, not the question).
    records = [
        r for r in run["records"] if r.get("calls") and r.get("way", "serve") == way and "turns" not in r
    ]
    found: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    scorer = Scorer(args.model, args.threads)
    calibration: dict[str, dict[str, float]] = {}
    for record in records:
        if record["id"] in found:
            continue
        started = time.perf_counter()
        found[record["id"]] = signals(scorer, record, calibration)
        mine = found[record["id"]]
        margin = mine["scores"][mine["chosen"]] - mine["scores"]["none"]
        print(f"{record['id']:18} margin {margin:7.2f}  {time.perf_counter() - started:5.1f} s", flush=True)
        args.out.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
