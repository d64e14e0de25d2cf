"""Claude Code and Codex, as they ship from npm, in whole sessions through ``toolrouting serve``
on a real model: the embedded default model (SmolLM2-135M), in-process behind serve started as
a user starts it, a process of its own with ``--log-json``.

Each CLI is configured as docs/serve.md's "Clients as they ship" says (tests/support/agent_clis.py
says what keeps it hermetic) and asked a question that needs its own tools, in a folder holding
the file that answers it. What the model chooses is not asserted, only what serve guarantees,
read from its request log: every request is answered 200 or a documented 4xx, never a 5xx; the
session ends without a protocol error (the CLI exits 0 and prints something, or gives up on
a decision the model ran past the routing cap, the one failure its choice can cause); a prompt past the
context (``--ctx-size 2048``) is answered 400 at the CLI's first request, which the CLI reports
and does not send again; and a session after serve restarted over the same
``--prompt-cache-dir`` starts from the prompt states on disk (its first decision's
``cached_tokens`` above 0).

The folder of prompt states is shared by the module's sessions, so after the first cold turn
(about 5,000 prompt tokens: 30 to 60 s on two busy cores) the later ones are mostly warm.
"""

from __future__ import annotations

import subprocess
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from support.agent_clis import Served, agent_clis, run_claude, run_codex, serve_process

from toolrouting import default_model_path

#: The file in each session's folder, which answers the documented question ("What is the
#: weather in Paris?", asked as docs/serve.md's commands ask it).
WEATHER = "The weather in Paris: sunny, 21 C."
#: The statuses docs/serve-reference.md's "Errors" names for a client's error that a session may meet; a
#: 5xx is never one a session should see from the embedded model.
DOCUMENTED = {200, 400, 401, 404, 405, 413, 429}
#: What the request log writes for a request whose client hung up before its last byte: no answer
#: of serve's, the CLI's own choice. In one run, Codex 0.171.0 hung up two streams whose decision
#: was a goal tool the model had not called before (`create_goal`, `update_goal`), asked again,
#: and finished the session with exit 0.
CLIENT_LEFT = 499
#: Claude Code's own bound on a session's turns (a session that reaches it ends with exit status
#: 1 and says so, the CLI's own stop, not a protocol error); Codex has none. Two turns: the
#: decision, and the one after its tool's result, which the model may answer or call again.
MAX_TURNS = 2
#: The longest one session may take: a cold first turn (about 100 s for Codex's 6,300 tokens on
#: busy cores), then warm ones of a few seconds, and an answer.
SESSION_LIMIT = 420.0
#: What each CLI prints for the 400 of a prompt past the context (Claude Code 2.1.332, Codex 0.171.0).
#: How serve's log names the one failure a model's choice causes: a decision that is no valid
#: action (its reply cut at the routing cap), which a stream reports in an error event after its
#: 200 (docs/serve-reference.md, "Errors"), and a CLI may ask again until it gives up.
NOT_AN_ACTION = "BackendResponseError"
TOO_LONG = {"claude": "prompt is too long", "codex": "context window"}
#: Seconds serve may take to load the default model on busy cores.
START_LIMIT = 120.0


@pytest.fixture(scope="module")
def states(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's ``--prompt-cache-dir``: its sessions share their prompt states."""
    return tmp_path_factory.mktemp("states")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "weather.txt").write_text(WEATHER + "\n", encoding="utf-8")
    return folder


def _serve(*options: str) -> AbstractContextManager[Served]:
    """The default model served as a process of its own, its request log in JSON lines."""
    return serve_process("--log-json", *options, start_limit=START_LIMIT)


def _model_name() -> str:
    """The name serve lists for the default model, which Codex is configured to ask for."""
    return default_model_path().name


def _explained(done: object, served: Served) -> str:
    log = "".join(served.lines[-40:])
    return f"the CLI's output:\n{getattr(done, 'stdout', '')}\n{getattr(done, 'stderr', '')}\nserve:\n{log}"


def _printed(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stdout + done.stderr).lower()


