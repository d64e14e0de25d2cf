"""Running the command line and the test servers as processes of their own."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

__all__ = ["ROOT", "offline_python", "python_m", "stop"]

#: The checkout: where ``python -m toolrouting`` runs, as a user's shell would.
ROOT = Path(__file__).resolve().parents[2]

#: The variables a key may come from; a developer's own never reaches a test's process.
_KEY_VARIABLES = ("TOOLROUTING_API_KEY", "OPENAI_API_KEY")


def python_m(
    *args: str, stdin: str = "", env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``python -m toolrouting ARGS`` with ``stdin`` as its input (never a terminal) and ``env`` added."""
    environment = {k: v for k, v in os.environ.items() if k not in _KEY_VARIABLES}
    return subprocess.run(
        [sys.executable, "-m", "toolrouting", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**environment, "OMP_WAIT_POLICY": "passive", **(env or {})},
        timeout=timeout,
        check=False,
    )


#: What a script run by :func:`offline_python` starts with: every way out to the network
#: refused (a socket's connect, a name's look-up, a connection made for it) and each attempt
#: kept in ``attempts``; the Hugging Face hub told it is offline besides.
_OFFLINE = """
import os, socket
os.environ["HF_HUB_OFFLINE"] = "1"
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args)[:80])
    raise OSError("the network is out of bounds in this test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.getaddrinfo = refuse
socket.create_connection = refuse
"""


def offline_python(script: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``script`` in a fresh interpreter with the network refused (it may print ``attempts``,
    the connections tried); a failure's stderr is in the result."""
    return subprocess.run(
        [sys.executable, "-c", _OFFLINE + textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


def stop(process: subprocess.Popen[bytes], grace: float) -> None:
    """End a server process: asked first, killed if it has not ended within ``grace`` seconds."""
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
