"""The embedded backend's grammars, checked by llama.cpp's parser before any sampling.

llama-cpp-python hands a GBNF to llama.cpp only when it samples, and a grammar llama.cpp refuses
leaves the sampler chain with no grammar: sampling then crashed the process (SIGSEGV). So every
grammar, ours or llama-cpp-python's conversion of the schema, is parsed here first.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from ..._errors import GrammarError
from ..._grammar import route_grammar
from ..._json import walk
from ..._limits import LLAMA_CPP_MAX_GROUP_DEPTH
from ..._settings import GrammarChoice
from ..base import quoted_cause
from .llama_internals import llama_grammar_source

__all__ = ["check_gbnf", "compile_grammar", "gbnf_group_depth", "llama_grammar_source"]

_UNRECOGNIZED = "Unrecognized schema: "
_PREFLIGHT_HINT = 'preflight(schema, "llama.cpp") names the keywords at fault'
# File descriptor 2 is the process's: one grammar check at a time holds it back.
_STDERR_LOCK = threading.Lock()
# What of llama.cpp's stderr a check reads: its reason comes first, then the whole grammar.
_HELD_STDERR_BYTES = 4096


def compile_grammar(
    llama_cpp: Any, vocab: Any, schema_text: str, choice: GrammarChoice, bounded: bool, spaced: bool
) -> Any:
    """The ``LlamaGrammar`` of a schema's JSON text: ours or llama-cpp-python's, parsed by llama.cpp first."""
    if choice == "ours":
        gbnf = route_grammar(json.loads(schema_text), spaced=spaced, bounded=bounded).gbnf
        check_gbnf(llama_cpp, vocab, gbnf)  # ours never should be refused; the guard holds all the same
        return llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)
    try:
        grammar = llama_cpp.LlamaGrammar.from_json_schema(schema_text, verbose=False)
    except Exception as error:  # the converter asserts, or trips on a key: either way the schema is the cause
        raise _grammar_error(json.loads(schema_text), error) from error
    # llama-cpp-python hands the GBNF to llama.cpp only when it samples, and a grammar llama.cpp
    # refuses leaves the sampler chain with no grammar: sampling then crashed the process (SIGSEGV).
    # So the grammar is parsed here first, and refused before any sampling.
    check_gbnf(llama_cpp, vocab, *llama_grammar_source(grammar))
    return grammar


def check_gbnf(llama_cpp: Any, vocab: Any, gbnf: str, root: str = "root") -> None:
    """Raise :class:`GrammarError` unless llama.cpp (the module ``llama_cpp``) parses ``gbnf`` over ``vocab``.

    A grammar nested deeper than :data:`LLAMA_CPP_MAX_GROUP_DEPTH` is refused without parsing:
    llama.cpp's recursive parser would overflow the stack on it. The error quotes llama.cpp's
    reason, which its parser writes to the process's stderr (with the whole grammar): the
    check holds that back while it parses.
    """
    depth = gbnf_group_depth(gbnf)
    if depth > LLAMA_CPP_MAX_GROUP_DEPTH:
        raise GrammarError(
            f"the grammar for this JSON schema nests {depth} groups deep, past the "
            f"{LLAMA_CPP_MAX_GROUP_DEPTH} this backend gives llama.cpp, whose parser refuses such a grammar "
            "or overflows the stack on it "
            f"(a large maxItems or maxLength); {_PREFLIGHT_HINT}"
        )
    with _STDERR_LOCK, _held_stderr() as said:
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode(), root.encode())
    if not sampler:
        lines = [line for line in said if "error parsing grammar" in line]
        reason = lines[0].split("error parsing grammar: ", 1)[-1] if lines else "no reason given"
        raise GrammarError(
            f"llama.cpp refused the grammar written for this JSON schema ({quoted_cause(reason)}); "
            f"{_PREFLIGHT_HINT}"
        )
    llama_cpp.llama_sampler_free(sampler)


@contextlib.contextmanager
def _held_stderr() -> Iterator[list[str]]:
    """What native code writes to file descriptor 2 meanwhile, as lines, instead of printing it."""
    said: list[str] = []
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to hold back: the reason is lost, the check still holds
        yield said
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield said
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            said.extend(held.read(_HELD_STDERR_BYTES).decode("utf-8", "replace").splitlines())


def gbnf_group_depth(gbnf: str) -> int:
    """The deepest nesting of ``( ... )`` in a GBNF text, outside literals, classes and comments."""
    depth = deepest = 0
    quote = ""  # the closing character of the literal or class we are in, if any
    index = 0
    while index < len(gbnf):
        char = gbnf[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in '"[':
            quote = '"' if char == '"' else "]"
        elif char == "#":
            end = gbnf.find("\n", index)
            index = len(gbnf) if end < 0 else end
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
        index += 1
    return deepest


def _grammar_error(schema: Any, error: Exception) -> GrammarError:
    detail = str(error)
    if isinstance(error, AssertionError) and detail.startswith(_UNRECOGNIZED):
        refused = detail[len(_UNRECOGNIZED) :]
        pointer = _locate(schema, refused)
        where = f"at {pointer}" if pointer else "somewhere in it"
        return GrammarError(
            f"llama.cpp cannot turn the JSON schema into a grammar: the sub-schema {where} has no type it "
            f'knows ({quoted_cause(refused)}); give it a "type" (string, number, integer, boolean, array, '
            "object or null), a const, an enum or an anyOf",
            pointer,
        )
    reason = f"{type(error).__name__}: {quoted_cause(detail)}"
    return GrammarError(
        f"llama.cpp cannot turn the JSON schema into a grammar ({reason}); "
        "simplify the schema to the keywords its converter supports"
    )


def _locate(schema: Any, refused: str) -> str:
    """The JSON pointer of the first sub-schema the converter printed as ``refused``, or ``""``."""
    for pointer, node in walk(schema):
        if isinstance(node, dict) and str(node) == refused:
            return pointer or "/"
    return ""
