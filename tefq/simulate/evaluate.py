"""Expression, aggregate and term evaluation for the simulated executors.

The simulations must compute the same cells as the oracle, so values follow SPARQL 1.1 (numeric
promotion integer < decimal < double, errors leave a cell unbound) and cells are written through
`to_term`, which defers to the oracle's canonicaliser (`tefq.oracle.values.to_term`) when that
module exists, so both engines' rows compare with `==`.
"""
from __future__ import annotations

import datetime as _dt
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Iterable

from tefq.plan.logical import Aggregate, Call, Expr, Term, Var
from tefq.terms import (XSD, XSD_BOOLEAN, XSD_DATETIME, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, literal,
                        split_literal)

_INTEGER_TYPES = {XSD + t for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                                    "positiveInteger", "negativeInteger", "nonPositiveInteger",
                                    "unsignedInt", "unsignedLong", "unsignedShort", "unsignedByte")}
_DOUBLE_TYPES = {XSD_DOUBLE, XSD + "float"}
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


class EvalError(Exception):
    """A SPARQL expression error: the cell (or the aggregate input) is left unbound."""


class DT:
    """An xsd:dateTime held as integer milliseconds since the epoch (interval bindings)."""

    __slots__ = ("ms",)

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DT) and other.ms == self.ms

    def __hash__(self) -> int:
        return hash(("DT", self.ms))

    def __repr__(self) -> str:
        return f"DT({self.ms})"


Value = Any  # int | Decimal | float | bool | DT | str (an N-Triples term)


def datetime_term(ms: int) -> str:
    """Milliseconds -> an xsd:dateTime literal in UTC (milliseconds only when non-zero)."""
    when = _EPOCH + _dt.timedelta(milliseconds=ms)
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if ms % 1000:
        text += f".{ms % 1000:03d}"
    return literal(text + "Z", XSD_DATETIME)


def _shortest_decimal(d: Decimal) -> str:
    if d == d.to_integral_value():
        return str(int(d))
    text = format(d.normalize(), "f")
    return text


def _fallback_to_term(v: Value) -> str:
    if isinstance(v, bool):
        return literal("true" if v else "false", XSD_BOOLEAN)
    if isinstance(v, int):
        return literal(str(v), XSD_INTEGER)
    if isinstance(v, Decimal):
        return literal(_shortest_decimal(v), XSD_DECIMAL)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return literal("NaN" if v != v else ("INF" if v > 0 else "-INF"), XSD_DOUBLE)
        return literal(_shortest_decimal(Decimal(repr(v))), XSD_DOUBLE)
    if isinstance(v, DT):
        return datetime_term(v.ms)
    return v


def _oracle_to_term() -> Callable[[Value], str] | None:
    try:
        from tefq.oracle import values  # type: ignore[attr-defined]
    except ImportError:
        return None
    return getattr(values, "to_term", None)


def to_term(v: Value) -> str:
    """A value as its canonical N-Triples term (the oracle's form when the oracle is present)."""
    if isinstance(v, str):
        return v
    return _fallback_to_term(v)


def from_term(term: str) -> Value:
    """Numbers, booleans and dateTimes become Python values; every other term stays a term."""
    if not term.startswith('"'):
        return term
    try:
        lex, dt, _ = split_literal(term)
    except ValueError:
        return term
    if dt is None:
        return term
    try:
        if dt in _INTEGER_TYPES:
            return int(lex)
        if dt == XSD_DECIMAL:
            return Decimal(lex)
        if dt in _DOUBLE_TYPES:
            return float(lex.replace("INF", "inf"))
        if dt == XSD_BOOLEAN:
            return lex in ("true", "1")
        if dt == XSD_DATETIME:
            text = lex.replace("Z", "+00:00")
            when = _dt.datetime.fromisoformat(text)
            if when.tzinfo is None:
                when = when.replace(tzinfo=_dt.timezone.utc)
            return DT(round((when - _EPOCH).total_seconds() * 1000))
    except (ValueError, InvalidOperation):
        return term
    return term


def _num(v: Value) -> int | Decimal | float:
    if isinstance(v, str):
        v = from_term(v)
    if isinstance(v, bool) or not isinstance(v, (int, Decimal, float)):
        raise EvalError("not a number")
    return v


def _promote(a: Value, b: Value) -> tuple:
    a, b = _num(a), _num(b)
    if isinstance(a, float) or isinstance(b, float):
        return float(a), float(b)
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return Decimal(a), Decimal(b)
    return a, b


def _arith(op: str, a: Value, b: Value) -> Value:
    x, y = _promote(a, b)
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if y == 0:
        raise EvalError("division by zero")
    if isinstance(x, int):  # integer / integer is xsd:decimal in SPARQL
        return Decimal(x) / Decimal(y)
    return x / y


def ebv(v: Value) -> bool:
    """SPARQL effective boolean value."""
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float, Decimal)):
        return bool(v) and v == v
    if isinstance(v, str):
        if v.startswith('"'):
            val = from_term(v)
            if val is not v:
                return ebv(val)
            lex, dt, _ = split_literal(v)
            if dt is None or dt == XSD + "string":
                return lex != ""
        raise EvalError("no effective boolean value")
    raise EvalError("no effective boolean value")


