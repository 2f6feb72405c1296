"""SPARQL 1.1's operators and functions where rdflib 7 gets them wrong (tefq.oracle.windowed.corrections
puts them in place; each is checked by the W3C tests named beside it, docs/windowed-oracle.md).

Values follow XPath/XQuery Functions and Operators: numeric type promotion (integer < decimal <
float < double), casts between xsd:string, boolean, integer, decimal, float and double, the
XPath regular-expression flags (i s m x q), and comparisons that are type errors when the two
values have no common order (a number and a string, two literals of an unknown datatype, a
dateTime with a time zone and one without whose order the missing zone could change).
"""
from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from rdflib import BNode, Literal, URIRef
from rdflib.namespace import RDF, XSD
from rdflib.plugins.sparql.aggregates import Average as _RdflibAverage
from rdflib.plugins.sparql.aggregates import Maximum as _RdflibMaximum
from rdflib.plugins.sparql.aggregates import Minimum as _RdflibMinimum
from rdflib.plugins.sparql.aggregates import Sum as _RdflibSum
from rdflib.plugins.sparql.evalutils import NotBoundError, _eval
from rdflib.paths import AlternativePath, InvPath, MulPath, SequencePath
from rdflib.plugins.sparql.sparql import SPARQLError

from tefq.semantics.expressions import double_sum, to_double
from tefq.semantics.values import decimal_lexical, double_lexical

INTEGERS = frozenset(XSD[t] for t in (
    "integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger", "negativeInteger",
    "nonPositiveInteger", "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte"))
NUMERIC_RANK = {XSD.decimal: 1, XSD.float: 2, XSD.double: 3}  # xsd:integer and its subtypes: 0
CASTS = (XSD.string, XSD.boolean, XSD.integer, XSD.decimal, XSD.float, XSD.double)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)")
_DOUBLE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?INF|NaN")
_COMPUTED_SPECIALS = ("nan", "inf", "-inf")  # how rdflib spells a NaN or an infinity it computed


# ---------------------------------------------------------------- values of literals
def number(x: Any) -> tuple[int, int | Decimal | float]:
    """(rank, value) of a numeric literal; a SPARQLError for anything else (or an ill-typed one)."""
    if not isinstance(x, Literal) or x.datatype is None:
        raise SPARQLError(f"not a number: {x!r}")
    lex = str(x).strip()
    try:
        if x.datatype in INTEGERS and _INTEGER.fullmatch(lex):
            return 0, int(lex)
        if x.datatype == XSD.decimal and _DECIMAL.fullmatch(lex):
            return 1, Decimal(lex)
        if x.datatype in (XSD.float, XSD.double) and (_DOUBLE.fullmatch(lex) or lex in _COMPUTED_SPECIALS):
            return NUMERIC_RANK[x.datatype], float(lex.replace("INF", "inf"))
    except (ValueError, InvalidOperation):
        pass
    raise SPARQLError(f"not a number: {x!r}")


def _numeric_literal(rank: int, value: int | Decimal | float) -> Literal:
    dt = (XSD.integer, XSD.decimal, XSD.float, XSD.double)[rank]
    if rank == 1:
        value = Decimal(value)
    elif rank >= 2:
        value = float(value)
    return Literal(value, datatype=dt)


def _promoted(a: int | Decimal | float, b: int | Decimal | float, rank: int):
    if rank >= 2:
        return float(a), float(b)
    if rank == 1:
        return Decimal(a), Decimal(b)
    return a, b


def _is_string(x: Any) -> bool:
    return isinstance(x, Literal) and x.language is None and x.datatype in (None, XSD.string)


# ---------------------------------------------------------------- arithmetic
def multiplicative(e, ctx) -> Literal:
    """`*` and `/` with XPath's type promotion (rdflib makes every product an xsd:decimal):
    projexp03, multiply-numbers-cast, divide-numbers-cast."""
    first, others = e.expr, e.other  # each read evaluates the operands again: read once
    if others is None:
        return first
    rank, acc = number(first)
    for op, term in zip(e.op, others):
        r, v = number(term)
        rank = max(rank, r)
        if op == "/" and rank == 0:
            rank = 1  # integer division gives an xsd:decimal
        a, b = _promoted(acc, v, rank)
        if op == "*":
            acc = a * b
        elif b == 0 and rank < 2:
            raise SPARQLError("division by zero")
        elif b == 0:
            acc = math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1, b)
        else:
            acc = a / b
    return _numeric_literal(rank, acc)


