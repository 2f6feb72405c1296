"""What a bucket keeps after a report beyond its open facts: under WHILE, the closed intervals and
events that a scope fact still open overlaps (its later ticks count them, spec §4.3).

Without WHILE nothing else: a later tick `tau > U` sees a fact through CURRENT only if it is open,
and through its period `(tau - d, tau]` only what ends (or happens) after `tau - d >= U`. Under
WHILE a closed fact item `[s, e)` (an event: `e = t + 1`) still counts at a later tick iff a scope
fact with its key, open at `U`, started before `e`; a scope fact closed at or before `U` is no
longer reported after `U`. The key is the group variables the WHILE pattern shares; an item that
does not bind them all is kept against any open scope fact.
"""
from __future__ import annotations

import numpy as np

from tefq.plan.logical import Pattern
from tefq.spark.kernels.general.coding import Elements
from tefq.spark.kernels.general.query import CompiledQuery
from tefq.spark.kernels.general.state import GeneralState
from tefq.spark.kernels.general.tables import column, is_open, match, node_columns
from tefq.spark.kernels.general.where import scope_relation
from tefq.spark.kernels.joins import Relation, key_ranks


class OpenScopes:
    """The earliest start of the open scope facts, per WHILE key."""

    def __init__(self, key: tuple[str, ...], scope: Relation) -> None:
        live = np.nonzero(is_open(column(scope, "#we")))[0] if len(scope) else np.zeros(0, np.int64)
        self.key = key
        self.codes = scope.codes[live][:, [scope.vars.index(k) for k in key]].reshape(len(live), len(key))
        self.ws = column(scope, "#ws")[live] if len(scope) else np.zeros(0, np.int64)

    def needed(self, cols: dict[str, np.ndarray], ends: np.ndarray) -> np.ndarray:
        """Items (their variables' columns, their ends) that an open scope fact of their key started
        before; without the whole key, any open scope fact."""
        if not len(self.ws):
            return np.zeros(len(ends), bool)
        if not all(k in cols for k in self.key) or not self.key:
            return ends > self.ws.min()
        mine = np.column_stack([cols[k] for k in self.key]).reshape(len(ends), len(self.key))
        ki, ks = key_ranks(mine, self.codes)
        first = np.full(int(max(ki.max(initial=0), ks.max(initial=0))) + 1, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(first, ks, self.ws)
        return ends > first[ki]


def retain(cq: CompiledQuery, st: GeneralState, view: dict[str, Relation], events: Elements, upto: int,
           templates: dict[str, Pattern]) -> None:
    """Set `st.closed` and `st.events` to what later ticks can still see."""
    st.closed = {name: Relation.empty(r.vars) for name, r in st.closed.items()}
    st.events = Elements.empty()
    if cq.q.while_ is None:
        return
    scopes = OpenScopes(cq.while_key, scope_relation(cq, view, templates))
    for name, r in view.items():
        items = [wp for wp in cq.items if wp.kind == "fact" and name in wp.facts]
        closed = r.take(np.nonzero(r.end <= upto)[0])
        if not items or not len(closed):
            continue
        spo = node_columns((templates[name].s, templates[name].p, templates[name].o),
                           {v: column(closed, v) for v in closed.vars}, len(closed))
        keep = np.zeros(len(closed), bool)
        for wp in items:
            rows, cols = match(wp.pattern, spo)
            keep[rows[scopes.needed(cols, closed.end[rows])]] = True
        st.closed[name] = closed.take(np.nonzero(keep)[0])
    keep = np.zeros(len(events), bool)
    for wp in cq.items:
        if wp.kind == "event":
            rows, cols = match(wp.pattern, events.spo)
            keep[rows[scopes.needed(cols, events.ts[rows] + 1)]] = True
    st.events = events.take(np.nonzero(keep)[0])
