"""The embedded model's prompt states on disk, on the real default model (SmolLM2-135M-Instruct).

The differential across processes: one session's decision and answer sent by a process of its
own that writes its states to a folder and exits; then a second session (the same instructions,
another question) sent by a fresh backend in this process over that folder. Its prompts come back
from the files (the tokens evaluated are those past the shared instructions), and its replies are
the bytes a cold backend, keeping no state, writes: on both decoders. Then the files a backend
must not load: torn, or written by the model under other parameters.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.catalogues import tool
from support.model import TEST_THREADS, guaranteed_cap
from support.processes import ROOT

from toolrouting import Completion, EmbeddedLlama, Message, Settings, route_schema, routed_backend

pytestmark = pytest.mark.model

TOOLS = [
    tool("memory_search", query={"type": "string", "maxLength": 30}),
    tool("memory_read", id={"type": "string", "enum": ["M1", "M2", "M3"]}),
]
PLACES = [("generator", "shed"), ("latch", "storage room"), ("radio", "hut"), ("stove", "kitchen")]
PLACES += [("water filter", "pantry"), ("keys", "hall"), ("boat", "boathouse"), ("lamp", "attic")]
RULES = " ".join(
    f"Rule {n}: the notes about the {thing} are kept in the {place}, and a question about them is "
    "answered from the notes alone."
    for n, (thing, place) in enumerate(PLACES, 1)
)
SYSTEM = f"You are the caretaker's assistant. {RULES}"
GREEDY: dict[str, Any] = {"temperature": 0.0, "seed": 0, "max_tokens": 24}


def _session(question: str) -> list[Message]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]


FIRST = _session("What does the latch on the storage-room door do?")
SECOND = _session("How do I start the generator?")

#: One session, sent by a process of its own: its decision, then its answer; the replies printed.
_SESSION = """
import json, sys
from toolrouting import EmbeddedLlama, Settings, route_schema, routed_backend

job = json.loads(sys.stdin.read())
with EmbeddedLlama(
    settings=Settings(**job["settings"]), n_threads=job["threads"], forced_tokens=job["forced"],
    prompt_cache_dir=job["folder"], **job["options"],
) as backend:
    decided = routed_backend(backend, route_schema(job["tools"]), job["cap"]).complete(job["messages"])
    answered = backend.complete(job["messages"])
print(json.dumps([decided.text, answered.text]))
"""


def _in_a_process(folder: Path, forced: bool, messages: list[Message], **options: Any) -> list[str]:
    job = {
        "settings": GREEDY, "threads": TEST_THREADS, "forced": forced, "folder": str(folder),
        "tools": TOOLS, "cap": guaranteed_cap(route_schema(TOOLS)), "messages": messages,
        "options": options,
    }  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", _SESSION], input=json.dumps(job), capture_output=True, text=True,
        cwd=ROOT, env={**os.environ, "OMP_WAIT_POLICY": "passive"}, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return list(json.loads(done.stdout.splitlines()[-1]))


def _both(backend: EmbeddedLlama, messages: list[Message]) -> tuple[Completion, Completion]:
    routed = routed_backend(backend, route_schema(TOOLS), guaranteed_cap(route_schema(TOOLS)))
    return routed.complete(messages), backend.complete(messages)


def _load(forced: bool, **options: Any) -> EmbeddedLlama:
    return EmbeddedLlama(settings=Settings(**GREEDY), n_threads=TEST_THREADS, forced_tokens=forced, **options)


@pytest.fixture(params=[True, False], ids=["forced", "grammar"], scope="module")
def decoder(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture(scope="module")
def cold(decoder: bool) -> dict[str, list[str]]:
    """Both sessions' replies from a backend that keeps no state, each request started cold."""
    replies = {}
    with _load(decoder, prompt_cache_mb=0) as backend:
        routed = routed_backend(backend, route_schema(TOOLS), guaranteed_cap(route_schema(TOOLS)))
        for name, messages in (("first", FIRST), ("second", SECOND)):
            texts = []
            for target in (routed, backend):
                backend.complete([{"role": "user", "content": "Hi."}])  # the context holds another prompt
                before = backend.prompt_cache_info().reused_tokens
                texts.append(target.complete(messages).text)
                assert backend.prompt_cache_info().reused_tokens == before, "not a cold start"
            replies[name] = texts
    return replies


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.state"))