def additive(e, ctx) -> Literal:
    """`+` and `-` of numbers with XPath's type promotion; an ill-typed number is an error (rdflib
    recurses without end on `"abc"^^xsd:integer + 1`). Other operands (dateTime and duration
    arithmetic, rdflib's extension; type errors): rdflib's."""
    from rdflib.plugins.sparql.operators import AdditiveExpression

    first, others = e.expr, e.other  # each read evaluates the operands again: read once
    if others is None:
        return first
    operands = [first, *others]
    if not all(isinstance(x, Literal) and (x.datatype in INTEGERS or x.datatype in NUMERIC_RANK) for x in operands):
        for x in operands:
            if isinstance(x, Literal) and (x.datatype in INTEGERS or x.datatype in NUMERIC_RANK):
                number(x)  # an ill-typed number is an error whatever it meets
        return AdditiveExpression(e, ctx)
    rank, acc = number(first)
    for op, term in zip(e.op, others):
        r, v = number(term)
        rank = max(rank, r)
        a, b = _promoted(acc, v, rank)
        acc = a + b if op == "+" else a - b
    return _numeric_literal(rank, acc)


def is_numeric(e, ctx) -> Literal:
    """isNumeric: a well-typed number only (rdflib: any literal of a numeric datatype)."""
    try:
        number(e.arg)
    except SPARQLError:
        return Literal(False)
    return Literal(True)


def unary_minus(e, ctx) -> Literal:
    """`-x` keeps x's numeric type (rdflib writes -xsd:float as xsd:double): unminus-2."""
    rank, v = number(e.expr)
    return _numeric_literal(rank, -v)


def unary_plus(e, ctx) -> Literal:
    """`+x` is x's value, of x's numeric type: unplus-2."""
    rank, v = number(e.expr)
    return _numeric_literal(rank, v)


# ---------------------------------------------------------------- casts
def cast(e, ctx) -> Literal:
    """XPath casts to xsd:string, boolean, integer, decimal, float and double (cast-*,
    agg-group-fn; rdflib refuses a boolean or a double as an integer and so on)."""
    args = e.expr  # evaluated at each read: read once
    if not args or len(args) != 1:
        raise SPARQLError("a cast takes one argument")
    x, target = args[0], URIRef(e.iri)
    if target == XSD.string:
        if isinstance(x, URIRef):
            return Literal(str(x), datatype=XSD.string)
        if not isinstance(x, Literal):
            raise SPARQLError(f"cannot cast {x!r} to xsd:string")
        return Literal(_canonical_lexical(x), datatype=XSD.string)
    if not isinstance(x, Literal) or x.language is not None:
        raise SPARQLError(f"cannot cast {x!r}")
    value = _source_value(x)
    try:
        return _CAST_TO[target](value)
    except (ValueError, InvalidOperation, OverflowError):
        raise SPARQLError(f"cannot cast {x!r} to {target}") from None


def _source_value(x: Literal) -> Any:
    """A literal as a cast reads it: a number, a bool, or (a string) its text."""
    if x.datatype in (None, XSD.string):
        return str(x)
    if x.datatype == XSD.boolean:
        lex = str(x).strip()
        if lex in ("true", "1"):
            return True
        if lex in ("false", "0"):
            return False
        raise SPARQLError(f"ill-typed boolean {x!r}")
    if x.datatype in INTEGERS or x.datatype in NUMERIC_RANK:
        return number(x)[1]
    raise SPARQLError(f"cannot cast a literal of datatype {x.datatype}")


def _to_boolean(v: Any) -> Literal:
    if isinstance(v, str):
        s = v.strip()
        if s not in ("true", "false", "1", "0"):
            raise ValueError(s)
        return Literal(s in ("true", "1"))
    return Literal(bool(v) and not (isinstance(v, float) and math.isnan(v)))


def _to_integer(v: Any) -> Literal:
    if isinstance(v, str):
        if not _INTEGER.fullmatch(v.strip()):
            raise ValueError(v)
        return Literal(int(v.strip()), datatype=XSD.integer)
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(v)
    return Literal(int(v), datatype=XSD.integer)


