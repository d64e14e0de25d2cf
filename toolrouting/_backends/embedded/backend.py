"""The embedded default backend: llama.cpp in-process through llama-cpp-python.

llama-cpp-python is imported only when a :class:`EmbeddedLlama` is made, so ``import toolrouting``
never needs it (it is the optional extra ``toolrouting[embedded]``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import threading
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

from ..._errors import BackendError, GrammarError, ModelLoadError
from ..._json import plain
from ..._limits import EMBEDDED_PROMPT_BLOCK, EMBEDDED_PROMPT_CACHE_DIR_MB, GRAMMAR_CACHE_SIZE
from ..._settings import GrammarChoice, Settings
from ..base import BaseBackend, Completion, Message, TextDelta, quoted_cause
from ..reasoning_tags import ReasoningTags, checked_reasoning_budget
from .chat_prompt import ChatPrompt
from .context_size import ContextChoice, model_context
from .decoding import Decoding, GrammarSampler, Sampling
from .disk_states import DiskStates, state_identity
from .forced_decoding import ForcedTokens
from .forced_grammar import require_forced_decoding
from .grammar_check import check_gbnf
from .llama_internals import load_llama
from .model_fetch import DEFAULT_MODEL_FILE, DEFAULT_MODEL_PACKAGE, MODEL_INSTALL, default_model_path
from .prompt_cache import PromptCache, PromptCacheInfo
from .reasoning import thought_then_reply
from .repack import Repack, decided_repack

__all__ = [
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_PACKAGE",
    "EmbeddedLlama",
    "check_gbnf",
    "default_model_path",
]

_LOG = logging.getLogger("toolrouting.embedded")

_RUNTIME_INSTALL = "pip install 'toolrouting[embedded]'"


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
            f"llama-cpp-python is installed but cannot load ({type(error).__name__}: {quoted_cause(error)}); "
            f"reinstall it with: {_RUNTIME_INSTALL}"
        ) from error
    return llama_cpp


@dataclasses.dataclass(eq=False)
class _Model:
    """What a backend and its clones share: the loaded model, its lock, how it decodes, the grammar
    cache and the prompt cache."""

    llama: Any
    """The ``llama_cpp.Llama``; ``None`` once closed."""
    path: Path
    context: ContextChoice
    """The context and prompt cache asked of llama.cpp, and why."""
    n_ctx: int
    lock: threading.Lock
    repack: Repack
    """Whether llama.cpp repacked the weights into its extra buffer types, and why."""
    decoding: Decoding
    """How a request is decoded, chosen once: forced tokens or the grammar sampler."""
    prompts: PromptCache
    """The prompt states kept, and how each prompt is made ready."""
    chat: ChatPrompt | None
    """The chat template (the GGUF's, or the one given), ``None`` where there is none."""
    compiled: Callable[[str, GrammarChoice, bool, bool], Any] = dataclasses.field(init=False)
    """``decoding.compile`` through the grammar cache: what a schema's JSON text decodes under."""
    counting: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    """Held while a prompt is counted, which needs the model but not its turn; closing waits for it."""

    def __post_init__(self) -> None:
        self.compiled = functools.lru_cache(maxsize=GRAMMAR_CACHE_SIZE)(self.decoding.compile)


class EmbeddedLlama(BaseBackend):
    """A GGUF model run in-process by llama.cpp; with no ``model_path``, SmolLM2-135M-Instruct.

    The chat template is the GGUF's own, or ``chat_template`` (a Jinja chat template's text) in its
    place. A template with reasoning tags (``<think>``, :attr:`reasoning_tags`) lets a clone
    reason in them first: ``clone(reasoning_budget=N)`` samples a thought of at most ``N`` tokens
    between the tags before each reply, returned as :attr:`Completion.reasoning`
    (:mod:`~toolrouting._backends.embedded.reasoning`). A request with ``settings.json_schema`` is decoded
    under a grammar: ours (:func:`~toolrouting.route_grammar`, compact and, with
    ``settings.bounded``, bounded) or, with ``settings.grammar="server"``, the schema as the
    decoder's own compiler reads it. Each grammar is checked before any token is sampled
    (a refusal is a :class:`GrammarError`), compiled once per distinct schema (its JSON text,
    key order as given) and kept in a cache the clones share. ``seed`` is the sampling seed of
    every request whose settings name none; ``None`` draws a fresh one each time.
    ``n_threads=None`` is llama-cpp-python's choice (half the cores).

    ``repack`` is whether llama.cpp repacks the weights into its extra CPU buffer types
    (:mod:`~toolrouting._backends.embedded.repack`): ``None`` (the default) turns it off where the
    build uses Intel AMX, whose kernels crash on the first decode, and keeps it on elsewhere;
    ``True`` or ``False`` decides by hand. The decision is :attr:`repack`, logged once at INFO on
    the ``toolrouting.embedded`` logger.

    ``forced_tokens=True`` (the default) decodes it with llguidance: the tokens the grammar
    forces are evaluated as one batch, the model samples only where it has a choice
    (:mod:`~toolrouting._backends.embedded.forced_decoding`), and ``server`` means llguidance's own
    JSON-schema compiler. ``forced_tokens=False`` samples it token by token under llama.cpp's
    grammar sampler, and ``server`` means llama-cpp-python's conversion.

    ``n_ctx=None`` (the default) is the model's trained context, within a share of the memory
    available, and ``prompt_cache_mb=None`` keeps a few whole contexts' states within another
    (:mod:`~toolrouting._backends.embedded.context_size`); the choice is :attr:`context`,
    logged once at INFO on the ``toolrouting.embedded`` logger. A prompt that does not fit the
    context is a :class:`ContextLengthError`, raised before the model evaluates it.

    The prompt states are kept in memory
    (:mod:`~toolrouting._backends.embedded.prompt_cache`); ``prompt_cache_dir`` keeps them in a
    folder too, at most ``prompt_cache_dir_mb`` megabytes, so that a model loaded again (after a
    restart, in another process) restores the longest prefix a file holds
    (:mod:`~toolrouting._backends.embedded.disk_states`).

    Clones share the loaded model and take turns on it (a lock): ``close()`` on the
    backend that loaded it frees the model for every clone; on a clone it retires only
    that clone.
    """

    #: ``reasoning_budget``: the most tokens of the thought before each reply (``None``: none).
    clone_keys: ClassVar[frozenset[str]] = frozenset({"settings", "reasoning_budget"})

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        settings: Settings | None = None,
        seed: int | None = 0,
        forced_tokens: bool = True,
        prompt_cache_mb: int | None = None,
        chat_template: str | None = None,
        repack: bool | None = None,
        prompt_cache_dir: str | os.PathLike[str] | None = None,
        prompt_cache_dir_mb: int = EMBEDDED_PROMPT_CACHE_DIR_MB,
    ) -> None:
        super().__init__(settings)
        if chat_template is not None and (not isinstance(chat_template, str) or not chat_template.strip()):
            raise ValueError(
                "chat_template is a Jinja chat template's text (leave it out for the GGUF's own), "
                f"not {chat_template!r}"
            )
        if repack is not None and not isinstance(repack, bool):
            raise ValueError(f"repack is True, False or None (decided from the CPU), not {repack!r}")
        if prompt_cache_mb is not None and (
            isinstance(prompt_cache_mb, bool) or not isinstance(prompt_cache_mb, int) or prompt_cache_mb < 0
        ):
            raise ValueError(
                f"prompt_cache_mb is the megabytes of prompt states kept, a whole number of at least 0 "
                f"(0 keeps none; None: the default, from the context), not {prompt_cache_mb!r}"
            )
        folder = _checked_folder(prompt_cache_dir, prompt_cache_dir_mb)
        path = default_model_path() if model_path is None else Path(model_path)
        if not path.is_file():
            raise ModelLoadError(
                f"no model file at {quoted_cause(path)}; pass the path of a GGUF file, or leave model_path "
                f"out for the default model ({MODEL_INSTALL})"
            )
        llama_cpp = _import_llama_cpp()
        context = model_context(path, n_ctx, prompt_cache_mb)  # checks n_ctx, logs what it chose
        if forced_tokens:
            require_forced_decoding()  # before the model loads: a missing package costs nothing
        decided = decided_repack(llama_cpp, repack)
        _LOG.info("%s", decided.line())
        try:
            llama = load_llama(
                llama_cpp,
                use_extra_bufts=decided.on,
                model_path=str(path),
                n_ctx=context.n_ctx,
                n_threads=n_threads,
                verbose=False,
            )
        except ValueError as error:
            raise ModelLoadError(
                f"llama.cpp could not load {quoted_cause(path)} ({quoted_cause(error)}); is it a GGUF file "
                "this llama-cpp-python can read?"
            ) from error
        disk = None
        if folder is not None:
            try:
                identity = state_identity(llama_cpp, llama, path, EMBEDDED_PROMPT_BLOCK)
                disk = DiskStates(folder, prompt_cache_dir_mb << 20, identity)
            except OSError as error:
                llama.close()
                raise ValueError(
                    f"prompt_cache_dir {quoted_cause(folder)} cannot be made a folder ({quoted_cause(error)})"
                ) from error
        prompts = PromptCache(llama_cpp, llama, context.prompt_cache_mb, disk=disk)
        try:
            chat = ChatPrompt.of(llama, chat_template)
            if chat_template is not None and chat is not None:
                # llama-cpp-python's own decoding formats with the template given too.
                llama.chat_handler = chat.formatter.to_chat_handler()
            decoding: Decoding = (ForcedTokens if forced_tokens else GrammarSampler)(
                llama_cpp, llama, prompts, chat
            )
        except Exception:
            llama.close()
            raise
        self._model = _Model(
            llama=llama,
            path=path,
            context=context,
            n_ctx=llama.n_ctx(),  # what llama.cpp made of n_ctx (padded)
            lock=threading.Lock(),
            repack=decided,
            decoding=decoding,
            prompts=prompts,
            chat=chat,
        )
        self._seed = seed
        self._reasoning_budget: int | None = None

    @property
    def model_path(self) -> Path:
        """The GGUF file this backend runs."""
        return self._model.path

    @property
    def repack(self) -> Repack:
        """Whether llama.cpp repacked the weights into its extra CPU buffer types, and why."""
        return self._model.repack

    @property
    def forced_tokens(self) -> bool:
        """Whether routed requests are decoded with forced tokens (llguidance), not the grammar sampler."""
        return isinstance(self._model.decoding, ForcedTokens)

    @property
    def reasoning_tags(self) -> ReasoningTags | None:
        """The tags the model reasons between, from its chat template; ``None`` where it has none."""
        chat = self._model.chat
        return None if chat is None else chat.tags

    @property
    def reasoning_budget(self) -> int | None:
        """The most tokens the model reasons in its tags before each reply; ``None``: it does not."""
        return self._reasoning_budget

    @property
    def n_ctx(self) -> int:
        """The context window, in tokens, that prompt and completion share."""
        return self._model.n_ctx

    @property
    def context(self) -> ContextChoice:
        """How the context and the prompt cache were sized, and why (:meth:`ContextChoice.line`)."""
        return self._model.context

    def grammar_cache_info(self) -> functools._CacheInfo:
        """Hits, misses (compilations) and size of the grammar cache this backend's clones share."""
        return self._model.compiled.cache_info()  # type: ignore[attr-defined, no-any-return]

    def prompt_cache_info(self) -> PromptCacheInfo:
        """What the prompt cache this backend's clones share holds, and what it saved since the model
        loaded: read without waiting for a request under way, so it may count that request in part."""
        return self._model.prompts.info()

    def count_prompt_tokens(self, messages: Sequence[Message]) -> int | None:
        """The tokens of the prompt ``messages`` make, as the context check counts them (their
        conversation in the model's chat template): a prompt of ``n_ctx`` tokens or more is a
        :class:`ContextLengthError`. ``None`` for a GGUF without a chat template, which
        llama-cpp-python formats itself. Counted beside a request under way, not after it."""
        model = self._model
        conversation = [{"role": m["role"], "content": m["content"]} for m in messages]
        with model.counting:
            self._check_open()
            return None if model.chat is None else len(model.chat.format(conversation).tokens)

    def complete(self, messages: Sequence[Message]) -> Completion:
        """One chat completion under this backend's settings, as they are now."""
        *_, last = self._decode(messages, stream=False)
        assert isinstance(last, Completion)
        return last

    def stream(self, messages: Sequence[Message]) -> Generator[TextDelta | Completion, None, None]:
        """:meth:`complete` piece by piece.

        The last item is the whole :class:`Completion`. With forced tokens, a routed request
        hands out each forced run and each sampled token as it is evaluated, and its usage is
        counted as :meth:`complete` counts it. Otherwise the pieces are llama-cpp-python's
        ``stream=True``: its completion tokens are counted, one per piece (llama-cpp-python's
        stream reports none), and its prompt tokens are 0. The model is held from the first
        piece to the last: read the stream to the end or close it before this thread sends
        another request or closes the backend. Cloned with ``reasoning_budget``, the thought's
        pieces come first, each a ``TextDelta(reasoning=True)``.
        """
        yield from self._decode(messages, stream=True)

    def _decode(self, messages: Sequence[Message], stream: bool) -> Iterator[TextDelta | Completion]:
        settings = self._settings
        model = self._model
        conversation = [{"role": m["role"], "content": m["content"]} for m in messages]
        # A refusal comes before the model is touched.
        compiled = None if settings.json_schema is None else self._compiled(settings)
        sampling = Sampling.of(settings, self._seed)
        with model.lock:
            self._check_open()
            try:
                if self._reasoning_budget is not None and model.chat is not None:
                    yield from thought_then_reply(
                        model.decoding,
                        model.chat,
                        model.llama,
                        conversation,
                        compiled,
                        sampling,
                        budget=self._reasoning_budget,
                        stream=stream,
                    )
                else:
                    yield from model.decoding.run(model.llama, conversation, compiled, sampling, stream)
            finally:
                model.prompts.write_behind()  # answered: its states go to disk now

    def _clone(self, changes: Mapping[str, Any]) -> Self:
        budget = checked_reasoning_budget(
            changes.get("reasoning_budget", self._reasoning_budget), self.reasoning_tags, "chat_template="
        )
        twin = super()._clone(changes)
        twin._reasoning_budget = budget
        return twin

    def _check_open(self) -> None:
        if self._closed or self._model.llama is None:
            raise BackendError("this EmbeddedLlama backend is closed; make a new one to send requests")

    def _compiled(self, settings: Settings) -> Any:
        try:
            # plain: a read-only mapping (MappingProxyType) is a schema too, as on the wire.
            text = json.dumps(
                plain(settings.json_schema), sort_keys=False, ensure_ascii=False, allow_nan=False
            )
        except (TypeError, ValueError, RecursionError) as error:
            raise GrammarError(
                f"the JSON schema is not JSON ({quoted_cause(error)}); a schema holds only JSON values"
            ) from error
        return self._model.compiled(text, settings.grammar, settings.bounded, settings.spaced)

    def _release(self) -> None:
        """Free the model for every clone; a request under way finishes first (the lock)."""
        with self._model.lock, self._model.counting:
            llama, self._model.llama = self._model.llama, None
            self._model.prompts.clear()
        if llama is not None:
            llama.close()


def _checked_folder(folder: str | os.PathLike[str] | None, limit_mb: object) -> Path | None:
    if isinstance(limit_mb, bool) or not isinstance(limit_mb, int) or limit_mb < 1:
        raise ValueError(
            f"prompt_cache_dir_mb is the megabytes of prompt states kept on disk, a whole number of at "
            f"least 1, not {limit_mb!r}"
        )
    if folder is None:
        return None
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise ValueError(f"prompt_cache_dir {quoted_cause(path)} is a file; name a folder for the states")
    return path
