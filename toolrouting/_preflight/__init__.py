"""The preflight: what each grammar compiler will ignore, refuse or change in a route schema.

``rules`` holds the walk and the rules the compilers share; each compiler has a module of
its own rules (``llama_cpp``, ``llguidance``, ``xgrammar``, ``outlines``), and ``route_grammar``
reports the notes of our own grammar compiler, :func:`route_grammar`; ``check`` runs them.
"""

from .check import preflight
from .findings import TARGETS, Finding, Severity, Target, format_findings

__all__ = ["TARGETS", "Finding", "Severity", "Target", "format_findings", "preflight"]