def _to_decimal(v: Any) -> Literal:
    if isinstance(v, str):
        if not _DECIMAL.fullmatch(v.strip()):
            raise ValueError(v)
        return Literal(Decimal(v.strip()), datatype=XSD.decimal)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(v)
        return Literal(Decimal(repr(v)), datatype=XSD.decimal)
    return Literal(Decimal(int(v)) if isinstance(v, bool) else Decimal(v), datatype=XSD.decimal)


def _to_float(dt: URIRef) -> Callable[[Any], Literal]:
    def to(v: Any) -> Literal:
        if isinstance(v, str):
            if not _DOUBLE.fullmatch(v.strip()):
                raise ValueError(v)
            return Literal(v.strip(), datatype=dt)
        return Literal(float(v), datatype=dt)
    return to


_CAST_TO = {XSD.boolean: _to_boolean, XSD.integer: _to_integer, XSD.decimal: _to_decimal,
            XSD.float: _to_float(XSD.float), XSD.double: _to_float(XSD.double)}


def _canonical_lexical(x: Literal) -> str:
    """A literal's text as xsd:string takes it: numbers and booleans in their canonical form."""
    try:
        v = _source_value(x)
    except SPARQLError:
        return str(x)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, Decimal):
        return decimal_lexical(v)
    if isinstance(v, float):
        return double_lexical(v)
    return str(x)


# ---------------------------------------------------------------- strings
def _no_arguments(e) -> bool:
    """rdflib parses `f()` with `rdf:nil` as the argument list (read unevaluated)."""
    arg = dict.get(e, "arg")
    return not arg or arg == RDF.nil


_MADE = "tefq: made by BNODE"  # a key tag in the query context's blank-node table


def bnode(e, ctx) -> BNode:
    """BNODE(str): one blank node per string and solution (rdflib: one per string for the whole
    query, bnode01); BNODE(): a new one each call. The solution is the row's bindings less the
    blank nodes BNODE made for it, so `(BNODE(?s) AS ?b1) (BNODE(?s) AS ?b2)` binds one node."""
    a = e.arg
    if a is None:
        return BNode()
    if not isinstance(a, Literal):
        raise SPARQLError("BNODE takes no argument or a string")
    table = ctx.bnodes
    solution = frozenset((k, v) for k, v in ctx.items() if not (isinstance(v, BNode) and (_MADE, v) in table))
    key = (_MADE, a, solution)
    if key not in table:
        table[key] = node = BNode()
        table[(_MADE, node)] = node
    return table[key]


def concat(e, ctx) -> Literal:
    """CONCAT() of nothing is "" (concat-empty); else rdflib's."""
    from rdflib.plugins.sparql.operators import Builtin_CONCAT

    if _no_arguments(e):
        return Literal("")
    return Builtin_CONCAT(e, ctx)


def coalesce(e, ctx):
    """COALESCE() of nothing is an error (coalesce-empty); else rdflib's."""
    from rdflib.plugins.sparql.operators import Builtin_COALESCE

    if _no_arguments(e):
        raise SPARQLError("COALESCE of no argument")
    return Builtin_COALESCE(e, ctx)


def strdt(e, ctx) -> Literal:
    """STRDT takes a simple literal only (strdt01, strdt03-rdf11)."""
    text, datatype = e.arg1, e.arg2
    if not _is_string(text) or not isinstance(datatype, URIRef):
        raise SPARQLError("STRDT takes a simple literal and an IRI")
    return Literal(str(text), datatype=datatype)


def strlang(e, ctx) -> Literal:
    """STRLANG takes a simple literal only."""
    text, lang = e.arg1, e.arg2
    if not _is_string(text) or not _is_string(lang) or not str(lang):
        raise SPARQLError("STRLANG takes a simple literal and a language tag")
    return Literal(str(text), lang=str(lang).lower())


def xpath_regex(pattern: str, flags: str) -> re.Pattern:
    """An XPath regular expression with its flags: i, s, m, x (whitespace outside character
    classes removed), q (the pattern is a literal string)."""
    py = 0
    for f in flags:
        if f not in "ismxq":
            raise SPARQLError(f"unknown regex flag {f!r}")
        py |= {"i": re.IGNORECASE, "s": re.DOTALL, "m": re.MULTILINE}.get(f, 0)
    if "q" in flags:
        pattern = re.escape(pattern)
    elif "x" in flags:
        pattern = re.sub(r"\[[^\]]*\]|\s+", lambda m: m.group(0) if m.group(0).startswith("[") else "", pattern)
    try:
        return re.compile(pattern, py)
    except re.error as err:
        raise SPARQLError(f"bad regular expression: {err}") from None


