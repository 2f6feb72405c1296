"""From solutions with activities to *contributions*: (group, tick range, aggregate arguments).

A solution's activity becomes a range of tick indices `[ka, kb)` of the batch's ticks. What a
solution gives an aggregate only changes with `tau` through an interval end `?E` that is still
open (`?E = tau` while `tau < end`), so each solution splits in two:

- **settled** ticks, at or after every end it reads: one contribution for the whole range, with
  `?E = end` (difference arrays then make it O(1) per solution, whatever the range);
- **open** ticks before that: one contribution per (solution, tick) with `?E = min(end, tau)` —
  the bounded explosion, only for solutions whose dynamic FILTER or argument reads an open end.

Dynamic FILTERs drop contributions; the arguments are evaluated per contribution
(`tefq.spark.kernels.general.expressions`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tefq.plan.logical import Var
from tefq.spark.kernels.general.expressions import Env, Values, evaluate, passes
from tefq.spark.kernels.general.query import CompiledQuery, item_end
from tefq.spark.kernels.general.tables import column
from tefq.spark.kernels.joins import Relation, expand, key_ranks
from tefq.spark.kernels.tick_aggregates import tick_ranges


@dataclass
class Contributions:
    """`group[j]` (index into `group_codes`), ticks `[ka[j], kb[j])`, `args[a]` per aggregate
    (None for COUNT(*)); `group_codes` (ng, number of group variables): codes or ms, 0 for the
    WHILE's ?SS/?ES (computed per tick, `rows.while_columns`)."""

    group: np.ndarray
    ka: np.ndarray
    kb: np.ndarray
    args: list[Values | None]
    group_codes: np.ndarray

    def __len__(self) -> int:
        return len(self.group)


@dataclass
class Piece:
    """Rows of one kind of contribution: solution row `owner`, ticks `[ka, kb)`, and the times the
    ends read (`None`: each end's own value, the settled case)."""

    owner: np.ndarray
    ka: np.ndarray
    kb: np.ndarray
    tau: np.ndarray | None


def pieces(cq: CompiledQuery, sol: Relation, ticks: np.ndarray) -> list[Piece]:
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
    owner, k = expand(ka, kc)
    return [Piece(live[settled], kc[settled], kb[settled], None),
            Piece(live[owner], k, k + 1, ticks[k])]


def piece_env(cq: CompiledQuery, sol: Relation, p: Piece, dictionary) -> Env:
    terms = {v: column(sol, v)[p.owner] for v in sol.vars if v in cq.term_vars}
    times = {v: column(sol, v)[p.owner] for v in cq.start_of}
    for name, i in cq.end_of.items():
        end = column(sol, item_end(i))[p.owner]
        times[name] = end if p.tau is None else np.minimum(end, p.tau)
    return Env(len(p.owner), terms, times, dictionary)


def group_columns(cq: CompiledQuery, env: Env) -> np.ndarray:
    cols = []
    for name in cq.group_names:
        kind = cq.group_kind(name)
        cols.append(env.terms[name] if kind == "term" else env.times[name] if kind == "time"
                    else np.zeros(env.n, np.int64))
    return np.column_stack(cols).reshape(env.n, len(cols)) if cols else np.zeros((env.n, 0), np.int64)


def contributions(cq: CompiledQuery, sol: Relation, ticks: np.ndarray, dictionary) -> Contributions:
    parts: list[tuple[Piece, Env, np.ndarray]] = []
    for p in pieces(cq, sol, ticks):
        env = piece_env(cq, sol, p, dictionary)
        keep = np.ones(env.n, bool)
        for f in cq.dynamic_filters:
            keep &= passes(f, env)
        if not keep.all():
            p = Piece(p.owner[keep], p.ka[keep], p.kb[keep], None if p.tau is None else p.tau[keep])
            env = piece_env(cq, sol, p, dictionary)
        parts.append((p, env, group_columns(cq, env)))
    codes = np.concatenate([g for _, _, g in parts])
    inv = key_ranks(codes)[0] if len(codes) else np.zeros(0, np.int64)
    first = np.zeros(int(inv.max(initial=-1)) + 1, np.int64)
    first[inv[::-1]] = np.arange(len(inv) - 1, -1, -1)
    args: list[Values | None] = []
    for a in cq.q.aggregates:
        if a.arg is None:
            args.append(None)
        elif a.func == "COUNT" and not a.distinct and isinstance(a.arg, Var) and bound(cq, a.arg.name):
            args.append(Values("bool", np.ones(len(inv), bool), np.ones(len(inv), bool)))  # only counted
        else:
            args.append(Values.concat([evaluate(a.arg, env) for _, env, _ in parts]))
    return Contributions(inv, np.concatenate([p.ka for p, _, _ in parts]), np.concatenate([p.kb for p, _, _ in parts]),
                         args, codes[first])


def bound(cq: CompiledQuery, name: str) -> bool:
    """Bound in every solution (an aggregate over it never meets an unbound value)."""
    return name in cq.term_vars or name in cq.start_of or name in cq.end_of
