"""The words of a text, compared as a user and a model write them: case, accents, punctuation,
plurals and the way identifiers are spelled set aside.

"São Paulo", "sao-paulo" and "SaoPaulo" are the same words; "stocks" is "stock"; "3x**2"
is "3 x 2", so a formula's letters and digits meet the question's "3x^2". A value made of
words is grounded by the share of its words the conversation holds, stop words left out
unless the value is nothing else; a word written as two in the conversation ("New York" for
"newyork") is found among its letters run together, an initialism among the initials of the
conversation's words ("SSN" for "social security numbers"), an abbreviation among their first
letters ("EUR" for "euros"), and a longer form by its first five letters and more ("Germany"
for "German").
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["STOPWORDS", "heads", "squashed", "stem", "word_share", "words"]

#: Words too common to ground anything: articles, prepositions, pronouns and the like. A value
#: that is only these ("the", "it") is compared as it is.
_STOPWORDS = (
    "a an and are as at be but by can could do for from how i if in into is it its me my no not of on "
    "or our please so such than that the their then there these they this those to was we were what "
    "when where which who will with would you your"
)
STOPWORDS = frozenset(_STOPWORDS.split())

_VOWEL = re.compile(r"[aeiouy]")
# Runs of letters, or runs of digits: "3x2" is "3 x 2".
_WORD = re.compile(r"[^\W\d_]+|\d+")
# A case change inside a word: "readFile" -> "read File", "HTTPStatus" -> "HTTP Status".
_CASE_CHANGE = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# How short an abbreviation may be ("eur"), and how long a word must be for a longer form of it
# to be its ("german" for "germany"): shorter, they would be found in any long text.
_HEAD_LEAST = 3
_LONGER_LEAST = 5
# How many words an initialism stands for: two-letter ones would be found in any long text.
_INITIALS = (3, 5)
# How short a word run together may be and still be looked for among the letters of the text:
# below that, "an" or "is" would be found inside any longer word.
_SQUASHED_LEAST = 4


def _plain(text: str, *, split: bool = True) -> str:
    """``text`` without accents, and split where an identifier changes case (``split``)."""
    decomposed = unicodedata.normalize("NFKD", _CASE_CHANGE.sub(" ", text) if split else text)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def stem(word: str) -> str:
    """A word's endings taken off, so that its forms meet: plurals ("cities" -> "city", "boxes"
    -> "box"), "-ed" and "-ing" ("detailed" -> "detail", "stopping" -> "stop"), a final "e"
    ("baked" and "bake" -> "bak")."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for ending in ("ing", "ed"):
        rest = word[: -len(ending)]
        if word.endswith(ending) and len(rest) >= 3 and _VOWEL.search(rest):
            word = rest[:-1] if rest[-1] == rest[-2] and rest[-1] not in "lsz" else rest
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def words(text: str) -> set[str]:
    """The stems of ``text``'s words, lower-case, read with identifiers split at a change of case
    ("firstName": "first", "name") and whole ("firstname"); and the initials of each run of
    three to five words, stop words passed over ("social security numbers": "ssn")."""
    found = {stem(word) for split in (True, False) for word in _written(text, split=split)}
    content = [word for word in _written(text, split=True) if word not in STOPWORDS and word.isalpha()]
    for size in range(_INITIALS[0], _INITIALS[1] + 1):
        for start in range(len(content) - size + 1):
            found.add("".join(word[0] for word in content[start : start + size]))
    return found


def _written(text: str, *, split: bool) -> list[str]:
    return _WORD.findall(_plain(text, split=split).casefold())


def squashed(text: str) -> str:
    """``text``'s letters and digits alone, lower-case, accents off: where a word the text splits is found."""
    return "".join(_WORD.findall(_plain(text).casefold()))


def heads(text: str) -> set[str]:
    """The first three letters and more of each of ``text``'s words, short of the whole word:
    what a value that abbreviates one is ("eur" for "euros", "info" for "information")."""
    return {word[:size] for word in _written(text, split=True) for size in range(_HEAD_LEAST, len(word))}


def _found(word: str, known: frozenset[str], shortened: frozenset[str], letters: str) -> bool:
    """Whether a value's word is among the text's: as a word, an abbreviation of one, a longer
    form of one ("germany" for "german"), or a long one among its letters run together."""
    return (
        stem(word) in known
        or word in shortened
        or any(word[:size] in known for size in range(_LONGER_LEAST, len(word)))
        or (len(word) >= _SQUASHED_LEAST and word in letters)
    )


def word_share(
    value: str, known: frozenset[str], shortened: frozenset[str], letters: str
) -> tuple[float, list[str]]:
    """The share of ``value``'s words found among the text's (``known``, their stems; ``shortened``,
    their :func:`heads`; ``letters``, all of it run together), and the words not found."""
    readings = []
    # Read with identifiers split at a change of case, then whole: the better reading counts.
    for split in (True, False):
        mine = _written(value, split=split)
        content = [word for word in mine if word not in STOPWORDS] or mine
        if not content:
            return 1.0, []
        missing = [word for word in content if not _found(word, known, shortened, letters)]
        readings.append((1 - len(missing) / len(content), missing))
    return max(readings, key=lambda reading: reading[0])
