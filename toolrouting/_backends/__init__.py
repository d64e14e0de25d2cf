"""Backends: the seam every model sits behind, and the implementations that ship.

``base`` holds the protocol, its wire types and the base class the implementations share;
``http`` speaks to OpenAI-compatible servers in the ``dialects`` it knows, and ``models``
lists what such a server offers; ``embedded`` runs a GGUF model in-process; ``scripted`` is
the fake that tests and docs drive.
"""

from .base import ROLES, AsyncBackend, Backend, BaseBackend, Completion, Message, Usage, is_truncated
from .dialects import DIALECTS, DialectName
from .embedded import EmbeddedLlama, LlamaCpp, default_model_path
from .http import OpenAICompatible
from .models import list_models
from .scripted import ScriptedBackend, ScriptedRequest

__all__ = [
    "DIALECTS",
    "ROLES",
    "AsyncBackend",
    "Backend",
    "BaseBackend",
    "Completion",
    "DialectName",
    "EmbeddedLlama",
    "LlamaCpp",
    "Message",
    "OpenAICompatible",
    "ScriptedBackend",
    "ScriptedRequest",
    "Usage",
    "default_model_path",
    "is_truncated",
    "list_models",
]