def test_a_state_written_by_one_process_starts_a_fresh_one_warm_with_the_same_replies(
    tmp_path: Path, decoder: bool, cold: dict[str, list[str]]
) -> None:
    assert _in_a_process(tmp_path, decoder, FIRST) == cold["first"]
    assert _files(tmp_path), "the first session wrote no state"
    with _load(decoder, prompt_cache_dir=tmp_path) as backend:
        decided, answered = _both(backend, SECOND)
        info = backend.prompt_cache_info()
    assert [decided.text, answered.text] == cold["second"]
    # The decision's prompt came back from a file up to the shared instructions' last whole block,
    # and the answer's from the context it left: what was evaluated is the rest.
    assert info.disk_restored == 1
    assert info.restored_tokens >= 3 * 64
    prompt = decided.usage.prompt_tokens + answered.usage.prompt_tokens
    assert info.evaluated_tokens == prompt - info.reused_tokens < prompt // 3
    if decoder:  # the forced decoder says what its prompt reused
        assert decided.raw is not None
        assert decided.raw["restored_prompt_tokens"] == decided.raw["reused_prompt_tokens"] >= 3 * 64


def test_a_torn_file_is_removed_and_the_request_answered_cold(
    tmp_path: Path, decoder: bool, cold: dict[str, list[str]]
) -> None:
    _in_a_process(tmp_path, decoder, FIRST)
    torn = {}
    for path in _files(tmp_path):
        torn[path] = path.stat().st_size // 2
        path.write_bytes(path.read_bytes()[: torn[path]])
    with _load(decoder, prompt_cache_dir=tmp_path) as backend:
        decided, answered = _both(backend, SECOND)
        info = backend.prompt_cache_info()
    assert [decided.text, answered.text] == cold["second"]
    assert (info.disk_restored, info.disk_removed) == (0, len(torn))
    # Removed; a state of the same tokens may have been written again since, whole.
    assert all(not path.exists() or path.stat().st_size > size for path, size in torn.items())


def test_a_state_of_the_model_under_another_context_size_is_not_loaded(tmp_path: Path, decoder: bool) -> None:
    _in_a_process(tmp_path, decoder, FIRST, n_ctx=2048)
    theirs = _files(tmp_path)
    with _load(decoder, prompt_cache_dir=tmp_path) as backend:
        _both(backend, SECOND)
        info = backend.prompt_cache_info()
    assert (info.disk_restored, info.restored_tokens, info.disk_removed) == (0, 0, 0)
    assert set(theirs) <= set(_files(tmp_path))  # left to the folder's bound, for whoever runs it


def test_the_command_line_keeps_the_states_in_the_folder_it_names(tmp_path: Path) -> None:
    from toolrouting._cli.parser import build_parser
    from toolrouting._cli.run import model_backend

    folder = tmp_path / "states"
    argv = ["run", "Hi.", "--threads", str(TEST_THREADS), "--quiet", "--prompt-cache-dir", str(folder)]
    backend = model_backend(build_parser().parse_args([*argv, "--prompt-cache-dir-mb", "300"]))
    assert isinstance(backend, EmbeddedLlama)
    with backend:
        assert backend.prompt_cache_info().disk_limit_bytes == 300 << 20
        backend.complete(FIRST)
    assert _files(folder)


def test_the_pages_example_starts_warm(capsys: pytest.CaptureFixture[str]) -> None:
    page = (ROOT / "docs" / "embedded.md").read_text(encoding="utf-8")
    section = page[page.index("### Prompt states on disk") :]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/embedded.md", "exec"), {})
    restored, tokens, evaluated = map(int, capsys.readouterr().out.split())
    assert restored == 1
    assert tokens >= 4 * 64
    assert evaluated <= 64


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "64"])
def test_prompt_cache_dir_mb_is_a_whole_number_of_at_least_one(value: Any) -> None:
    with pytest.raises(ValueError, match="prompt_cache_dir_mb"):
        EmbeddedLlama(prompt_cache_dir_mb=value)


def test_prompt_cache_dir_is_a_folder() -> None:
    with pytest.raises(ValueError, match="is a file; name a folder"):
        EmbeddedLlama(prompt_cache_dir=__file__)
