"""What llguidance decodes a routed request under: our route grammar, or its own reading of the schema.

With ``grammar="ours"`` (the default) llguidance gets the very GBNF the grammar sampler and the
llama.cpp dialects get (:func:`~toolrouting.route_grammar`: compact, bounded, its notes), read
by llguidance's GBNF converter, so the forced path and the grammar path accept the same replies,
byte for byte, with the same longest reply. With ``grammar="server"`` llguidance compiles the
JSON schema itself, compact (no whitespace, properties in the schema's order); what it refuses
there, ``preflight(schema, "llguidance")`` names beforehand.

Either way a grammar llguidance refuses is a :class:`GrammarError` quoting its reason, raised
when the request is made, before the model is touched.
"""

from __future__ import annotations

import json
import re
import threading
import warnings
from typing import Any

from ..._errors import GrammarError, ModelLoadError
from ..._grammar import route_grammar
from ..._limits import FORCED_PARSER_LIMITS
from ..._settings import GrammarChoice
from ..base import quoted_cause

__all__ = ["ForcedGrammars", "llguidance_grammar", "require_forced_decoding"]

_INSTALL = "pip install 'toolrouting[embedded]' (or: pip install llguidance)"
# llguidance's own compiler, told to write a route reply compactly as the route's examples are:
# then it forces every separator and every required key.
_JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"}
# llguidance's GBNF reader knows llama.cpp's escapes, but writes \uXXXX and \UXXXXXXXX back in a
# form its own Lark reader refuses (no leading zeros), and reads \- (a '-' in a class) not at all.
# So those are rewritten before it reads them: as \xXX below U+0100, as the character itself above
# (GBNF takes UTF-8, and no such character is special in it), and \- as \x2D.
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.DOTALL)
_HINTS = {
    "ours": 'preflight(schema, "toolrouting") names what our grammar refuses or widens',
    "server": 'preflight(schema, "llguidance") names the keywords at fault',
}


def llguidance_grammar(
    llguidance: Any, schema_text: str, choice: GrammarChoice, bounded: bool, spaced: bool
) -> str:
    """llguidance's grammar for a schema's JSON text: ours (converted from GBNF) or its own compiler's.

    ``llguidance`` is the module. Raises :class:`GrammarError` for a schema our compiler refuses,
    or a text llguidance cannot read.
    """
    if choice == "ours":
        gbnf = route_grammar(json.loads(schema_text), spaced=spaced, bounded=bounded).gbnf
        text = _ESCAPE.sub(_readable, gbnf)
        try:
            lark = llguidance.gbnf_to_lark.gbnf_to_lark(text)
        except Exception as error:  # its parser's GbnfToLarkError, or a slip on a text it never met
            raise GrammarError(
                f"llguidance cannot read the grammar written for this JSON schema ({quoted_cause(error)}); "
                f"{_HINTS[choice]}"
            ) from error
        return str(llguidance.LLMatcher.grammar_from_lark(lark))
    try:
        return str(llguidance.LLMatcher.grammar_from_json_schema(schema_text, defaults=_JSON_OPTIONS))
    except ValueError as error:
        raise GrammarError(f"llguidance cannot read the JSON schema ({quoted_cause(error)})") from error


class ForcedGrammars:
    """Compiles a request's grammar into an llguidance matcher over one model's vocabulary.

    The vocabulary's view is built on the first compilation (about a second, once per model);
    the caller keeps the compiled matchers (a cache) and decodes each request on a copy.
    """

    def __init__(self, llama_cpp: Any, llama: Any) -> None:
        self._llguidance = require_forced_decoding()
        self._vocab = llama_cpp.llama_model_get_vocab(llama.model)
        self._tokenizer: Any = None
        self._building = threading.Lock()

    def compile(self, schema_text: str, choice: GrammarChoice, bounded: bool, spaced: bool) -> Any:
        """The ``LLMatcher`` of a schema's JSON text, checked: :class:`GrammarError` where refused."""
        llguidance = self._llguidance
        grammar = llguidance_grammar(llguidance, schema_text, choice, bounded, spaced)
        limits = llguidance.LLParserLimits(**FORCED_PARSER_LIMITS)
        matcher = llguidance.LLMatcher(self._lltokenizer(), grammar, log_level=0, limits=limits)
        if matcher.is_error():
            what = "the grammar written for this JSON schema" if choice == "ours" else "the JSON schema"
            reason = quoted_cause(matcher.get_error())
            raise GrammarError(f"llguidance refused {what} ({reason}); {_HINTS[choice]}")
        return matcher

    def _lltokenizer(self) -> Any:
        with self._building:  # two first requests on two threads build it once
            if self._tokenizer is None:
                from llguidance.llamacpp import lltokenizer_from_vocab

                # llguidance reads token attributes through a name llama-cpp-python deprecates.
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    self._tokenizer = lltokenizer_from_vocab(self._vocab)
        return self._tokenizer


def require_forced_decoding() -> Any:
    """The ``llguidance`` module; :class:`ModelLoadError` naming the install command where it is missing."""
    try:
        import llguidance
        import llguidance.gbnf_to_lark
        import llguidance.llamacpp
    except ImportError as error:
        raise ModelLoadError(
            f"forced-token decoding needs llguidance, which is not installed; install it with: {_INSTALL}, "
            "or pass forced_tokens=False (toolrouting run --decoding grammar)"
        ) from error
    return llguidance


def _readable(escape: re.Match[str]) -> str:
    """One GBNF escape as llguidance's reader takes it."""
    code = escape.group(1)
    if code == "-":
        return "\\x2D"
    if len(code) == 1:
        return escape.group(0)
    value = int(code[1:], 16)
    if value < 0x100:
        return f"\\x{value:02X}"
    return escape.group(0) if 0xD800 <= value <= 0xDFFF else chr(value)
