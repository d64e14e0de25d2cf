"""The JSON pieces of our route grammar: strings, numbers, lists, objects' members, and any value."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._limits import (
    BOUNDED_ARRAY_ITEMS,
    BOUNDED_STRING_CHARS,
    BOUNDED_VALUE_DEPTH,
    FINITE_NUMBER_DIGITS,
    GBNF_MAX_REPETITION,
    GRAMMAR_EXPONENT_DIGITS,
    GRAMMAR_NUMBER_DIGITS,
)
from .gbnf_tree import Alt, Cls, Expr, Grammar, Lit, Ref, Rep, Seq, seq

__all__ = ["Values", "is_whole"]

_DIGIT = Cls(((0x30, 0x39),))
_HEX = Cls(((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)))
# A JSON string's character: anything but '"', '\' and controls, or an escape. \u escapes of
# surrogates are left out: a lone one is no Unicode text (parse_route refuses it), and a
# character beyond U+FFFF is written as itself.
_CHAR = Alt(
    (
        Cls((((0x22, 0x22), (0x5C, 0x5C), (0x00, 0x1F))), negated=True),
        Seq(
            (
                Lit("\\"),
                Alt(
                    (
                        Cls(tuple((ord(c), ord(c)) for c in '"/\\bfnrt')),
                        Seq(
                            (
                                Lit("u"),
                                Alt(
                                    (
                                        Seq(
                                            (
                                                Cls(
                                                    (
                                                        (0x30, 0x39),
                                                        (0x41, 0x43),
                                                        (0x45, 0x46),
                                                        (0x61, 0x63),
                                                        (0x65, 0x66),
                                                    )
                                                ),
                                                Rep(_HEX, 3, 3),
                                            )
                                        ),
                                        Seq(
                                            (
                                                Cls(((0x44, 0x44), (0x64, 0x64))),
                                                Cls(((0x30, 0x37),)),
                                                Rep(_HEX, 2, 2),
                                            )
                                        ),
                                    )
                                ),
                            )
                        ),
                    )
                ),
            )
        ),
    )
)
_DEFAULT_BOUNDS = {
    "maxLength": BOUNDED_STRING_CHARS,
    "maxItems": BOUNDED_ARRAY_ITEMS,
    "maxProperties": BOUNDED_ARRAY_ITEMS,
}
_MAX_EXPONENT = 10**GRAMMAR_EXPONENT_DIGITS - 1
_Note = Callable[[str, str, str, str], None]
_RANGE = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")


def is_whole(count: object) -> bool:
    """Whether ``count`` is a float JSON Schema reads as a non-negative integer (3.0), as the
    catalogue's metaschema check does."""
    return isinstance(count, float) and count >= 0 and count.is_integer()


