"""Our own route grammar: a JSON schema compiled to compact GBNF that llama.cpp's parser accepts.

``compiler`` walks the schema (and keeps the last grammars it compiled); ``compiled`` holds
what it answers, a compiled grammar and its notes; ``values`` builds the rules for strings,
numbers, arrays and objects; ``gbnf_tree`` is the GBNF tree, its escaping and the longest reply
it allows; ``keywords`` says which JSON Schema keywords are compiled, widened or refused.
"""

from .compiled import GrammarNote, RouteGrammar
from .compiler import route_grammar

__all__ = ["GrammarNote", "RouteGrammar", "route_grammar"]
