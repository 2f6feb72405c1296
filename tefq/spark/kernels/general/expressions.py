"""FILTER conditions and aggregate arguments over columns, with the oracle's meaning exactly.

Two tiers, one meaning:
- **vectorised**: numbers, dateTimes and booleans as typed numpy arrays — `+ - * /`, comparisons,
  `&& || !`, `DURATION` — with SPARQL's errors as a mask (an error is an unbound cell: a FILTER
  rejects it, an aggregate skips it);
- **per distinct input**: any other expression is evaluated by the oracle's own evaluator
  (`tefq.semantics.expressions.compile_expr`) once per distinct combination of the columns it reads, and the
  results are spread back. Exact by construction; the cost follows the distinct values.

A tier-1 evaluation that meets something it does not model raises `NotVectorised` and the whole
expression goes to tier 2, so the two never mix inside one expression.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from tefq.plan.allen import relation_of
from tefq.plan.logical import Call, Expr, Term, Var
from tefq.semantics.allen import RELATIONS as ALLEN_RELATIONS
from tefq.semantics.expressions import EvalError, compile_expr, ebv as oracle_ebv
from tefq.semantics.values import IRI, BNode, DateTime, Value, to_value
from tefq.spark.kernels.general.coding import TermDictionary
from tefq.spark.kernels.joins import key_ranks

KINDS = ("int", "double", "dt", "bool", "object")


@dataclass
class Values:
    """One value per row: `kind` says how `data` holds them (int64, float64, dateTime ms, bool, or
    Python values); `ok` is False where the expression raised (or a variable is unbound)."""

    kind: str
    data: Annotated[np.ndarray, Value | None]  # an object array (kind "object") holds Values or None
    ok: np.ndarray
    inputs: np.ndarray | None = None  # per row, the index of its distinct input (tier 2): equal inputs, equal values
    inputs_are_values: bool = False  # distinct inputs are distinct values too (IRIs, blank nodes)

    def __len__(self) -> int:
        return len(self.ok)

    def take(self, idx: np.ndarray) -> "Values":
        return Values(self.kind, self.data[idx], self.ok[idx], None if self.inputs is None else self.inputs[idx],
                      self.inputs_are_values)

    @staticmethod
    def concat(parts: list["Values"]) -> "Values":
        if len(parts) == 1:
            return parts[0]
        kinds = {p.kind for p in parts if len(p)}
        if len(kinds) > 1:
            parts = [p.as_objects() for p in parts]
        kind = kinds.pop() if len(kinds) == 1 else "object"
        if not parts:
            return Values("object", np.zeros(0, object), np.zeros(0, bool))
        inputs = None
        if all(p.inputs is not None for p in parts):  # each part's inputs numbered after the previous ones'
            offsets = np.cumsum([0] + [int(p.inputs.max(initial=-1)) + 1 for p in parts[:-1]])
            inputs = np.concatenate([p.inputs + o for p, o in zip(parts, offsets)])
        return Values(kind, np.concatenate([p.data for p in parts]), np.concatenate([p.ok for p in parts]), inputs)

    def as_objects(self) -> "Values":
        """The values as Python values (None where not ok), as the oracle's evaluator gives them."""
        if self.kind == "object":
            return self
        out = np.full(len(self), None, dtype=object)
        vals = self.data[self.ok].tolist()
        if self.kind == "dt":
            vals = [DateTime(v) for v in vals]
        elif self.kind == "bool":
            vals = [bool(v) for v in vals]
        out[np.nonzero(self.ok)[0]] = _object_array(vals)
        return Values("object", out, self.ok.copy(), self.inputs)


