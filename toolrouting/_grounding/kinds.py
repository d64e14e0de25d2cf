"""Arguments by kind: a value the conversation must give, or one the model is meant to write.

A *given* argument is a value the user or a tool result supplies: a name, an id, a number, a
date, a path, an e-mail address, a URL, a code, a choice. A *composed* argument is one the
model writes: a command, code, a query, a pattern, a patch, a message, a prompt, free text.
Grounding checks only what is given: a shell command or a search query is the model's own
work, and its words need not be the conversation's.

The rule reads the argument's schema, then its name, then its description, and stops at the
first that says (``argument_kind``):

1. a closed choice (``enum``, ``const``, a boolean) is given;
2. a ``format`` is given (``date``, ``email``, ``uri`` ...), but ``regex``, which is composed;
3. a type other than text (a number, an integer, a list or object of them) is given;
4. a ``pattern`` the value must match (an id's, a code's) is given;
5. the name's last word, its head (``file_path``: path, ``commit_message``: message,
   ``message_id``: id), in :data:`GIVEN_WORDS` or :data:`COMPOSED_WORDS`; ``code`` is composed
   alone or after a language (``python_code``) and given after anything else (``zip_code``);
6. any other word of the name in :data:`COMPOSED_WORDS` (``query_string``, ``sql_text``);
7. the description's opening phrase (its words up to the first preposition, relative word or
   punctuation), read as the name is, less the words too common there to say anything
   (``_VAGUE``: "user", "number", "type" ...): "The absolute path to the file" is given (path),
   "The command to execute" composed (command), "Conditions for the query" says nothing;
8. the tool's name, for a text nothing above places: a tool named for a shell or a language
   (``bash``, ``python``, ``execute_sql``) takes code;
9. anything else is given, as grounding read every argument before it knew kinds.

What it cannot see: what a word the lists do not hold means (``input`` or ``value`` reads as
given whatever it holds; ``title`` is given, right for a book's and wrong for a new issue's),
an argument whose name and description disagree (the name wins), and a text whose kind depends
on the call (``text`` to translate is the user's, ``text`` to post is the model's: both read as
composed). Where the lists are in doubt they lean to composed, which checks less and so
abstains less: a wrong ``composed`` lets an invented value through, a wrong ``given`` stops a
call the agent needed.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["COMPOSED_WORDS", "GIVEN_WORDS", "ArgumentClass", "ArgumentKind", "argument_kind"]

ArgumentKind = Literal["given", "composed"]

_COMPOSED = (
    "command commands cmd cmds script scripts code program snippet shell bash "
    "query queries q sql statement regex regexp pattern patterns glob "
    "patch diff edit edits "
    "message messages msg text content contents body comment comments notes "
    "summary description explanation reason rationale answer response reply feedback review "
    "prompt prompts instruction instructions task todo todos plan thought thoughts question questions "
    "objective finding findings "
    "markdown html template essay story post tweet caption"
)
#: Words that name a value the model writes: commands and code, queries and patterns, patches,
#: messages, prompts and free text.
COMPOSED_WORDS = frozenset(_COMPOSED.split())
_GIVEN = (
    "id ids identifier uuid key name names username user path paths file files filename "
    "filepath dir directory folder url uri urls link href email address phone number city "
    "country location place region zip postal postcode date time datetime timestamp day month "
    "year timezone zone tz currency symbol ticker isbn sku account branch ref revision sha "
    "hash commit tag version repo repository owner host hostname port ip domain type kind "
    "format mode unit units category status level language locale period"
)
#: Words that name a value the user or a tool result gives, read first so that a head noun wins
#: over a composed word before it (``message_id``, ``query_name``, ``content_type``, ``code_path``).
GIVEN_WORDS = frozenset(_GIVEN.split())
_VAGUE_WORDS = (
    "user number type kind format mode unit units category status level edit edits post response "
    "answer reply review plan story task"
)
#: Words of the lists that a description uses for too much to be read as its argument's kind:
#: "the number of", "the type of", "the user's", "the post to edit".
_VAGUE = frozenset(_VAGUE_WORDS.split())
_LANGUAGE_WORDS = "source python javascript js java shell bash sql html css program"
#: Words before ``code`` that make it source code: ``python_code``, ``source_code``.
_LANGUAGES = frozenset(_LANGUAGE_WORDS.split())
_CODE_TOOL_WORDS = "bash shell sh exec execute run python javascript sql eval terminal"
#: Words of a tool's name that say its one text is code.
_CODE_TOOLS = frozenset(_CODE_TOOL_WORDS.split())
#: ``format`` values the model writes; every other format is a value given.
_COMPOSED_FORMATS = frozenset({"regex"})
_TEXT = {"string", None}
# A word of a name or a description: letters, split where an identifier changes case.
_WORD = re.compile(r"[A-Za-z]+")
_CASE_CHANGE = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# A description's words and its punctuation, each a piece: where its opening phrase ends.
_PHRASE_WORD = re.compile(r"[A-Za-z][A-Za-z']*|[^\sA-Za-z]")
#: The words that end a description's opening phrase: prepositions, relative words, verbs of
#: purpose ("The path to the file", "The text that", "Conditions for the query").
_CUT_WORDS = (
    "to for of in on from with by about at as into that which who whose where when if or and "
    "used is are be should must will can"
)
_CUT = frozenset(_CUT_WORDS.split())


@dataclasses.dataclass(frozen=True)
class ArgumentClass:
    """An argument's kind, and what in its schema said so."""

    kind: ArgumentKind
    reason: str
    """What decided: ``a closed choice``, ``format "uri"``, ``name "command"``, ``description "path"`` ..."""


