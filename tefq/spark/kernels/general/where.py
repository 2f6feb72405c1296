"""The aggregate WHERE at a batch of ticks (spec §4.2-4.3): every solution with its activity.

Each item becomes a table with an activity `[lo, hi)` in ms — the ticks `tau` at which what it
matched is visible, as `tefq.oracle.query` defines them:

- `CURRENT` fact `[s, e)`:     `s <= tau < e`
- fact pattern `[s, e)`:       `s <= tau < e + d`   (overlaps the period `(tau - d, tau]`)
- event at `t`:                `t <= tau < t + d`
- background triple:           always

The items are joined on their shared variables (`tables.join`: activities intersected;
static FILTERs applied as soon as their variables are bound). Under WHILE, items other than
`CURRENT` do not restrict the activity in the join; instead each solution is paired with the scope
facts of its group (`ws, we`): active from `max(ws, starts)` to `min(we + d, ...)`, provided every
fact item overlaps `[ws, we)` and every event lies in it; the activity is the union over the pairs.
"""
from __future__ import annotations

import numpy as np

from tefq.spark.kernels.general.coding import Elements
from tefq.spark.kernels.general.expressions import variables
from tefq.spark.kernels.general.facts import CodedBackground, filtered, pattern_rows
from tefq.spark.kernels.general.query import CompiledQuery, item_end, item_start
from tefq.spark.kernels.general.tables import (ALWAYS, NEVER, column, join, match, relation, select_rows, union,
                                              with_columns)
from tefq.spark.kernels.joins import Relation, coalesce, interval_join


def item_rows(cq: CompiledQuery, i: int, facts: dict[str, Relation], events: Elements, bg: CodedBackground,
              templates: dict) -> Relation:
    """Item `i`'s rows: its variables, its hidden start/end, its interval start, its activity."""
    wp, d = cq.items[i], cq.every
    if wp.kind == "background":
        return bg.relation(wp.pattern)
    names = tuple(v.name for v in wp.pattern.variables())
    if wp.kind == "event":
        rows, cols = match(wp.pattern, events.spo)
        t = events.ts[rows]
        r = relation(cols, t, t + d, n=len(rows))
    else:
        r = union([pattern_rows(wp.pattern, facts[name], templates[name]) for name in wp.facts], names)
    extra = {item_start(i): r.start, item_end(i): r.end}
    if wp.interval is not None:
        extra[wp.interval[0].name] = r.start
    r = with_columns(r, extra)
    if cq.q.while_ is not None and wp.kind != "current":
        return Relation(r.vars, r.codes, np.full(len(r), NEVER), np.full(len(r), ALWAYS))
    if wp.kind == "fact":
        return Relation(r.vars, r.codes, r.start, r.end + d)
    return r


def bound_names(cq: CompiledQuery) -> set[str]:
    """Variables the WHERE binds (a FILTER reads the others as unbound)."""
    return cq.term_vars | set(cq.start_of)


def apply_ready_filters(cq: CompiledQuery, r: Relation, pending: list, dictionary) -> Relation:
    """Apply the static FILTERs whose bound variables are all columns of `r` now."""
    bound = bound_names(cq)
    ready = [f for f in pending if set(variables(f)) & bound <= set(r.vars)]
    for f in ready:
        pending.remove(f)
    times = tuple(v for v in cq.start_of if v in r.vars)
    return filtered(r, tuple(ready), dictionary, times)


def join_items(cq: CompiledQuery, parts: list[Relation], dictionary) -> Relation:
    """Facts and events first, then whatever shares a variable with what is joined (no products
    while a connected item is left); static FILTERs as early as they can run."""
    order = sorted(range(len(parts)), key=lambda i: (cq.items[i].kind == "background", i))
    pending = list(cq.static_filters)
    joined = apply_ready_filters(cq, parts[order[0]], pending, dictionary)
    rest = order[1:]
    while rest and len(joined):
        pick = next((j for j in rest if set(parts[j].vars) & set(joined.vars)), rest[0])
        rest.remove(pick)
        joined = apply_ready_filters(cq, join(joined, parts[pick]), pending, dictionary)
    if rest:  # an empty join: the remaining columns still belong to the (empty) result
        names = joined.vars + tuple(v for j in rest for v in parts[j].vars if v not in joined.vars)
        return Relation.empty(tuple(dict.fromkeys(names)))
    return filtered(joined, tuple(pending), dictionary, tuple(v for v in cq.start_of if v in joined.vars))


def solutions(cq: CompiledQuery, facts: dict[str, Relation], events: Elements, bg: CodedBackground, templates: dict,
              dictionary, bucket: int = 0, buckets: int = 1) -> Relation:
    """Every solution of the WHERE with its activity (one row per activity range)."""
    split = cq.split_items() if buckets > 1 else set()
    parts = []
    for i in range(len(cq.items)):
        r = item_rows(cq, i, facts, events, bg, templates)
        if i in split:
            r = select_rows(r, cq.split.buckets(column(r, cq.split.var), buckets, dictionary) == bucket)
        parts.append(r)
    sol = join_items(cq, parts, dictionary).nonempty()
    if cq.q.while_ is None or not len(sol):
        return sol
    return while_activity(cq, sol, scope_relation(cq, facts, templates))


def scope_relation(cq: CompiledQuery, facts: dict[str, Relation], templates: dict) -> Relation:
    """The WHILE facts keyed by the group variables they share, reported while `ws <= tau < we + d`;
    `#ws`/`#we` keep the interval."""
    w = cq.q.while_
    key = cq.while_key
    names = tuple(v.name for v in w.pattern.variables())
    r = union([pattern_rows(w.pattern, facts[name], templates[name]) for name in w.facts], names)
    cols = {k: column(r, k) for k in key}
    cols.update({"#ws": r.start, "#we": r.end})
    return relation(cols, r.start, r.end + cq.every, n=len(r))


def while_activity(cq: CompiledQuery, sol: Relation, scope: Relation) -> Relation:
    """Each solution's activity under its group's scope facts, united per solution."""
    ids = with_columns(sol, {"#sol": np.arange(len(sol), dtype=np.int64)})
    pairs = interval_join(Relation(ids.vars, ids.codes, ids.start, ids.end), scope)
    if not len(pairs):
        return Relation.empty(sol.vars)
    ws, we = column(pairs, "#ws"), column(pairs, "#we")
    lo, hi = pairs.start.copy(), pairs.end
    for i, wp in enumerate(cq.items):
        if wp.kind in ("fact", "event"):
            s, e = column(pairs, item_start(i)), column(pairs, item_end(i))
            inside = (s < we) & (e > ws) if wp.kind == "fact" else (ws <= s) & (s < we)
            lo = np.maximum(lo, s)
            hi = np.where(inside, hi, lo)
    ranges = coalesce(Relation(("#sol",), column(pairs, "#sol").reshape(-1, 1), lo, hi))
    picked = ranges.codes[:, 0]
    return Relation(sol.vars, sol.codes[picked], ranges.start, ranges.end)