def _string_arg(x: Any) -> Literal:
    if not isinstance(x, Literal) or (x.datatype not in (None, XSD.string)):
        raise SPARQLError(f"not a string: {x!r}")
    return x


def _flags(e) -> str:
    """A REGEX's or REPLACE's flags argument ("" when absent), evaluated once."""
    given = e.flags
    return str(_string_arg(given)) if given is not None else ""


def regex(e, ctx) -> Literal:
    """REGEX with every XPath flag (regex-no-metacharacters*, regex-ignore-whitespaces*)."""
    text, pattern = _string_arg(e.text), _string_arg(e.pattern)
    flags = _flags(e)
    return Literal(bool(xpath_regex(str(pattern), flags).search(str(text))))


def replace(e, ctx) -> Literal:
    """REPLACE with its flags (rdflib passes them to re.sub as the count:
    replace-case-insensitive); `$n` is group n."""
    text, pattern, replacement = _string_arg(e.arg), _string_arg(e.pattern), _string_arg(e.replacement)
    flags = _flags(e)
    compiled = xpath_regex(str(pattern), flags)
    if compiled.search(""):
        raise SPARQLError("REPLACE: the pattern matches the empty string")
    template = str(replacement)

    def expand(m: re.Match) -> str:  # `$n`: group n; `\$` and `\\`: the character itself
        return re.sub(r"\\([\\$])|\$([0-9]+)", lambda r: r.group(1) or (m.group(int(r.group(2))) or ""), template)

    return Literal(compiled.sub(expand, str(text)), datatype=text.datatype, lang=text.language)


# ---------------------------------------------------------------- comparisons
_KNOWN = frozenset(INTEGERS | set(NUMERIC_RANK) | {XSD.string, XSD.boolean, XSD.dateTime, XSD.date, XSD.time,
                                                    XSD.duration, XSD.dayTimeDuration, XSD.yearMonthDuration})
_TZ_SPAN = timedelta(hours=14)


def _kind(x: Literal) -> str:
    if x.language is not None:
        return "lang"
    if x.datatype in (None, XSD.string):
        return "string"
    if x.datatype in INTEGERS or x.datatype in NUMERIC_RANK:
        return "numeric"
    if x.datatype == XSD.boolean:
        return "boolean"
    if x.datatype == XSD.dateTime:
        return "dateTime"
    return "other"


def _datetime(x: Literal) -> tuple[datetime, bool]:
    """A dateTime as (UTC instant, has a time zone); a naive one read as if in UTC."""
    lex = str(x).strip().replace("Z", "+00:00")
    midnight = "T24:00:00" in lex  # the end of a day is the next day's 00:00 (eq-dateTime)
    try:
        d = datetime.fromisoformat(lex.replace("T24:00:00", "T00:00:00")) + timedelta(days=int(midnight))
    except ValueError:
        raise SPARQLError(f"ill-typed dateTime {x!r}") from None
    if d.tzinfo is None:
        return d.replace(tzinfo=timezone.utc), False
    return d.astimezone(timezone.utc), True


def _order(a: Literal, b: Literal) -> int:
    """-1, 0, 1: the order of two literals of one comparable kind; a SPARQLError when their values
    have no order (different kinds, an unknown datatype, an indeterminate dateTime pair)."""
    ka, kb = _kind(a), _kind(b)
    if ka != kb or ka in ("other", "lang"):
        raise SPARQLError(f"cannot compare {a!r} and {b!r}")
    if ka == "numeric":
        (_, x), (_, y) = number(a), number(b)
        if isinstance(x, float) or isinstance(y, float):
            x, y = float(x), float(y)
            if math.isnan(x) or math.isnan(y):
                raise SPARQLError("NaN has no order")
        elif isinstance(x, Decimal) or isinstance(y, Decimal):
            x, y = Decimal(x), Decimal(y)
    elif ka == "boolean":
        x, y = _source_value(a), _source_value(b)
    elif ka == "dateTime":
        (x, zx), (y, zy) = _datetime(a), _datetime(b)
        if zx != zy:  # XSD's partial order: the missing zone is anywhere in +-14:00
            if zx:
                y_lo, y_hi, xv = y - _TZ_SPAN, y + _TZ_SPAN, x
                if xv < y_lo:
                    return -1
                if xv > y_hi:
                    return 1
            else:
                x_lo, x_hi = x - _TZ_SPAN, x + _TZ_SPAN
                if x_hi < y:
                    return -1
                if x_lo > y:
                    return 1
            raise SPARQLError("indeterminate dateTime order")
    else:
        x, y = str(a), str(b)
    return (x > y) - (x < y)