def _object_array(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class NotVectorised(Exception):
    """Tier 1 does not model this expression: evaluate it per distinct input instead."""


@dataclass
class Env:
    """The columns an expression may read: term-coded variables, time variables (ms, read as
    xsd:dateTime) and the dictionary that names the codes. A variable in neither is unbound."""

    n: int
    terms: dict[str, np.ndarray]
    times: dict[str, np.ndarray]
    dictionary: TermDictionary
    values: dict[str, "Values"] = field(default_factory=dict)  # computed values (a SELECT's aggregates)
    _decoded: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def decoded(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(distinct values as Python values, each row's index among them) of a term column."""
        if name not in self._decoded:
            uniq, inv = np.unique(self.terms[name], return_inverse=True)
            terms = self.dictionary.lookup(uniq)
            vals = _object_array([None if t is None else to_value(t) for t in terms.tolist()])
            self._decoded[name] = (vals, inv.reshape(-1))
        return self._decoded[name]


def evaluate(expr: Expr, env: Env) -> Values:
    """`expr` at every row, as the oracle evaluates it."""
    if isinstance(expr, Var) and expr.name in env.terms and expr.name not in env.values:
        return term_values(*env.decoded(expr.name))  # a term variable: decoded once per distinct term
    try:
        with np.errstate(all="ignore"):
            return vectorised(expr, env)
    except NotVectorised:
        return per_distinct(expr, env)


def term_values(vals: np.ndarray, inv: np.ndarray) -> Values:
    """A term column's values per row from its distinct values `vals` (None: unbound) and each
    row's index `inv` among them. Only IRIs and blank nodes (one value per term, the usual key
    column) need no pass per value beyond the type check."""
    kinds = set(map(type, vals.tolist()))
    if kinds <= {IRI, BNode}:
        out = Values("object", vals, np.ones(len(vals), bool)).take(inv)
        out.inputs, out.inputs_are_values = inv, True
        return out
    ok = np.array([x is not None for x in vals.tolist()], dtype=bool)
    out = typed(Values("object", vals, ok)).take(inv)
    out.inputs, out.inputs_are_values = inv, False
    return out


def passes(expr: Expr, env: Env) -> np.ndarray:
    """A FILTER: the rows where the effective boolean value is true (an error rejects)."""
    v = evaluate(expr, env)
    try:
        ok, truth = ebv(v)
    except NotVectorised:
        ok, truth = _ebv_objects(v)
    return ok & truth


# ---------------------------------------------------------------- tier 2: per distinct input
def variables(e: Expr | None) -> list[str]:
    if isinstance(e, Var):
        return [e.name]
    if isinstance(e, Call):
        return list(dict.fromkeys(v for a in e.args for v in variables(a)))
    return []


def per_distinct(expr: Expr, env: Env) -> Values:
    names = [v for v in variables(expr) if v in env.terms or v in env.times]
    fn = compile_expr(expr)
    if names:
        cols = np.column_stack([env.terms.get(v, env.times.get(v)) for v in names]).reshape(env.n, len(names))
        inv = key_ranks(cols)[0]
        first = np.zeros(int(inv.max(initial=-1)) + 1, np.int64)
        first[inv[::-1]] = np.arange(env.n - 1, -1, -1)
    else:
        cols, inv, first = np.zeros((env.n, 0), np.int64), np.zeros(env.n, np.int64), np.zeros(min(env.n, 1), np.int64)
    distinct_rows = cols[first]
    decoded = [(name, env.dictionary.lookup(distinct_rows[:, j]).tolist() if name not in env.times else None)
               for j, name in enumerate(names)]
    results: list[Any] = []
    for r, row in enumerate(distinct_rows.tolist()):
        results.append(_call(fn, _row_env(decoded, row, r)))
    ok_u = np.array([r is not _ERROR for r in results], dtype=bool)
    vals = _object_array([None if r is _ERROR else r for r in results])
    out = typed(Values("object", vals[inv], ok_u[inv] if len(ok_u) else np.zeros(env.n, bool)))
    out.inputs = inv
    return out


_ERROR = object()


def _call(fn, row_env: dict) -> Any:
    try:
        return fn(row_env)
    except EvalError:
        return _ERROR


def _row_env(decoded: list[tuple[str, list | None]], row: list[int], r: int) -> dict[str, Any]:
    """One distinct input as the oracle's environment: terms as N-Triples, times as DateTimes."""
    out: dict[str, Any] = {}
    for (name, terms), code in zip(decoded, row):
        if terms is None:
            out[name] = DateTime(code)
        elif terms[r] is not None:
            out[name] = terms[r]
    return out


def typed(v: Values) -> Values:
    """Object values of one simple kind as a typed array (ints that fit int64, doubles,
    dateTimes, booleans); anything else stays objects."""
    if v.kind != "object" or not len(v):
        return v
    present = v.data[v.ok].tolist()
    kinds = {type(x) for x in present}
    fill = {int: 0, float: 0.0, bool: False}
    if kinds == {int} and all(-(2**62) < x < 2**62 for x in present):
        return Values("int", _filled(v, int, np.int64, 0), v.ok)
    if kinds == {float}:
        return Values("double", _filled(v, float, np.float64, 0.0), v.ok)
    if kinds == {DateTime}:
        data = np.zeros(len(v), np.int64)
        data[v.ok] = [x.ms for x in present]
        return Values("dt", data, v.ok)
    if kinds == {bool}:
        return Values("bool", _filled(v, bool, bool, fill[bool]), v.ok)
    return v


def _filled(v: Values, conv, dtype, zero) -> np.ndarray:
    data = np.full(len(v), zero, dtype=dtype)
    data[v.ok] = [conv(x) for x in v.data[v.ok].tolist()]
    return data


# ---------------------------------------------------------------- tier 1: vectorised
def vectorised(e: Expr, env: Env) -> Values:
    if isinstance(e, Var):
        return _variable(e.name, env)
    if isinstance(e, Term):
        return _constant(to_value(e.nt), env.n)
    op = e.op
    if op in ("&&", "||"):
        return _logical(op, [vectorised(a, env) for a in e.args])
    args = [vectorised(a, env) for a in e.args]
    if op == "!" and len(args) == 1:
        ok, truth = ebv(args[0])
        return Values("bool", ~truth, ok)
    if op == "neg" and len(args) == 1 and args[0].kind in ("int", "double"):
        return Values(args[0].kind, -args[0].data, args[0].ok)
    if op == "DURATION" and len(args) == 2 and all(a.kind == "dt" for a in args):
        return Values("double", (args[1].data - args[0].data).astype(np.float64) / 1000.0, args[0].ok & args[1].ok)
    if op in ("+", "-", "*", "/") and len(args) == 2:
        return _arith(op, args[0], args[1])
    if op in ("=", "!=", "<", ">", "<=", ">=") and len(args) == 2:
        return _compare(op, args[0], args[1])
    relation = relation_of(op)
    if relation is not None and len(args) >= 4:
        return _allen(relation, args[:4], args[4:])
    raise NotVectorised(op)


def _variable(name: str, env: Env) -> Values:
    if name in env.values:
        v = env.values[name]
        if v.kind == "object":
            raise NotVectorised(name)
        return v
    if name in env.times:
        return Values("dt", env.times[name], np.ones(env.n, bool))
    if name not in env.terms:
        return Values("int", np.zeros(env.n, np.int64), np.zeros(env.n, bool))  # unbound: an error
    vals, inv = env.decoded(name)
    t = typed(Values("object", vals, np.array([x is not None for x in vals.tolist()], dtype=bool)))
    if t.kind == "object":
        raise NotVectorised(name)
    return t.take(inv)


def _constant(value: Any, n: int) -> Values:
    ok = np.ones(n, bool)
    if isinstance(value, bool):
        return Values("bool", np.full(n, value), ok)
    if isinstance(value, int) and -(2**62) < value < 2**62:
        return Values("int", np.full(n, value, np.int64), ok)
    if isinstance(value, float):
        return Values("double", np.full(n, value, np.float64), ok)
    if isinstance(value, DateTime):
        return Values("dt", np.full(n, value.ms, np.int64), ok)
    raise NotVectorised(repr(value))


def _arith(op: str, a: Values, b: Values) -> Values:
    if a.kind not in ("int", "double") or b.kind not in ("int", "double"):
        raise NotVectorised(op)
    ok = a.ok & b.ok
    if a.kind == "int" and b.kind == "int":
        if op == "/":
            raise NotVectorised("integer division is a decimal")
        bound = 2**31 if op == "*" else 2**61
        if (np.abs(a.data[ok]) >= bound).any() or (np.abs(b.data[ok]) >= bound).any():
            raise NotVectorised("integers beyond int64")
        x, y = a.data, b.data
        return Values("int", x + y if op == "+" else x - y if op == "-" else x * y, ok)
    x, y = a.data.astype(np.float64), b.data.astype(np.float64)
    if op == "/":
        ok = ok & (y != 0)  # SPARQL: division by zero is an error, for doubles too
        return Values("double", np.where(y != 0, x, 0.0) / np.where(y != 0, y, 1.0), ok)
    return Values("double", x + y if op == "+" else x - y if op == "-" else x * y, ok)


def _compare(op: str, a: Values, b: Values) -> Values:
    numeric = a.kind in ("int", "double") and b.kind in ("int", "double")
    if not numeric and not (a.kind == b.kind and a.kind in ("dt", "bool")):
        raise NotVectorised(op)
    ok = a.ok & b.ok
    if numeric and "double" in (a.kind, b.kind):
        x, y = a.data.astype(np.float64), b.data.astype(np.float64)
        if op not in ("=", "!="):  # ordering with NaN is an error; equality is simply false
            ok = ok & ~np.isnan(x) & ~np.isnan(y)
    else:
        x, y = a.data, b.data
    res = {"=": np.equal, "!=": np.not_equal, "<": np.less, ">": np.greater,
           "<=": np.less_equal, ">=": np.greater_equal}[op](x, y)
    return Values("bool", res, ok)


def _allen(relation: str, times: list[Values], tolerances: list[Values]) -> Values:
    """Allen's `relation` (spec §11) over four dateTime columns (an open fact's end is already the
    tick): a column that is not dateTimes makes every row an error, as the oracle's `_dt` does.
    The tolerances are the bound constants (ms); anything else goes per distinct input."""
    if any(t.kind != "int" or not t.ok.all() or len(set(t.data.tolist())) > 1 for t in tolerances):
        raise NotVectorised("Allen tolerances that are not constant ms")
    tol = tuple(int(t.data[0]) for t in tolerances) if len(times[0]) else ()
    ok = np.ones(len(times[0]), bool)
    for t in times:
        ok &= t.ok if t.kind == "dt" else False
    data = [np.where(ok, t.data, 0).astype(np.int64) for t in times]
    holds = ALLEN_RELATIONS[relation](*data, tol) if len(ok) else np.zeros(0, bool)  # spec §11's one table
    return Values("bool", np.asarray(holds, bool) & ok, ok)


def _logical(op: str, args: list[Values]) -> Values:
    """SPARQL's three-valued && and ||: a false (resp. true) operand decides even over an error."""
    n = len(args[0])
    decided = np.zeros(n, bool)
    errors = np.zeros(n, bool)
    for a in args:
        ok, truth = ebv(a)
        decided |= ok & (truth if op == "||" else ~truth)
        errors |= ~ok
    value = decided if op == "||" else ~decided
    return Values("bool", value, decided | ~errors)


def ebv(v: Values) -> tuple[np.ndarray, np.ndarray]:
    """(ok, effective boolean value) of typed values."""
    if v.kind == "bool":
        return v.ok, v.data.astype(bool)
    if v.kind == "int":
        return v.ok, v.data != 0
    if v.kind == "double":
        return v.ok, (v.data != 0) & ~np.isnan(v.data)
    if v.kind == "dt":
        return np.zeros(len(v), bool), np.zeros(len(v), bool)
    raise NotVectorised("effective boolean value of terms")


def _ebv_objects(v: Values) -> tuple[np.ndarray, np.ndarray]:
    ok = v.ok.copy()
    truth = np.zeros(len(v), bool)
    for i in np.nonzero(v.ok)[0].tolist():
        try:
            truth[i] = oracle_ebv(v.data[i])
        except EvalError:
            ok[i] = False
    return ok, truth
