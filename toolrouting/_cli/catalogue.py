"""The catalogue commands: ``schema``, ``parse`` and ``preflight``, over a catalogue file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .._catalogue_checks import ToolSpec
from .._catalogues import tools_from
from .._parse import parse_route
from .._preflight import TARGETS, format_findings, preflight
from .._route_schema import route_schema, route_tool_names
from .arguments import Subparsers, UsageError, stdin_text
from .exits import DONE, FAILED

__all__ = ["add_parse", "add_preflight", "add_schema", "read_catalogue"]


def add_schema(subparsers: Subparsers) -> None:
    """Register ``schema``: a catalogue file in, its route schema out."""
    parser = subparsers.add_parser(
        "schema",
        help="print the route schema of a tool catalogue",
        description="Print the route schema (one anyOf alternative per tool, then none) of CATALOGUE, "
        "a JSON file holding a list of tools (OpenAI, Responses, Anthropic, MCP or bare function "
        'declarations) or an object with a "tools" list.',
    )
    parser.add_argument("catalogue", metavar="CATALOGUE.json")
    parser.set_defaults(handler=_schema)


def add_parse(subparsers: Subparsers) -> None:
    """Register ``parse``: a reply judged the way the loop judges it."""
    parser = subparsers.add_parser(
        "parse",
        help="check a model's reply against a tool catalogue",
        description="Parse REPLY (stdin when absent) as an action offered by CATALOGUE and print the "
        "result as JSON. Exit status 0 when the action is accepted, 1 when it is refused.",
    )
    parser.add_argument("catalogue", metavar="CATALOGUE.json")
    parser.add_argument("reply", nargs="?", metavar="REPLY")
    parser.set_defaults(handler=_parse)


def add_preflight(subparsers: Subparsers) -> None:
    """Register ``preflight``: what a grammar compiler will do with the route schema."""
    parser = subparsers.add_parser(
        "preflight",
        help="list what a grammar compiler will ignore or refuse in a catalogue's route schema",
        description="Check the route schema of CATALOGUE against what TARGET's JSON-schema compiler "
        "does with it: keywords it ignores or refuses, key orders it imposes, extra keys it allows. "
        "Exit status 1 when it would refuse the schema, 0 otherwise.",
    )
    parser.add_argument("catalogue", metavar="CATALOGUE.json")
    parser.add_argument("--target", choices=TARGETS, default="llama.cpp", help="the grammar compiler")
    parser.set_defaults(handler=_preflight)


def _schema(args: argparse.Namespace) -> int:
    print(json.dumps(route_schema(read_catalogue(args.catalogue)), ensure_ascii=False, indent=2))
    return DONE


def _parse(args: argparse.Namespace) -> int:
    tools = read_catalogue(args.catalogue)
    # Bytes that are not UTF-8 become lone surrogates, which parse_route refuses by name.
    reply = args.reply if args.reply is not None else stdin_text(errors="surrogateescape")
    route = parse_route(reply, route_tool_names(tools))
    print(json.dumps(route.as_dict(), ensure_ascii=False))
    return DONE if route.ok else FAILED


def _preflight(args: argparse.Namespace) -> int:
    findings = preflight(route_schema(read_catalogue(args.catalogue)), args.target)
    print(format_findings(findings))
    return FAILED if any(finding.severity == "error" for finding in findings) else DONE


def read_catalogue(path: str) -> list[ToolSpec]:
    """The tools in the JSON file at ``path``: a list of tools, or an object with a ``tools`` list."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from error
    except (UnicodeDecodeError, ValueError) as error:
        raise UsageError(f"{path} is not JSON: {error}") from error
    except RecursionError:
        raise UsageError(f"{path} nests too deeply to be a catalogue") from None
    if isinstance(value, dict) and isinstance(value.get("tools"), list):
        value = value["tools"]
    if not isinstance(value, list):
        raise UsageError(f'{path} holds no catalogue: a JSON list of tools, or an object with a "tools" list')
    # OpenAI, Responses, Anthropic, MCP or bare declarations; a bad entry is a CatalogueError.
    return tools_from(value)