def argument_kind(name: str, schema: Any, tool: str | None = None) -> ArgumentClass:
    """Whether the argument ``name`` under ``schema`` (of ``tool``, when known) is given or
    composed, and why: the module's rule, first match wins."""
    schema = schema if isinstance(schema, Mapping) else {}
    if _closed(schema):
        return ArgumentClass("given", "a closed choice")
    form = schema.get("format")
    if isinstance(form, str):
        return ArgumentClass("composed" if form in _COMPOSED_FORMATS else "given", f"format {form!r}")
    kind = _type(schema)
    if kind not in _TEXT and kind not in ("array", "object"):
        return ArgumentClass("given", f"type {kind!r}")
    if kind == "array" and _type(_items(schema)) not in (*_TEXT, "array", "object"):
        return ArgumentClass("given", f"a list of {_type(_items(schema))!r}")
    if isinstance(schema.get("pattern"), str):
        return ArgumentClass("given", "a pattern to match")
    named = _words(name)
    if named:
        head = _head_kind(named)
        if head is not None:
            return ArgumentClass(head, f"name {named[-1]!r}")
        composed = next((word for word in named if word in COMPOSED_WORDS), None)
        if composed is not None:
            return ArgumentClass("composed", f"name {composed!r}")
    described = _described(schema.get("description"))
    if described is not None:
        return ArgumentClass(described[0], f"description {described[1]!r}")
    if tool is not None and kind in _TEXT and set(_words(tool)) & _CODE_TOOLS:
        return ArgumentClass("composed", f"tool {tool!r}")
    return ArgumentClass("given", "nothing says it is written")


def _closed(schema: Mapping[str, Any]) -> bool:
    """Whether a schema is a closed choice: an ``enum``, a ``const``, or a boolean."""
    kind = schema.get("type")
    return "enum" in schema or "const" in schema or kind == "boolean" or kind == ["boolean"]


def _type(schema: Any) -> str | None:
    """A schema's one type other than ``null`` (``["string", "null"]`` is ``string``), ``dict``
    read as ``object``; ``None`` when it names none or several."""
    if not isinstance(schema, Mapping):
        return None
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [item for item in kind if item != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if not isinstance(kind, str):
        return None
    return {"dict": "object", "str": "string", "list": "array", "tuple": "array"}.get(kind, kind)


def _items(schema: Mapping[str, Any]) -> Any:
    return schema.get("items")


def _words(text: str) -> list[str]:
    """The lower-case words of a name or a text: ``readFile`` and ``read_file`` are read, file."""
    return [word.casefold() for word in _WORD.findall(_CASE_CHANGE.sub(" ", text))]


def _head_kind(named: list[str]) -> ArgumentKind | None:
    """What the name's last word says, ``code`` read with the word before it."""
    head = named[-1]
    if head == "code":
        return "composed" if len(named) == 1 or named[-2] in _LANGUAGES else "given"
    if head in GIVEN_WORDS:
        return "given"
    if head in COMPOSED_WORDS:
        return "composed"
    return None


def _described(description: Any) -> tuple[ArgumentKind, str] | None:
    """The kind a description's opening phrase says (its words up to the first preposition,
    relative word or punctuation: "The absolute path" of "The absolute path to the file"), read
    as a name is, its vague words passed over; with the word that said it."""
    if not isinstance(description, str):
        return None
    phrase = []
    for word in _PHRASE_WORD.findall(description.strip()):
        if not word[0].isalpha() or word.casefold() in _CUT:
            break
        phrase.extend(_words(word))
    said = [word for word in phrase if word not in _VAGUE]
    if not said:
        return None
    head = _head_kind(said)
    if head is not None:
        return head, said[-1]
    composed = next((word for word in said if word in COMPOSED_WORDS and word != "code"), None)
    return None if composed is None else ("composed", composed)
