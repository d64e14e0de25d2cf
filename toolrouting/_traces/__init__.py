"""Traces: a routing run as OpenTelemetry spans, with the GenAI semantic conventions' attributes.

``tracer`` holds :class:`RunTracer`, an event observer; OpenTelemetry is imported only when
one is made, so ``import toolrouting`` never needs it (the ``traces`` extra installs it).
"""

from .tracer import AGENT_NAME, INSTRUMENTATION_NAME, RunTracer

__all__ = ["AGENT_NAME", "INSTRUMENTATION_NAME", "RunTracer"]
