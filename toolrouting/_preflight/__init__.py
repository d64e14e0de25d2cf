"""The preflight: what each grammar compiler will ignore, refuse or change in a route schema."""

from .rules import TARGETS, Finding, Severity, Target, format_findings, preflight

__all__ = ["TARGETS", "Finding", "Severity", "Target", "format_findings", "preflight"]
