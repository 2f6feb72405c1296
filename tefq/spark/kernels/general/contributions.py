"""From solutions with activities to *contributions*: (group, tick range, aggregate arguments).

A solution's activity becomes a range of tick indices `[ka, kb)` of the batch's ticks. What a
solution gives an aggregate only changes with `tau` through an interval end `?E` that is still
open (`?E = tau` while `tau < end`), so each solution splits in two:

- **settled** ticks, at or after every end it reads: one contribution for the whole range, with
  `?E = end` (difference arrays then make it O(1) per solution, whatever the range);
- **open** ticks before that: one contribution per (solution, tick) with `?E = min(end, tau)` —
  the bounded explosion, only for solutions whose dynamic FILTER or argument reads an open end.
  One case needs no explosion: SUM/AVG of `DURATION(?S, ?E)` of one item when every tick is the
  same instant modulo 125 ms (`exact.age_limbs`): the open range stays one contribution, its
  argument an *age* (`Aged`), summed exactly per tick from the start alone.

Dynamic FILTERs drop contributions; the arguments are evaluated per contribution
(`tefq.spark.kernels.general.expressions`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tefq.plan.logical import Call, Expr, Var
from tefq.spark.kernels.general.expressions import Env, Values, evaluate, passes, variables
from tefq.spark.kernels.general.query import CompiledQuery, item_end, item_start
from tefq.spark.kernels.general.tables import column
from tefq.spark.kernels.joins import Relation, expand, key_ranks
from tefq.spark.kernels.tick_aggregates import tick_ranges


@dataclass
class Aged:
    """Open ranges whose argument is the age `(tau - start) / 1000` at each tick of the range."""

    group: np.ndarray
    ka: np.ndarray
    kb: np.ndarray
    start: np.ndarray


@dataclass
class Contributions:
    """`group[j]` (index into `group_codes`), ticks `[ka[j], kb[j])`, `args[a]` per aggregate
    (None for COUNT(*)); `aged[a]`: aggregate a's open ranges summed as ages (their `args` entries
    are not ok); `group_codes` (ng, number of group variables): codes or ms, 0 for the WHILE's
    ?SS/?ES (computed per tick by the evaluator)."""

    group: np.ndarray
    ka: np.ndarray
    kb: np.ndarray
    args: list[Values | None]
    group_codes: np.ndarray
    aged: dict[int, Aged] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.group)


@dataclass
class Piece:
    """Rows of one kind of contribution: solution row `owner`, ticks `[ka, kb)`, and the times the
    open ends read (`None`: each end's own value, the settled case; `aged`: tau, summed as ages)."""

    owner: np.ndarray
    ka: np.ndarray
    kb: np.ndarray
    tau: np.ndarray | None
    aged: bool = False

    def take(self, keep: np.ndarray) -> "Piece":
        return Piece(self.owner[keep], self.ka[keep], self.kb[keep], None if self.tau is None else self.tau[keep],
                     self.aged)


def age_argument(cq: CompiledQuery, e: Expr | None) -> int | None:
    """The item whose `DURATION(?S, ?E)` `e` is (its own interval), else None."""
    if not (isinstance(e, Call) and e.op == "DURATION" and len(e.args) == 2
            and all(isinstance(a, Var) for a in e.args)):
        return None
    s, t = e.args[0].name, e.args[1].name
    i = cq.start_of.get(s)
    return i if i is not None and cq.end_of.get(t) == i else None


def aged_mode(cq: CompiledQuery, ticks: np.ndarray) -> bool:
    """Open ranges stay whole: the only open end read is one item's, by SUM/AVG of its DURATION,
    and every tick is the same instant modulo 125 ms."""
    ends = cq.dynamic_ends
    if len(ends) != 1 or cq.dynamic_filters or (len(ticks) > 1 and cq.every % 125):
        return False
    for a in cq.q.aggregates:
        if cq.dynamic(a.arg) and (a.func not in ("SUM", "AVG") or a.distinct or age_argument(cq, a.arg) is None):
            return False
    return True


def pieces(cq: CompiledQuery, sol: Relation, ticks: np.ndarray, aged: bool) -> list[Piece]:
    nt = len(ticks)
    ka, kb = tick_ranges(sol.start, sol.end, int(ticks[0]), cq.every, nt)
    live = np.nonzero(ka < kb)[0]
    ka, kb = ka[live], kb[live]
    ends = cq.dynamic_ends
    if not ends:
        return [Piece(live, ka, kb, None)]
    settle = np.max(np.column_stack([column(sol, item_end(cq.end_of[e]))[live] for e in ends]), axis=1)
    kc = np.clip(tick_ranges(settle, settle, int(ticks[0]), cq.every, nt)[0], ka, kb)
    settled = kc < kb
    if aged:
        opened = kc > ka
        return [Piece(live[settled], kc[settled], kb[settled], None),
                Piece(live[opened], ka[opened], kc[opened], None, aged=True)]
    owner, k = expand(ka, kc)
    return [Piece(live[settled], kc[settled], kb[settled], None), Piece(live[owner], k, k + 1, ticks[k])]


def piece_env(cq: CompiledQuery, sol: Relation, p: Piece, names: set[str], dictionary) -> Env:
    """The variables `names` at the piece's rows (an open end: tau; settled: the end)."""
    terms = {v: column(sol, v)[p.owner] for v in names if v in cq.term_vars}
    times = {v: column(sol, v)[p.owner] for v in names if v in cq.start_of}
    for name in names & set(cq.end_of):
        end = column(sol, item_end(cq.end_of[name]))[p.owner]
        times[name] = end if p.tau is None else np.minimum(end, p.tau)
    return Env(len(p.owner), terms, times, dictionary)


def solution_groups(cq: CompiledQuery, sol: Relation) -> tuple[np.ndarray, np.ndarray]:
    """(each solution row's group index, the groups' codes)."""
    cols = []
    for name in cq.group_names:
        kind = cq.group_kind(name)
        cols.append(column(sol, name) if kind in ("term", "time") else np.zeros(len(sol), np.int64))
    codes = np.column_stack(cols).reshape(len(sol), len(cols)) if cols else np.zeros((len(sol), 0), np.int64)
    inv = key_ranks(codes)[0] if len(sol) else np.zeros(0, np.int64)
    first = np.zeros(int(inv.max(initial=-1)) + 1, np.int64)
    first[inv[::-1]] = np.arange(len(inv) - 1, -1, -1)
    return inv, codes[first]


def contributions(cq: CompiledQuery, sol: Relation, ticks: np.ndarray, dictionary) -> Contributions:
    group, codes = solution_groups(cq, sol)
    aged = aged_mode(cq, ticks)
    filter_names = {v for f in cq.dynamic_filters for v in variables(f)}
    parts: list[tuple[Piece, Env]] = []
    for p in pieces(cq, sol, ticks, aged):
        if cq.dynamic_filters:
            env = piece_env(cq, sol, p, filter_names, dictionary)
            keep = np.ones(env.n, bool)
            for f in cq.dynamic_filters:
                keep &= passes(f, env)
            p = p.take(keep)
        names = {v for a in cq.q.aggregates if cq.dynamic(a.arg) for v in variables(a.arg)}
        parts.append((p, piece_env(cq, sol, p, names, dictionary)))
    args, ages = arguments(cq, sol, group, parts, dictionary)
    return Contributions(np.concatenate([group[p.owner] for p, _ in parts]), np.concatenate([p.ka for p, _ in parts]),
                         np.concatenate([p.kb for p, _ in parts]), args, codes, ages)


def arguments(cq: CompiledQuery, sol: Relation, group: np.ndarray, parts: list[tuple[Piece, Env]],
              dictionary) -> tuple[list[Values | None], dict[int, Aged]]:
    """Each aggregate's argument per contribution: one that does not read an open end is
    evaluated once per solution and spread to its pieces; the others per piece."""
    owners = np.concatenate([p.owner for p, _ in parts])
    n = len(owners)
    args: list[Values | None] = []
    ages: dict[int, Aged] = {}
    for ai, a in enumerate(cq.q.aggregates):
        if a.arg is None:
            args.append(None)
        elif a.func == "COUNT" and not a.distinct and isinstance(a.arg, Var) and bound(cq, a.arg.name):
            args.append(Values("bool", np.ones(n, bool), np.ones(n, bool)))  # only counted
        elif not cq.dynamic(a.arg):
            whole = Piece(np.arange(len(sol), dtype=np.int64), sol.start, sol.end, None)
            args.append(evaluate(a.arg, piece_env(cq, sol, whole, set(variables(a.arg)), dictionary)).take(owners))
        else:
            vals = []
            for p, env in parts:
                if p.aged:
                    ages[ai] = Aged(group[p.owner], p.ka, p.kb, column(sol, item_start(age_argument(cq, a.arg)))[p.owner])
                    vals.append(Values("double", np.zeros(env.n), np.zeros(env.n, bool)))
                else:
                    vals.append(evaluate(a.arg, env))
            args.append(Values.concat(vals))
    return args, ages


def bound(cq: CompiledQuery, name: str) -> bool:
    """Bound in every solution (an aggregate over it never meets an unbound value)."""
    return name in cq.term_vars or name in cq.start_of or name in cq.end_of
