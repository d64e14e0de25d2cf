"""The command line: ``toolrouting run|schema|parse|preflight``."""

from .app import SUBCOMMANDS, build_parser, help_texts, main

__all__ = ["SUBCOMMANDS", "build_parser", "help_texts", "main"]