# ---------------------------------------------------------------- order (ORDER BY, MIN, MAX)
def order_key(term: Any) -> tuple:
    """A key for SPARQL's ORDER BY order (§15.1), total so that no sort or MIN/MAX fails (rdflib's
    raises on NaN against a decimal, or on an error value): unbound and errors < blank nodes <
    IRIs < literals. Literals by kind (numbers, booleans, dateTimes, simple strings, language
    strings, then the rest: other datatypes and ill-typed literals), within a kind by value as
    `<` orders them (NaN before every number; a dateTime without a zone as if in UTC), ties
    between different terms broken by datatype, text and language."""
    if isinstance(term, BNode):
        return (1, str(term))
    if isinstance(term, URIRef):
        return (2, str(term))
    if not isinstance(term, Literal):
        return (0,)
    text = (str(term.datatype or ""), str(term), term.language or "")
    kind = _kind(term)
    try:
        if kind == "numeric":
            v = number(term)[1]
            nan = isinstance(v, float) and math.isnan(v)
            return (3, 0, not nan, 0 if nan else v) + text
        if kind == "boolean":
            return (3, 1, _source_value(term)) + text
        if kind == "dateTime":
            return (3, 2, _datetime(term)[0]) + text
    except SPARQLError:
        return (3, 5) + text  # ill-typed: with the datatypes that have no order
    if kind == "string":
        return (3, 3, str(term)) + text
    if kind == "lang":
        return (3, 4, str(term), term.language) + text
    return (3, 5) + text


class DistinctMulPath(MulPath):
    """`p*`, `p+`, `p?` as a set of pairs (rdflib repeats a pair when the inner path is itself
    zero-length: `((:P)*)*`, pp37)."""

    def eval(self, graph, subj=None, obj=None, first=True):  # type: ignore[no-untyped-def]
        seen = set()
        for pair in super().eval(graph, subj, obj, first):
            if pair not in seen:
                seen.add(pair)
                yield pair


def distinct_paths(path):
    """`path` with every MulPath a DistinctMulPath (other parts rebuilt around them)."""
    if isinstance(path, MulPath):
        return DistinctMulPath(distinct_paths(path.path), path.mod)
    if isinstance(path, (SequencePath, AlternativePath)):
        return type(path)(*[distinct_paths(a) for a in path.args])
    if isinstance(path, InvPath):
        return InvPath(distinct_paths(path.arg))
    return path


def _numbers_compared(a: Literal, b: Literal) -> tuple | None:
    """Two well-typed numbers promoted to one type, or None."""
    try:
        (ra, x), (rb, y) = number(a), number(b)
    except SPARQLError:
        return None
    return _promoted(x, y, max(ra, rb))


