"""SPARQL 1.1 expression and aggregate evaluation over Python values (`tefq.semantics.values`).

`evaluate(expr, env)` raises `EvalError` for a SPARQL error (type error, unbound variable,
division by zero, ...); callers turn it into "filter fails", "skip this value" or "unbound cell".
`env` maps a variable name to an N-Triples term (a pattern binding) or a value (an aggregate).
"""
from __future__ import annotations

import math
import re
from decimal import (MAX_EMAX, MAX_PREC, MIN_EMIN, ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Context, Decimal,
                     InvalidOperation)
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping

from tefq.plan.allen import RELATIONS, allen_op
from tefq.plan.logical import Expr, Term, Var
from tefq.semantics.allen import holds as allen_holds
from tefq.semantics.values import (IRI, BNode, DateTime, LangString, Typed, Value, decimal_of, is_numeric, to_term,
                                   to_value)
from tefq.terms import XSD, split_literal

# + - * and sums of decimals are exact: a context that never rounds (its digits are allocated as needed)
EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


class EvalError(Exception):
    """A SPARQL expression error: the enclosing filter fails / the value is skipped / the cell is unbound."""


def value_of(x: Any) -> Value:
    return to_value(x) if isinstance(x, str) else x


# ---------------------------------------------------------------- numbers
def _rank(v: Any) -> int:
    if isinstance(v, bool) or not is_numeric(v):
        raise EvalError("not a number")
    return 0 if isinstance(v, int) else 1 if isinstance(v, Decimal) else 2


def _promote(v: Any, rank: int) -> Any:
    if rank == 2:
        return to_double(v)
    if rank == 1:
        return Decimal(v)
    return v


def arith(op: str, a: Any, b: Any) -> Any:
    rank = max(_rank(a), _rank(b))
    if op == "/":
        if b == 0:
            raise EvalError("division by zero")
        if rank == 2:
            return to_double(a) / to_double(b)
        return decimal_divide(Decimal(a), Decimal(b))  # integer / integer is a decimal (SPARQL)
    a, b = _promote(a, rank), _promote(b, rank)
    if rank == 1:
        return {"+": EXACT.add, "-": EXACT.subtract, "*": EXACT.multiply}[op](a, b)
    return {"+": a + b, "-": a - b, "*": a * b}[op] if rank == 0 else \
        (a + b if op == "+" else a - b if op == "-" else a * b)


def decimal_divide(a: Decimal, b: Decimal) -> Decimal:
    """`a / b` rounded half even to at least 28 significant digits, and to as many as the two
    operands hold together (so the integer part is exact and `x / 1` is `x`; docs/semantics.md)."""
    digits = max(28, len(a.as_tuple().digits) + len(b.as_tuple().digits), a.adjusted() - b.adjusted() + 2)
    return Context(prec=digits, rounding="ROUND_HALF_EVEN", Emax=MAX_EMAX, Emin=MIN_EMIN).divide(a, b)


# ---------------------------------------------------------------- comparison and truth
def _is_string(v: Any) -> bool:
    return isinstance(v, str)


def compare(a: Any, b: Any) -> int:
    """-1/0/1 for values SPARQL can order with `<`; EvalError otherwise."""
    if is_numeric(a) and is_numeric(b):
        if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
            raise EvalError("NaN is unordered")
        if isinstance(a, float) or isinstance(b, float):
            a, b = to_double(a), to_double(b)
        return (a > b) - (a < b)
    for kind in (str, bool, DateTime):
        if isinstance(a, kind) and isinstance(b, kind) and (kind is not str or True):
            if kind is DateTime:
                a, b = a.ms, b.ms
            return (a > b) - (a < b)
    if isinstance(a, LangString) and isinstance(b, LangString) and a.lang == b.lang:
        return (a.lex > b.lex) - (a.lex < b.lex)
    raise EvalError("values cannot be compared")


