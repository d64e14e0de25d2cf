"""The command line against a real HTTP server on loopback: keys, models, versions, exit statuses.

The server is http.server in a thread, speaking just enough of the OpenAI and Ollama APIs:
chat completions answered from a queue, ``/v1/models`` and ``/api/tags``, and a key it
demands like a real one, echoing a wrong key in its 401 body as OpenAI's API does, so the
tests see that the command line hides it. ``toolrouting run``'s options against the same
server are tests/cli/test_cli_run_options.py's.
"""

# ruff: noqa: F811 - the fixtures imported from support.cli_http are the tests' parameters
from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli_http import (  # noqa: F401 - fixtures shared with other tests
    MODELS,
    NONE,
    QUESTION,
    READ,
    LoopbackServer,
    _serve,
    no_ambient_key,
    run_argv,
    server,
    toolrouting_process,
)
from support.processes import ROOT

import toolrouting
from toolrouting._backends.models import models_url
from toolrouting._cli import main

#: A key no output could contain by chance.
KEY = "sk-toolrouting-test-7Qx2Vb9Lw4Rk"


@pytest.fixture
def keyed() -> Iterator[LoopbackServer]:
    """A server that demands :data:`KEY`."""
    yield from _serve(KEY)


def test_the_key_goes_as_a_bearer_header_and_never_into_any_output(
    keyed: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "run.jsonl"
    # The server quotes the key in a 500, which the retry line and the run's end both show.
    keyed.replies.extend([(500, f"overloaded; key {KEY}"), (200, READ), (200, NONE), (200, "It locks.")])
    argv = run_argv(keyed.url, "--api-key", KEY, "--answer", "--json", "--transcript", str(transcript))
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert {r["authorization"] for r in keyed.requests} == {f"Bearer {KEY}"}
    assert json.loads(out)["answer"] == "It locks."
    assert "retry 1" in err
    assert "[api key hidden]" in err
    for text in (out, err, transcript.read_text(encoding="utf-8")):
        assert KEY not in text


@pytest.mark.parametrize("variable", ["TOOLROUTING_API_KEY", "OPENAI_API_KEY"])
def test_the_key_comes_from_the_environment_when_no_flag_names_it(
    keyed: LoopbackServer, variable: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, KEY)
    assert main(["models", "--base-url", keyed.url]) == 0
    assert capsys.readouterr().out.splitlines() == MODELS
    assert keyed.requests[-1]["authorization"] == f"Bearer {KEY}"


def test_the_flag_wins_over_the_environment_and_toolrouting_over_openai(
    keyed: LoopbackServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-openai-one")
    monkeypatch.setenv("TOOLROUTING_API_KEY", KEY)
    assert main(["models", "--base-url", keyed.url]) == 0
    monkeypatch.setenv("TOOLROUTING_API_KEY", "sk-stale-one")
    assert main(["models", "--base-url", keyed.url, "--api-key", KEY]) == 0
    assert [r["authorization"] for r in keyed.requests] == [f"Bearer {KEY}"] * 2
    capsys.readouterr()


def test_a_401_names_the_missing_key_and_how_to_pass_it(
    keyed: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(run_argv(keyed.url)) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("BackendHTTPError: POST ")
    assert "HTTP 401" in last
    assert last.endswith(
        "no API key was sent: pass --api-key KEY or set TOOLROUTING_API_KEY (or OPENAI_API_KEY)"
    )
    assert keyed.requests[0]["authorization"] is None


def test_a_refused_key_is_named_by_its_source_and_never_shown(
    keyed: LoopbackServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = "sk-wrong-but-secret-3Jd8"
    monkeypatch.setenv("TOOLROUTING_API_KEY", wrong)
    assert main(["models", "--base-url", keyed.url]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"BackendHTTPError: GET {keyed.url}/v1/models answered HTTP 401")
    assert "Incorrect API key provided: Bearer [api key hidden]" in err
    assert err.endswith(
        "the key from TOOLROUTING_API_KEY was refused: check it, or pass another with --api-key KEY\n"
    )
    assert wrong not in err
    assert main([*run_argv(keyed.url), "--api-key", wrong]) == 1
    err = capsys.readouterr().err
    assert "the key from --api-key was refused" in err
    assert wrong not in err


def test_key_usage_errors_never_show_the_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", QUESTION, "--api-key", KEY]) == 2
    err = capsys.readouterr().err
    assert "--api-key is for a server named with --base-url" in err
    assert main(["models", "--base-url", "http://127.0.0.1:9", "--api-key", f"{KEY}\n"]) == 2
    err = capsys.readouterr().err
    assert "must be printable ASCII text" in err
    assert KEY not in err


def test_models_lists_what_the_server_offers(
    server: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "--base-url", f"{server.url}/v1"]) == 0
    assert capsys.readouterr().out == "".join(f"{m}\n" for m in MODELS)
    assert main(["models", "--base-url", server.url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == MODELS
    assert main(["models", "--base-url", server.url, "--dialect", "ollama"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{m}:latest" for m in MODELS]
    assert [r["path"] for r in server.requests] == ["/v1/models", "/v1/models", "/api/tags"]


def test_models_errors(server: LoopbackServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 2
    assert "the following arguments are required: --base-url" in capsys.readouterr().err
    assert main(["models", "--base-url", "ftp://host"]) == 2
    assert "base_url needs http:// or https://" in capsys.readouterr().err
    assert main(["models", "--base-url", f"{server.url}/v2/elsewhere/v1/models/x"]) == 1
    assert capsys.readouterr().err.startswith("BackendHTTPError: GET ")
    server.shutdown()
    server.server_close()
    assert main(["models", "--base-url", server.url]) == 1
    assert capsys.readouterr().err.startswith("BackendConnectError: could not get ")


@pytest.mark.parametrize(
    ("given", "dialect", "expected"),
    [
        ("http://h:8080", "openai", "http://h:8080/v1/models"),
        ("http://h:8080/v1/", "llama.cpp", "http://h:8080/v1/models"),
        ("http://h:8080/v1/models", "openai", "http://h:8080/v1/models"),
        ("https://h/proxy/v1", "openai", "https://h/proxy/v1/models"),
        ("http://h:11434", "ollama", "http://h:11434/api/tags"),
        ("http://h:11434/api", "ollama", "http://h:11434/api/tags"),
        ("http://h:11434/v1", "ollama", "http://h:11434/api/tags"),
    ],
)
def test_models_url_takes_any_root_a_client_is_given(given: str, dialect: str, expected: str) -> None:
    assert models_url(given, dialect) == expected


def test_version_names_both_packages_without_loading_llama_cpp() -> None:
    script = (
        "import sys; from toolrouting._cli import main; code = main(['--version']); "
        "assert 'llama_cpp' not in sys.modules; sys.exit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    try:
        llama = f"llama-cpp-python {importlib.metadata.version('llama-cpp-python')}"
    except importlib.metadata.PackageNotFoundError:
        llama = "llama-cpp-python not installed"
    assert done.stdout.startswith(f"toolrouting {toolrouting.__version__} ({llama}")


def test_each_exit_status_as_a_process(keyed: LoopbackServer, tmp_path: Path) -> None:
    assert toolrouting_process("--version").returncode == 0
    assert toolrouting_process("models", "--base-url", keyed.url).returncode == 1
    assert toolrouting_process("run", "--cap", "zero", QUESTION).returncode == 2
    # 130: Ctrl-C while the server holds the first request.
    keyed.hold = True
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolrouting",
            *run_argv(keyed.url),
            "--transcript",
            str(tmp_path / "t.jsonl"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "OMP_WAIT_POLICY": "passive", "TOOLROUTING_API_KEY": KEY},
    )
    try:
        assert keyed.received.wait(60), "the run never reached the server"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
        keyed.release.set()
    assert process.returncode == 130
    assert err.splitlines()[-1] == (
        f"toolrouting: interrupted; --resume --transcript {tmp_path / 't.jsonl'} goes on from there "
        "(with the same model and tool options)"
    )
    assert out == ""


def test_a_model_name_with_control_characters_stays_on_one_line() -> None:
    from toolrouting._cli.models import _one_line

    assert _one_line("qwen2.5:0.5b") == "qwen2.5:0.5b"
    assert _one_line("evil\nname\x1b[2J") == "evil\\nname\\x1b[2J"