def relational(e, ctx) -> Literal:
    """= != < > <= >= with SPARQL's operator mapping (open-eq-*, open-cmp-*, eq-dateTime,
    dateTime-*-2): equal terms are equal; literals compare by value when they have a common
    order, else `=`/`!=` are type errors unless both are of known kinds (then different)."""
    from rdflib.plugins.sparql.operators import RelationalExpression

    a, b, op = e.expr, e.other, e.op
    if b is None or op in ("IN", "NOT IN") or not isinstance(a, Literal) or not isinstance(b, Literal):
        return RelationalExpression(e, ctx)
    numbers = _numbers_compared(a, b)
    if numbers is not None:  # by value, NaN unequal to itself and unordered (op:numeric-equal, -less-than)
        x, y = numbers
        return Literal({"=": x == y, "!=": x != y, "<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}[op])
    if op in ("=", "!="):
        if a == b and a.language == b.language and a.datatype == b.datatype:
            return Literal(op == "=")
        try:
            same = _order(a, b) == 0
        except SPARQLError:
            if _kind(a) == "lang" and _kind(b) == "lang":
                same = False
            elif _kind(a) != _kind(b) and {_kind(a), _kind(b)} <= {"string", "numeric", "boolean", "dateTime",
                                                                     "lang"}:
                same = False
            else:
                raise
        return Literal(same == (op == "="))
    c = _order(a, b)
    return Literal({"<": c < 0, ">": c > 0, "<=": c <= 0, ">=": c >= 0}[op])


EXPRESSIONS: dict[str, Callable] = {
    "MultiplicativeExpression": multiplicative, "AdditiveExpression": additive, "UnaryMinus": unary_minus,
    "UnaryPlus": unary_plus, "Builtin_CONCAT": concat, "Builtin_COALESCE": coalesce, "Builtin_STRDT": strdt,
    "Builtin_STRLANG": strlang, "Builtin_REGEX": regex, "Builtin_REPLACE": replace, "RelationalExpression": relational,
    "Builtin_isNUMERIC": is_numeric, "Builtin_BNODE": bnode,
}


# ---------------------------------------------------------------- aggregates
def _argument(accumulator, row) -> Any:
    """An aggregate's expression in `row`: its value (a SPARQLError for an error), None if unbound."""
    try:
        return _eval(accumulator.expr, row)
    except NotBoundError:
        return None


class _Errors:
    """An aggregate over a value that is not a number is an error (unbound), not a skipped row
    (rdflib skips it: agg-err-01). A sum that is a double (or float) is the exact sum of the
    values as doubles, rounded once, as TEF's SUM (docs/semantics.md, "Groups and aggregates"):
    rdflib adds them one by one in the solutions' order, which no other engine can reproduce."""

    failed = False

    def update(self, row, aggregator) -> None:  # type: ignore[no-untyped-def]
        value = _argument(self, row)
        if value is None:
            return
        try:
            _, v = number(value)
        except SPARQLError:
            self.failed = True
            return
        super().update(row, aggregator)  # type: ignore[misc]
        vars(self).setdefault("doubles", []).append(to_double(v))  # rdflib's __init__ is not ours

    def get_value(self):  # type: ignore[no-untyped-def]
        return None if self.failed else super().get_value()  # type: ignore[misc]

    def double_total(self) -> float | None:
        """The exact sum as a double, if the sum is one (float or double), else None."""
        if self.datatype not in (XSD.float, XSD.double):  # type: ignore[attr-defined]
            return None
        return double_sum(vars(self).get("doubles", []))


class _Extremum:
    """MIN and MAX: the first and last value in ORDER BY's order (§18.5.1.4-5), the term kept as
    it is (rdflib compares with `<`, which fails on NaN against a decimal, and makes an IRI a
    literal)."""

    smallest = True
    failed = False

    def update(self, row, aggregator) -> None:  # type: ignore[no-untyped-def]
        value = _argument(self, row)
        if value is None:
            return
        if isinstance(value, SPARQLError):  # an error in the expression: the aggregate's error
            self.failed = True
        elif self.value is None:  # type: ignore[has-type]
            self.value = value
        else:
            self.value = (min if self.smallest else max)(self.value, value, key=order_key)

    def set_value(self, bindings) -> None:  # type: ignore[no-untyped-def]
        if self.value is not None and not self.failed:  # type: ignore[attr-defined]
            bindings[self.var] = self.value  # type: ignore[attr-defined]


class Minimum(_Extremum, _RdflibMinimum):
    pass


class Maximum(_Extremum, _RdflibMaximum):
    smallest = False


class Average(_Errors, _RdflibAverage):
    def get_value(self):  # type: ignore[no-untyped-def]
        total = None if self.failed or not self.counter else self.double_total()
        return super().get_value() if total is None else Literal(total / self.counter)


class Sum(_Errors, _RdflibSum):
    def get_value(self):  # type: ignore[no-untyped-def]
        total = None if self.failed else self.double_total()
        return super().get_value() if total is None else Literal(total, datatype=self.datatype)


__all__ = ["EXPRESSIONS", "CASTS", "cast", "Average", "Sum", "Minimum", "Maximum", "order_key", "number",
           "xpath_regex", "distinct_paths", "DistinctMulPath"]