def equal(a: Any, b: Any) -> bool:
    """RDFterm-equal with value comparison for numbers, strings, booleans and dateTimes."""
    try:
        if isinstance(a, bool) != isinstance(b, bool) and (is_numeric(a) or is_numeric(b)):
            raise EvalError("boolean vs number")
        return compare(a, b) == 0
    except EvalError:
        if a == b and type(a) is type(b):
            return True
        literal_like = (str, LangString, Typed, DateTime, bool, int, float, Decimal)
        if isinstance(a, (IRI, BNode)) or isinstance(b, (IRI, BNode)):
            return False
        if isinstance(a, literal_like) and isinstance(b, literal_like):
            if isinstance(a, Typed) or isinstance(b, Typed):
                raise EvalError("unknown datatypes")
            return False
        raise


def ebv(v: Any) -> bool:
    """Effective boolean value (SPARQL 17.2.2)."""
    v = value_of(v)
    if isinstance(v, bool):
        return v
    if is_numeric(v):
        return not (v == 0 or (isinstance(v, float) and math.isnan(v)))
    if isinstance(v, str):
        return v != ""
    raise EvalError("no effective boolean value")


# ---------------------------------------------------------------- strings
def _string(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, LangString):
        return v.lex
    raise EvalError("not a string")


def _like(arg: Any, text: str) -> Any:
    """A string result carrying the language tag of `arg` (UCASE, LCASE, SUBSTR...)."""
    return LangString(text, arg.lang) if isinstance(arg, LangString) else text


def str_of(v: Any) -> str:
    """SPARQL STR()."""
    if isinstance(v, IRI):
        return v.value
    if isinstance(v, BNode):
        raise EvalError("STR of a blank node")
    if isinstance(v, str):
        return v
    if isinstance(v, LangString):
        return v.lex
    if isinstance(v, Typed):
        return v.lex

    return split_literal(to_term(v))[0]


@lru_cache(maxsize=256)
def _regex(pattern: str, flags: str) -> re.Pattern:
    f = 0
    for c in flags:
        f |= {"i": re.I, "s": re.S, "m": re.M, "x": re.X}.get(c, 0)
    return re.compile(pattern, f)


# ---------------------------------------------------------------- casts
def cast(dt: str, v: Any) -> Any:
    name = dt[len(XSD):] if dt.startswith(XSD) else None
    if isinstance(v, (IRI, BNode)) and name != "string":
        raise EvalError("cannot cast an IRI")
    if name == "string":
        return str_of(v)
    if name in ("integer", "int", "long"):
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, float):
            if math.isnan(v) or math.isinf(v):
                raise EvalError("cannot cast to integer")
            return int(v)
        if isinstance(v, Decimal):
            return int(v)
        if isinstance(v, int):
            return v
        if isinstance(v, str) and re.match(r"^\s*[+-]?[0-9]+\s*$", v):
            return int(v)
        raise EvalError("cannot cast to integer")
    if name == "decimal":
        if isinstance(v, bool):
            return Decimal(int(v))
        if isinstance(v, float):
            if math.isnan(v) or math.isinf(v):
                raise EvalError("cannot cast to decimal")
            return Decimal(repr(v))
        if is_numeric(v):
            return Decimal(v)
        if isinstance(v, str) and re.match(r"^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*$", v):
            return Decimal(v.strip())
        raise EvalError("cannot cast to decimal")
    if name in ("double", "float"):
        if isinstance(v, bool):
            return float(v)
        if is_numeric(v):
            return float(v)
        if isinstance(v, str):
            try:
                return float(v.strip().replace("INF", "inf"))
            except ValueError:
                raise EvalError("cannot cast to double") from None
        raise EvalError("cannot cast to double")
    if name == "boolean":
        if isinstance(v, bool):
            return v
        if is_numeric(v):
            return ebv(v)
        if isinstance(v, str) and v.strip() in ("true", "false", "1", "0"):
            return v.strip() in ("true", "1")
        raise EvalError("cannot cast to boolean")
    if name == "dateTime":
        if isinstance(v, DateTime):
            return v
        if isinstance(v, str):
            parsed = to_value('"' + v.strip() + '"^^<' + XSD + 'dateTime>')
            if isinstance(parsed, DateTime):
                return parsed
        raise EvalError("cannot cast to dateTime")
    raise EvalError(f"unknown function <{dt}>")