class Values:
    """Rules for JSON values in one grammar, with its separators and bounds."""

    def __init__(self, grammar: Grammar, *, colon: str, comma: str, bounded: bool) -> None:
        self.grammar = grammar
        self.colon, self.comma, self.bounded = colon, comma, bounded
        self._anything: str | None = None

    def default_bound(self, keyword: str) -> int:
        return _DEFAULT_BOUNDS[keyword]

    def counts(
        self, low: int, high: int | None, at: str, low_key: str, high_key: str, note: _Note
    ) -> tuple[int, int | None] | None:
        """``(low, high)`` within llama.cpp's repetition limit, noted where widened; ``None`` if empty."""
        if high is not None and low > high:
            return None
        if low > GBNF_MAX_REPETITION:
            message = f"{low} is past llama.cpp's repetition limit: {GBNF_MAX_REPETITION} is used"
            note(at, low_key, "lowers", message)
            low = GBNF_MAX_REPETITION
        if high is not None and high > GBNF_MAX_REPETITION:
            message = f"{high} is past llama.cpp's repetition limit ({GBNF_MAX_REPETITION}): no upper bound"
            note(at, high_key, "unbounded", message)
            return low, None
        if high is None and self.bounded:
            high = max(low, self.default_bound(high_key))
            note(at, high_key, "bounds", f"unbounded in the schema: at most {high} (bounded decisions)")
        return low, high

    def scalar(self, kind: str) -> str:
        if kind == "null":
            return self.grammar.rule("null", Lit("null"))
        return self.grammar.rule("boolean", Alt((Lit("true"), Lit("false"))))

    def string(self, low: int, high: int | None) -> str:
        if high == 0:
            return self.grammar.rule("empty-string", Lit('""'))
        char = self.grammar.rule("char", _CHAR)
        name = "string" if (low, high) == (0, None) else f"string-{low}-{'n' if high is None else high}"
        return self.grammar.rule(name, seq(Lit('"'), Rep(Ref(char), low, high), Lit('"')))

    def free_string(self) -> str:
        """A string the schema does not bound: bounded by the default in bounded mode."""
        return self.string(0, BOUNDED_STRING_CHARS if self.bounded else None)

    def number(
        self, schema: Mapping[str, Any], at: str, *, integer: bool, note: Callable[[str, str, str, str], None]
    ) -> str:
        """Sign and digits; ``minimum``/``maximum`` bound the sign and the digit count, no more."""
        given = {
            k: schema[k]
            for k in _RANGE
            if isinstance(schema.get(k), (int, float)) and not isinstance(schema.get(k), bool)
        }
        lower = min((given[k] for k in ("minimum", "exclusiveMinimum") if k in given), default=None)
        upper = max((given[k] for k in ("maximum", "exclusiveMaximum") if k in given), default=None)
        negative = lower is None or lower < 0
        need = max((len(str(int(abs(bound)))) for bound in given.values()), default=0)
        digits = need if lower is not None and upper is not None else max(GRAMMAR_NUMBER_DIGITS, need)
        digits = max(1, min(digits, GBNF_MAX_REPETITION))
        positive = integer and (given.get("minimum", -1) >= 1 or given.get("exclusiveMinimum", -1) >= 0)
        exact = (
            integer
            and set(given) <= {"minimum", "maximum"}
            and given.get("minimum") in (0, 1)
            and given.get("maximum", 10**digits - 1) == 10**digits - 1
        )
        unread = [k for k in _RANGE if k in schema and k not in given]
        for keyword in [k for k in _RANGE if k in given][:1] if not exact else []:
            note(at, keyword, "ignores", "the range is enforced only as a sign and a number of digits")
        for keyword in unread[:1]:
            note(at, keyword, "ignores", f"{keyword} is not a number and is not applied")
        first = Cls(((0x31, 0x39),))
        whole: Expr = first if positive else _DIGIT
        if digits > 1:
            whole = seq(first, Rep(_DIGIT, 0, digits - 1))
            whole = whole if positive else Alt((Lit("0"), whole))
        parts: list[Expr] = [Rep(Lit("-"), 0, 1)] if negative else []
        parts.append(whole)
        if not integer and digits > FINITE_NUMBER_DIGITS:
            # A fraction or an exponent makes the number a double, and a double has no
            # 309-digit integer part: parse_route would refuse it as not finite.
            note(at, "", "narrows", f"past {FINITE_NUMBER_DIGITS} digits only whole numbers are written")
        elif not integer:
            fraction = self.grammar.rule("fraction", seq(Lit("."), Rep(_DIGIT, 1, GRAMMAR_NUMBER_DIGITS)))
            # The largest exponent that keeps every mantissa of ``digits`` digits finite; past
            # it, only negative exponents (which can only make the number smaller).
            signs = ((0x2B, 0x2B), (0x2D, 0x2D)) if digits + _MAX_EXPONENT <= FINITE_NUMBER_DIGITS else ()
            sign = Rep(Cls(signs), 0, 1) if signs else Lit("-")
            exponent = self.grammar.rule(
                "exponent" if signs else "negative-exponent",
                seq(Cls(((0x45, 0x45), (0x65, 0x65))), sign, Rep(_DIGIT, 1, GRAMMAR_EXPONENT_DIGITS)),
            )
            parts += [Rep(Ref(fraction), 0, 1), Rep(Ref(exponent), 0, 1)]
        kind = "integer" if integer else "number"
        name = (
            kind
            if (negative, digits) == (True, GRAMMAR_NUMBER_DIGITS)
            else f"{kind}-{'p' if positive else '' if negative else 'u'}{digits}"
        )
        return self.grammar.rule(name, seq(*parts))

    def listing(self, hint: str, open: str, item: Ref, close: str, low: int, high: int | None) -> str:
        """``open`` then ``low`` to ``high`` items separated by commas, then ``close``."""
        if high == 0:
            return self.grammar.rule(f"empty-{hint}", Lit(open + close))
        after = self.grammar.rule(f"{hint}-next", seq(Lit(self.comma), item))
        more = None if high is None else high - 1
        tail: list[Expr] = [] if more == 0 else [Rep(Ref(after), max(low - 1, 0), more)]
        if low == 0:
            items = self.grammar.rule(f"{hint}-items", seq(item, *tail))
            return self.grammar.rule(hint, seq(Lit(open), Rep(Ref(items), 0, 1), Lit(close)))
        return self.grammar.rule(hint, seq(Lit(open), item, *tail, Lit(close)))

    def members(self, hint: str, members: Sequence[tuple[Expr, bool]]) -> Expr:
        """An object of ``(key and value, required)`` members in this order, each optional one or not.

        Linear in the members: with a required member, the optional ones before it carry
        their comma after, the ones after it before; with none required, one rule per member
        says what may follow it.
        """
        comma = Lit(self.comma)
        if not members:
            return Lit("{}")
        if any(required for _, required in members):
            parts: list[Expr] = [Lit("{")]
            started = False
            for member, required in members:
                if required:
                    parts += [comma, member] if started else [member]
                    started = True
                else:
                    pair = seq(comma, member) if started else seq(member, comma)
                    parts.append(Rep(Ref(self.grammar.rule(f"{hint}-optional", pair)), 0, 1))
            return seq(*parts, Lit("}"))
        starts: list[Expr] = []
        tail: str | None = None
        for index in reversed(range(len(members))):
            member = members[index][0]
            starts.append(member if tail is None else seq(member, Ref(tail)))
            if index:
                maybe = Rep(Ref(self.grammar.rule(f"{hint}-optional", seq(comma, member))), 0, 1)
                tail = self.grammar.rule(f"{hint}-rest", maybe if tail is None else seq(maybe, Ref(tail)))
        body = starts[0] if len(starts) == 1 else Alt(tuple(reversed(starts)))
        return seq(Lit("{"), Rep(Ref(self.grammar.rule(f"{hint}-members", body)), 0, 1), Lit("}"))

    def anything(self) -> str:
        """Any JSON value: nested at most BOUNDED_VALUE_DEPTH deep in bounded mode."""
        if self._anything is not None:
            return self._anything
        scalars: tuple[Expr, ...] = (
            Ref(self.free_string()),
            Ref(self.number({}, "", integer=False, note=lambda *_: None)),
            Lit("true"),
            Lit("false"),
            Lit("null"),
        )
        if not self.bounded:
            name = self.grammar.reserve("value")
            member = self.grammar.rule("member", seq(Ref(self.free_string()), Lit(self.colon), Ref(name)))
            containers = (
                Ref(self.listing("object", "{", Ref(member), "}", 0, None)),
                Ref(self.listing("array", "[", Ref(name), "]", 0, None)),
            )
            self._anything = self.grammar.define(name, Alt(containers + scalars))
            return self._anything
        name = self.grammar.rule("value-0", Alt(scalars))
        for depth in range(1, BOUNDED_VALUE_DEPTH + 1):
            member = self.grammar.rule(
                f"member-{depth}", seq(Ref(self.free_string()), Lit(self.colon), Ref(name))
            )
            containers = (
                Ref(self.listing(f"object-{depth}", "{", Ref(member), "}", 0, BOUNDED_ARRAY_ITEMS)),
                Ref(self.listing(f"array-{depth}", "[", Ref(name), "]", 0, BOUNDED_ARRAY_ITEMS)),
            )
            name = self.grammar.rule(f"value-{depth}", Alt(containers + scalars))
        self._anything = name
        return name