def _compare(op: str, a: Value, b: Value) -> bool:
    if isinstance(a, str):
        a = from_term(a)
    if isinstance(b, str):
        b = from_term(b)
    if isinstance(a, DT) and isinstance(b, DT):
        x, y = a.ms, b.ms
    elif isinstance(a, (int, float, Decimal)) and isinstance(b, (int, float, Decimal)) and not (
            isinstance(a, bool) or isinstance(b, bool)):
        x, y = _promote(a, b)
    elif op in ("=", "!="):
        return (a == b) == (op == "=")
    elif isinstance(a, str) and isinstance(b, str):
        x, y = split_literal(a)[0] if a.startswith('"') else a, split_literal(b)[0] if b.startswith('"') else b
    else:
        raise EvalError("incomparable")
    return {"=": x == y, "!=": x != y, "<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}[op]


def evaluate(e: Expr, env: dict[str, Value]) -> Value:
    """Evaluate `e` under `env` (variable name -> value or term). Raises EvalError."""
    if isinstance(e, Var):
        try:
            return env[e.name]
        except KeyError:
            raise EvalError(f"unbound ?{e.name}") from None
    if isinstance(e, Term):
        return e.nt
    op, args = e.op, e.args
    if op in ("+", "-", "*", "/"):
        return _arith(op, evaluate(args[0], env), evaluate(args[1], env))
    if op == "neg":
        return -_num(evaluate(args[0], env))
    if op in ("=", "!=", "<", ">", "<=", ">="):
        return _compare(op, evaluate(args[0], env), evaluate(args[1], env))
    if op == "&&":
        return _logic(args, env, all_of=True)
    if op == "||":
        return _logic(args, env, all_of=False)
    if op == "!":
        return not ebv(evaluate(args[0], env))
    if op == "DURATION":
        a, b = evaluate(args[0], env), evaluate(args[1], env)
        a = from_term(a) if isinstance(a, str) else a
        b = from_term(b) if isinstance(b, str) else b
        if not (isinstance(a, DT) and isinstance(b, DT)):
            raise EvalError("DURATION needs two dateTimes")
        return (b.ms - a.ms) / 1000.0
    if op == "BOUND":
        return isinstance(args[0], Var) and args[0].name in env
    if op == "IF":
        return evaluate(args[1], env) if ebv(evaluate(args[0], env)) else evaluate(args[2], env)
    if op == "COALESCE":
        for a in args:
            try:
                return evaluate(a, env)
            except EvalError:
                continue
        raise EvalError("COALESCE of errors")
    if op in ("in", "notin"):
        v = evaluate(args[0], env)
        hit = any(_compare("=", v, evaluate(a, env)) for a in args[1:])
        return hit if op == "in" else not hit
    if op == "ABS":
        return abs(_num(evaluate(args[0], env)))
    if op == "STR":
        v = evaluate(args[0], env)
        t = to_term(v)
        return literal(t[1:-1] if t.startswith("<") else split_literal(t)[0])
    if op == "SAMETERM":
        return to_term(evaluate(args[0], env)) == to_term(evaluate(args[1], env))
    if op in ("ISIRI", "ISURI"):
        return to_term(evaluate(args[0], env)).startswith("<")
    if op == "ISLITERAL":
        return to_term(evaluate(args[0], env)).startswith('"')
    if op == "ISNUMERIC":
        return isinstance(from_term(to_term(evaluate(args[0], env))), (int, float, Decimal))
    if op in ("ROUND", "CEIL", "FLOOR"):
        import math
        v = _num(evaluate(args[0], env))
        f = {"ROUND": lambda x: math.floor(x + 0.5), "CEIL": math.ceil, "FLOOR": math.floor}[op]
        r = f(v)
        return type(v)(r) if not isinstance(v, int) else r
    if op == f"<{XSD_DOUBLE}>":
        return float(_num(evaluate(args[0], env)))
    if op == f"<{XSD_INTEGER}>":
        return int(_num(evaluate(args[0], env)))
    if op == f"<{XSD_DECIMAL}>":
        v = _num(evaluate(args[0], env))
        return Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
    raise EvalError(f"unsupported function {op}")


def _logic(args: Iterable[Expr], env: dict[str, Value], all_of: bool) -> bool:
    error = False
    for a in args:
        try:
            v = ebv(evaluate(a, env))
        except EvalError:
            error = True
            continue
        if v != all_of:
            return v
    if error:
        raise EvalError("logical error")
    return all_of


def aggregate(agg: Aggregate, envs: list[dict[str, Value]]) -> Value:
    """SPARQL 1.1 aggregate over one group's solutions; errors and unbound inputs are skipped.
    Raises EvalError when the aggregate has no value (AVG/MIN/MAX of nothing)."""
    if agg.arg is None:
        if agg.distinct:
            return len({tuple(sorted((k, to_term(v)) for k, v in e.items())) for e in envs})
        return len(envs)
    vals: list[Value] = []
    for env in envs:
        try:
            vals.append(evaluate(agg.arg, env))
        except EvalError:
            continue
    if agg.distinct:
        seen: dict[str, Value] = {}
        for v in vals:
            seen.setdefault(to_term(v), v)
        vals = list(seen.values())
    f = agg.func
    if f == "COUNT":
        return len(vals)
    nums = []
    for v in vals:
        try:
            nums.append(_num(v))
        except EvalError:
            if f in ("SUM", "AVG"):
                raise
    if f == "SUM":
        total: Value = 0
        for n in nums:
            total = _arith("+", total, n)
        return total
    if f == "AVG":
        if not nums:
            raise EvalError("AVG of nothing")
        total = 0
        for n in nums:
            total = _arith("+", total, n)
        return _arith("/", total, len(nums))
    if f in ("MIN", "MAX"):
        if not vals:
            raise EvalError(f"{f} of nothing")
        best = vals[0]
        for v in vals[1:]:
            try:
                better = _compare("<" if f == "MIN" else ">", v, best)
            except EvalError:
                better = to_term(v) < to_term(best) if f == "MIN" else to_term(v) > to_term(best)
            if better:
                best = v
        return best
    raise EvalError(f"unknown aggregate {f}")