# ---------------------------------------------------------------- evaluation
def evaluate(expr: Expr, env: Mapping[str, Any]) -> Value:
    if isinstance(expr, Var):
        if expr.name not in env or env[expr.name] is None:
            raise EvalError(f"?{expr.name} is unbound")
        return value_of(env[expr.name])
    if isinstance(expr, Term):
        return to_value(expr.nt)
    op, args = expr.op, expr.args
    special = _SPECIAL.get(op)
    if special is not None:
        return special(args, env)
    fn = _FUNCTIONS.get(op)
    values = [evaluate(a, env) for a in args]
    if fn is not None:
        return fn(*values)
    if op.startswith("<") and op.endswith(">") and len(values) == 1:
        return cast(op[1:-1], values[0])
    raise EvalError(f"unknown function {op}")


def _bound(args, env) -> bool:
    a = args[0]
    return isinstance(a, Var) and env.get(a.name) is not None


def _if(args, env) -> Value:
    return evaluate(args[1] if ebv(evaluate(args[0], env)) else args[2], env)


def _coalesce(args, env) -> Value:
    for a in args:
        try:
            return evaluate(a, env)
        except EvalError:
            continue
    raise EvalError("COALESCE: no value")


def _and(args, env) -> bool:
    err = None
    for a in args:
        try:
            if not ebv(evaluate(a, env)):
                return False
        except EvalError as e:
            err = e
    if err:
        raise err
    return True


def _or(args, env) -> bool:
    err = None
    for a in args:
        try:
            if ebv(evaluate(a, env)):
                return True
        except EvalError as e:
            err = e
    if err:
        raise err
    return False


def _in(args, env) -> bool:
    x = evaluate(args[0], env)
    err = None
    for a in args[1:]:
        try:
            if equal(x, evaluate(a, env)):
                return True
        except EvalError as e:
            err = e
    if err:
        raise err
    return False


_SPECIAL: dict[str, Callable[[tuple, Mapping[str, Any]], Value]] = {
    "BOUND": _bound, "IF": _if, "COALESCE": _coalesce, "&&": _and, "||": _or,
    "in": _in, "notin": lambda args, env: not _in(args, env),
}


def _num(v: Any) -> Any:
    _rank(v)
    return v


def _round(v: Any) -> Any:
    v = _num(v)
    if isinstance(v, int):
        return v
    if isinstance(v, Decimal):
        return v.to_integral_value(rounding=ROUND_HALF_UP)
    return float(math.floor(v + 0.5)) if math.isfinite(v) else v


def _ceil(v: Any) -> Any:
    v = _num(v)
    if isinstance(v, Decimal):
        return v.to_integral_value(rounding=ROUND_CEILING)
    return v if isinstance(v, int) else float(math.ceil(v)) if math.isfinite(v) else v


def _floor(v: Any) -> Any:
    v = _num(v)
    if isinstance(v, Decimal):
        return v.to_integral_value(rounding=ROUND_FLOOR)
    return v if isinstance(v, int) else float(math.floor(v)) if math.isfinite(v) else v


def _dt(v: Any) -> DateTime:
    if not isinstance(v, DateTime):
        raise EvalError("not a dateTime")
    return v


