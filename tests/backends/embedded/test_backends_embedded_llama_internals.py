"""The one place the embedded backend reads llama-cpp-python's private fields (``llama_internals``).

llama-cpp-python hands a grammar to llama.cpp only when it samples, and offers no public way
to read the GBNF it will hand over; the check before sampling (``check_gbnf``) needs that very
text, so ``llama_grammar_source`` reads ``_grammar`` and ``_root``. Forced-token decoding writes
the chat template's tokens as llama-cpp-python's own chat handler does, through
``Llama._model.token_get_text`` (``token_text``). These tests run the installed
llama-cpp-python: when an upgrade renames, reshapes or stops using those fields, they fail
here, by name, instead of the check going on with a text llama.cpp never sees.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from support.paths import ROOT

from toolrouting import route_schema
from toolrouting._backends.embedded.grammar_check import check_gbnf, compile_grammar
from toolrouting._backends.embedded.llama_internals import llama_grammar_source, token_text
from toolrouting._errors import ModelLoadError
from toolrouting._grammar import route_grammar

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {
                "type": "object",
                "properties": {"word": {"type": "string", "maxLength": 12}},
                "required": ["word"],
            },
        },
    }
]

PACKAGE = ROOT / "toolrouting"


@pytest.fixture(scope="module")
def llama() -> Iterator[Any]:
    """The default model's vocabulary, loaded alone (no weights): what a grammar is parsed over."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from toolrouting._backends.embedded.backend import default_model_path

    model = llama_cpp.Llama(model_path=str(default_model_path()), vocab_only=True, verbose=False)
    yield model
    model.close()


def _handed_over(monkeypatch: pytest.MonkeyPatch, llama: Any, grammar: Any) -> list[tuple[bytes, bytes]]:
    """What llama-cpp-python's own sampler hands llama.cpp for ``grammar`` (GBNF and root, as bytes).

    The call passes through to llama.cpp; it is only recorded on the way.
    """
    import llama_cpp._internals as internals
    import llama_cpp.llama_cpp as bindings  # the module _internals calls llama.cpp through

    seen: list[tuple[bytes, bytes]] = []
    real = bindings.llama_sampler_init_grammar

    def recorded(vocab: Any, text: bytes, root: bytes) -> Any:
        seen.append((text, root))
        return real(vocab, text, root)

    monkeypatch.setattr(bindings, "llama_sampler_init_grammar", recorded)
    sampler = internals.LlamaSampler()
    try:
        sampler.add_grammar(llama._model, grammar)
    finally:
        sampler.close()
    return seen


def test_what_we_read_is_what_llama_cpp_python_hands_to_llama_cpp(
    llama: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llama_cpp.llama_grammar import LlamaGrammar

    gbnf = route_grammar(route_schema(TOOLS)).gbnf
    ours = LlamaGrammar.from_string(gbnf, verbose=False)
    assert llama_grammar_source(ours) == (gbnf, "root")
    converted = LlamaGrammar.from_json_schema(json.dumps(route_schema(TOOLS)), verbose=False)
    for grammar in (ours, converted):
        text, root = llama_grammar_source(grammar)
        assert _handed_over(monkeypatch, llama, grammar) == [(text.encode(), root.encode())]


def test_the_embedded_backends_compile_reads_them_and_llama_cpp_parses_the_text(llama: Any) -> None:
    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(llama.model)
    schema = json.dumps(route_schema(TOOLS))
    for choice in ("ours", "server"):
        grammar = compile_grammar(llama_cpp, vocab, schema, choice, False, False)
        check_gbnf(llama_cpp, vocab, *llama_grammar_source(grammar))


class _Moved:
    """A fake on purpose: a ``LlamaGrammar`` as a release that moved its fields would make it."""

    def __init__(self, **fields: object) -> None:
        self.__dict__.update(fields)


@pytest.mark.parametrize(
    "fields",
    [
        {"grammar": 'root ::= "x"', "root": "root"},  # renamed
        {"_grammar": b'root ::= "x"', "_root": "root"},  # reshaped to bytes
        {"_grammar": 'root ::= "x"'},  # the root rule gone
        {"_grammar": 'root ::= "x"', "_root": ""},
    ],
    ids=["renamed", "bytes", "no root", "empty root"],
)
def test_a_release_that_moved_the_fields_is_a_named_error(fields: dict[str, object]) -> None:
    with pytest.raises(ModelLoadError) as moved:
        llama_grammar_source(_Moved(**fields))
    message = str(moved.value)
    assert "_grammar and _root" in message
    assert "pip install 'toolrouting[embedded]'" in message


def test_the_installed_release_keeps_llama_model_token_get_text(llama: Any) -> None:
    # A release that moved it fails here with the ModelLoadError that names it.
    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(llama.model)
    for token in (llama.token_eos(), llama.token_bos()):
        assert token_text(llama, token) == llama_cpp.llama_vocab_get_text(vocab, token).decode("utf-8")


@pytest.mark.parametrize(
    "moved",
    [_Moved(), _Moved(_model=_Moved()), _Moved(_model=_Moved(token_get_text=lambda token: b"<s>"))],
    ids=["no _model", "no token_get_text", "bytes"],
)
def test_a_release_that_moved_the_model_is_a_named_error(moved: object) -> None:
    with pytest.raises(ModelLoadError) as caught:
        token_text(moved, 1)
    message = str(caught.value)
    assert "no longer has Llama._model.token_get_text" in message
    assert "pip install 'toolrouting[embedded]'" in message
    assert "forced_tokens=False" in message


def test_no_other_module_reads_the_private_fields() -> None:
    # A read as an attribute (``grammar._root``, ``llama._model``; the backend's own
    # ``self._model`` is a field of ours) or by name (``getattr(grammar, "_root")``).
    fields = "_grammar|_root|_model|_ctx"
    private = re.compile(rf"(?<=\w)(?<!self)(?<!toolrouting)\.({fields})\b|[\"']({fields})[\"']")
    readers = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if private.search(path.read_text(encoding="utf-8"))
    )
    assert readers == ["_backends/embedded/llama_internals.py"]