def _decisions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log's objects of the requests that asked for a decision (tools declared, an API that
    routes), in order."""
    return [r for r in records if r["api"] in ("messages", "responses", "chat") and r["tools"] > 0]


def _session(
    cli: str, served: Served, workdir: Path, home: Path, turns: int = MAX_TURNS
) -> list[dict[str, Any]]:
    """One session of ``cli`` against ``served`` (Claude Code's at most ``turns`` turns), its
    guarantees checked; its requests' log objects."""
    binary = agent_clis()[cli]
    before = len(served.logged())
    if cli == "claude":
        done = run_claude(binary, served.url, workdir, home, "--max-turns", str(turns), timeout=SESSION_LIMIT)
    else:
        done = run_codex(binary, served.url, workdir, home, _model_name(), timeout=SESSION_LIMIT)
    records = served.logged()[before:]
    # A session ends at exit 0, or at a bound the CLI says it reached: Claude Code's --max-turns,
    # or the context, which serve's last line shows as the 400 (a long session of a model that
    # calls tool after tool fills the default model's 8,192 tokens).
    bounded = cli == "claude" and done.returncode == 1 and f"Reached max turns ({turns})" in done.stdout
    full = records[-1]["error"] == "context_length_exceeded" and TOO_LONG[cli] in _printed(done)
    # Or the CLI gave up on a decision the model ran past the routing cap, which serve reports
    # as no valid action: the model's choice, not a protocol error.
    gave_up = done.returncode != 0 and records[-1]["error"] == NOT_AN_ACTION
    assert done.returncode == 0 or bounded or full or gave_up, _explained(done, served)
    assert (done.stdout + done.stderr).strip(), _explained(done, served)
    assert records, _explained(done, served)
    assert {r["status"] for r in records} <= DOCUMENTED | {CLIENT_LEFT}, _explained(done, served)
    assert _decisions(records), _explained(done, served)
    # A decision's line says what it decided; a 200 whose stream then failed failed only as a
    # decision that is no valid action.
    for record in records:
        if record["status"] == 200 and record in _decisions(records):
            if record["decision"] == "failed":
                assert (record["stream"], record["error"]) == (True, NOT_AN_ACTION), record
                continue
            assert record["decision"] in ("call", "none", "abstained"), record
            assert record["prompt_tokens"] > 0, record
            assert record["completion_tokens"] > 0, record
    return records


def test_claude_code_sessions_complete_and_the_second_starts_from_disk(
    workdir: Path, tmp_path: Path, states: Path
) -> None:
    with _serve("--prompt-cache-dir", str(states)) as served:
        _session("claude", served, workdir, tmp_path / "home")
    # serve started again over the same folder: no prompt state in memory, only on disk. The
    # second session's first request is what is checked: one turn is enough.
    with _serve("--prompt-cache-dir", str(states)) as served:
        second = _session("claude", served, workdir, tmp_path / "home", turns=1)
    first = _decisions(second)[0]
    assert first["status"] == 200, first
    assert first["cached_tokens"] > 0, first


def test_codex_session_completes(workdir: Path, tmp_path: Path, states: Path) -> None:
    with _serve("--prompt-cache-dir", str(states)) as served:
        _session("codex", served, workdir, tmp_path / "home")


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_a_prompt_past_the_context_is_answered_400_once(cli: str, workdir: Path, tmp_path: Path) -> None:
    """At ``--ctx-size 2048`` the CLI's first request (about 5,000 tokens) is past the context:
    serve answers 400 in the API's words before evaluating it, the CLI says so and sends it no
    more (a 5xx had Claude Code call it temporary and Codex send it five times more)."""
    binary = agent_clis()[cli]
    home = tmp_path / "home"
    with _serve("--ctx-size", "2048") as served:
        if cli == "claude":
            done = run_claude(binary, served.url, workdir, home, "--max-turns", str(MAX_TURNS))
        else:
            done = run_codex(binary, served.url, workdir, home, _model_name())
    refused = [r for r in served.logged() if r["status"] != 200]
    explained = _explained(done, served)
    assert len(refused) == 1, explained
    assert refused[0]["status"] == 400, explained
    assert refused[0]["decision"] == "refused", explained
    assert refused[0]["api"] == ("messages" if cli == "claude" else "responses"), explained
    assert refused[0]["error"] == "context_length_exceeded", explained
    # Only the one decision was asked: nothing was sent again.
    assert len(_decisions(served.logged())) == 1, explained
    assert TOO_LONG[cli] in _printed(done), explained