def _dt_part(index: int) -> Callable[[Any], int]:
    def part(v: Any) -> int:
        from datetime import datetime, timezone

        d = datetime.fromtimestamp(_dt(v).ms // 1000, tz=timezone.utc)
        return (d.year, d.month, d.day, d.hour, d.minute)[index]
    return part


def _seconds(v: Any) -> Decimal:
    ms = _dt(v).ms % 60_000
    return Decimal(ms) / Decimal(1000)


def _duration(a: Any, b: Any) -> float:
    """TEF DURATION(?a, ?b): `b - a` in seconds, an xsd:double (spec §4.2)."""
    return (_dt(b).ms - _dt(a).ms) / 1000.0


def _concat(*vs: Any) -> Any:
    text = "".join(_string(v) for v in vs)
    langs = {v.lang for v in vs if isinstance(v, LangString)}
    if vs and len(langs) == 1 and all(isinstance(v, LangString) for v in vs):
        return LangString(text, langs.pop())
    return text


def _substr(s: Any, start: Any, length: Any = None) -> Any:
    text = _string(s)
    begin = int(_round(_num(start)))
    end = len(text) + 1 if length is None else begin + int(_round(_num(length)))
    return _like(s, "".join(c for i, c in enumerate(text, 1) if begin <= i < end))


def _regex_fn(s: Any, pattern: Any, flags: Any = "") -> bool:
    try:
        return _regex(_string(pattern), _string(flags)).search(_string(s)) is not None
    except re.error:
        raise EvalError("bad regular expression") from None


def _datatype(v: Any) -> IRI:
    if isinstance(v, (IRI, BNode)):
        raise EvalError("DATATYPE of a non-literal")
    if isinstance(v, LangString):
        return IRI("http://www.w3.org/1999/02/22-rdf-syntax-ns#langString")
    if isinstance(v, Typed):
        return IRI(v.datatype)

    return IRI(split_literal(to_term(v))[1] or XSD + "string")


def _allen(relation: str) -> Callable[..., bool]:
    """An Allen relation over four dateTimes and its tolerances in ms (spec §11): an argument
    that is not a dateTime is an error, so a FILTER rejects the solution."""
    def relation_holds(a_s: Any, a_e: Any, b_s: Any, b_e: Any, *tolerances: int) -> bool:
        return allen_holds(relation, (_dt(a_s).ms, _dt(a_e).ms, _dt(b_s).ms, _dt(b_e).ms), tolerances)
    return relation_holds


def _cmp(test: Callable[[int], bool]) -> Callable[[Any, Any], bool]:
    return lambda a, b: test(compare(a, b))


def _neg(v: Any) -> Any:
    v = _num(v)
    return EXACT.minus(v) if isinstance(v, Decimal) else -v


def _abs(v: Any) -> Any:
    v = _num(v)
    return EXACT.abs(v) if isinstance(v, Decimal) else abs(v)


def _not(v: Any) -> bool:
    return not ebv(v)


_FUNCTIONS: dict[str, Callable[..., Value]] = {
    "+": lambda a, b: arith("+", a, b), "-": lambda a, b: arith("-", a, b),
    "*": lambda a, b: arith("*", a, b), "/": lambda a, b: arith("/", a, b),
    "neg": _neg, "!": _not,
    "=": equal, "!=": lambda a, b: not equal(a, b),
    "<": _cmp(lambda c: c < 0), ">": _cmp(lambda c: c > 0),
    "<=": _cmp(lambda c: c <= 0), ">=": _cmp(lambda c: c >= 0),
    "DURATION": _duration,
    "STR": str_of, "ABS": _abs, "ROUND": _round, "CEIL": _ceil, "FLOOR": _floor,
    "STRLEN": lambda s: len(_string(s)), "UCASE": lambda s: _like(s, _string(s).upper()),
    "LCASE": lambda s: _like(s, _string(s).lower()), "CONCAT": _concat,
    "CONTAINS": lambda a, b: _string(b) in _string(a),
    "STRSTARTS": lambda a, b: _string(a).startswith(_string(b)),
    "STRENDS": lambda a, b: _string(a).endswith(_string(b)),
    "SUBSTR": _substr, "REGEX": _regex_fn,
    "YEAR": _dt_part(0), "MONTH": _dt_part(1), "DAY": _dt_part(2), "HOURS": _dt_part(3),
    "MINUTES": _dt_part(4), "SECONDS": _seconds, "TZ": lambda v: (_dt(v), "Z")[1],
    "LANG": lambda v: v.lang if isinstance(v, LangString) else "" if not isinstance(v, (IRI, BNode))
    else (_ for _ in ()).throw(EvalError("LANG of a non-literal")),
    "DATATYPE": _datatype,
    "ISIRI": lambda v: isinstance(v, IRI), "ISURI": lambda v: isinstance(v, IRI),
    "ISBLANK": lambda v: isinstance(v, BNode),
    "ISLITERAL": lambda v: not isinstance(v, (IRI, BNode)),
    "ISNUMERIC": is_numeric, "SAMETERM": lambda a, b: to_term(a) == to_term(b),
    "IRI": lambda v: v if isinstance(v, IRI) else IRI(_string(v)),
    "URI": lambda v: v if isinstance(v, IRI) else IRI(_string(v)),
    **{allen_op(r): _allen(r) for r in RELATIONS},
}


def filters_pass(filters: Iterable[Expr], env: Mapping[str, Any]) -> bool:
    """All FILTERs hold (an error is false)."""
    for f in filters:
        try:
            if not ebv(evaluate(f, env)):
                return False
        except EvalError:
            return False
    return True


# ---------------------------------------------------------------- aggregates
def distinct_key(v: Value) -> tuple:
    """What DISTINCT compares: the value and its class (1, 1.0 and 1.0e0 differ), every NaN one
    value (NaN != NaN would make each NaN object a value of its own)."""
    return (v.__class__, "NaN") if v != v else (v.__class__, v)


def aggregate(func: str, values: list[Value], distinct: bool) -> Value | None:
    """SPARQL 1.1 set functions over the values of one group (errors and unbound already left out;
    SUM and AVG also skip non-numbers). Returns None for "no value" (AVG, MIN, MAX of nothing)."""
    if distinct:
        seen: dict[tuple, Value] = {}
        for v in values:
            seen.setdefault(distinct_key(v), v)
        values = list(seen.values())
    if func == "COUNT":
        return len(values)
    if func in ("SUM", "AVG"):
        values = [v for v in values if type(v) in _NUMBER_TYPES]  # a non-number is an error: skipped (§4)
        if func == "AVG" and not values:
            return None
        total = exact_sum(values)
        if func == "SUM":
            return total
        return arith("/", total, len(values))
    if func in ("MIN", "MAX"):
        if not values:
            return None
        return (min if func == "MIN" else max)(values, key=order_key)
    raise EvalError(f"unknown aggregate {func}")


_NUMBER_TYPES = frozenset((int, float, Decimal))  # exact types: bool is not a number here


def exact_sum(values: list[Value]) -> Value:
    """The sum, computed exactly and rounded once to the widest type (order independent, so every
    engine gets the same bits): integers, decimals, or doubles (`double_sum`)."""
    if all(type(v) is float for v in values):
        return double_sum(values)
    rank = 0
    for v in values:
        rank = max(rank, _rank(v))
    if rank == 0:
        return sum(values)
    if rank == 1:
        total = Decimal(0)
        for v in values:
            total = EXACT.add(total, Decimal(v))
        return total
    return double_sum([to_double(v) for v in values])


def to_double(v: int | Decimal | float) -> float:
    """A number promoted to xsd:double, rounded to nearest; an integer beyond the largest double
    is +-INF, as IEEE 754 overflow gives (a decimal already converts so)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def double_sum(values: list[float]) -> float:
    """The exact sum of doubles, rounded once (docs/semantics.md, "Groups and aggregates"): +-INF
    when it lies beyond the largest double, NaN with a NaN or with both +INF and -INF."""
    try:
        return math.fsum(values)
    except ValueError:  # +INF and -INF
        return math.nan
    except OverflowError:  # a partial sum beyond the largest double: fsum gives up, sum exactly
        pass
    special = [v for v in values if not math.isfinite(v)]
    if special:
        return double_sum(special)
    return round_to_double(sum(map(Fraction, values), Fraction(0)))


def round_to_double(exact: Fraction) -> float:
    """An exact rational as the nearest double; beyond the largest double, +-INF (IEEE 754)."""
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


@lru_cache(maxsize=1 << 16, typed=True)  # typed: 1, 1.0 and True are different values
def order_key(v: Value) -> tuple:
    """MIN/MAX's order (docs/semantics.md), a total one: blank nodes < IRIs < numbers < other
    literals. Numbers by value as SPARQL's `<` compares them (promoted to double), then exactly,
    NaN after every number; equal values: integer < decimal < double, then by term. Other
    literals: booleans, dateTimes (by instant), strings, language strings (by tag, then text),
    literals of other datatypes (by datatype, then text). Values with equal keys are one term."""
    if isinstance(v, BNode):
        return (1, v.id)
    if isinstance(v, IRI):
        return (2, v.value)
    if is_numeric(v):
        d = to_double(v)
        if d != d:
            return (3, 1, 0.0, 0, 2, "")
        exact = Fraction(v) if not isinstance(v, float) or math.isfinite(v) else v
        return (3, 0, d, exact, _rank(v), to_term(v))
    if isinstance(v, bool):
        return (4, 0, int(v), "")
    if isinstance(v, DateTime):
        return (4, 1, v.ms, "")
    if isinstance(v, str):
        return (4, 2, v, "")
    if isinstance(v, LangString):
        return (4, 3, v.lang, v.lex)
    return (4, 4, v.datatype, v.lex)


def decimal_or_none(text: str) -> Decimal | None:
    return decimal_of(text)


__all__ = ["EvalError", "evaluate", "filters_pass", "aggregate", "ebv", "equal", "compare", "arith",
           "value_of", "InvalidOperation"]


# ---------------------------------------------------------------- compiled form (hot loops)
def compile_expr(expr: Expr) -> Callable[[Mapping[str, Any]], Value]:
    """`expr` as a closure with the same meaning as `evaluate(expr, env)` (evaluated per solution
    per tick, so it avoids re-dispatching on the expression tree)."""
    if isinstance(expr, Var):
        name = expr.name

        def var(env: Mapping[str, Any]) -> Value:
            v = env.get(name)
            if v is None:
                raise EvalError(f"?{name} is unbound")
            return to_value(v) if v.__class__ is str else v
        return var
    if isinstance(expr, Term):
        const = to_value(expr.nt)
        return lambda env: const
    op, args = expr.op, expr.args
    if op in _SPECIAL:
        special = _SPECIAL[op]
        return lambda env: special(args, env)
    fn = _FUNCTIONS.get(op)
    if fn is None:
        if op.startswith("<") and op.endswith(">") and len(args) == 1:
            dt = op[1:-1]
            inner = compile_expr(args[0])
            return lambda env: cast(dt, inner(env))
        return lambda env: (_ for _ in ()).throw(EvalError(f"unknown function {op}"))
    if op == "DURATION" and len(args) == 2 and all(isinstance(a, Var) for a in args):
        return _compiled_duration(args[0].name, args[1].name)  # the hot aggregate argument of UC2/UC3
    parts = [compile_expr(a) for a in args]
    if len(parts) == 1:
        a0 = parts[0]
        return lambda env: fn(a0(env))
    if len(parts) == 2:
        a0, a1 = parts
        return lambda env: fn(a0(env), a1(env))
    return lambda env: fn(*[p(env) for p in parts])


def _compiled_duration(a: str, b: str) -> Callable[[Mapping[str, Any]], Value]:
    """DURATION(?a, ?b) reading the two variables directly (same meaning as `_duration`)."""
    def duration(env: Mapping[str, Any]) -> Value:
        x, y = env.get(a), env.get(b)
        if x is None or y is None:
            raise EvalError("DURATION of an unbound variable")
        if x.__class__ is str:
            x = to_value(x)
        if y.__class__ is str:
            y = to_value(y)
        if x.__class__ is not DateTime or y.__class__ is not DateTime:
            raise EvalError("not a dateTime")
        return (y.ms - x.ms) / 1000.0
    return duration
