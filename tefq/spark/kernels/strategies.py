"""How each simulated-fact strategy (spec §7) carries the facts valid at a window's close into the
next window, as numpy columns: C-SPARQL refresh per fact and per group, EP-SPARQL's state-event
sequence. Spark-free; the simulation operator (`tefq.spark.operators.simulated`) drives them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tefq.simulate.names import STRATEGIES
from tefq.spark.kernels.intervals import OPEN, SINCE, Events, Intervals

@dataclass
class Changes:
    """The status changes of one window, in (identity, time, order) order: the sequence's state
    events. `start` is the start of the interval an event opens or closes (a rejoin at the quit's
    very ms continues the earlier interval, so it keeps its start)."""

    fid: np.ndarray
    groups: np.ndarray
    opens: np.ndarray  # bool
    ts: np.ndarray
    start: np.ndarray

    def __len__(self) -> int:
        return len(self.fid)


def state_changes(base: Intervals, ev: Events) -> Changes:
    """Which events change a fact's status when applied in order to the open facts `base` (unique,
    sorted by fid): a SINCE of a closed identity, an UNTIL of an open one (spec §7)."""
    ev = ev.take(np.lexsort((ev.order, ev.ts, ev.fid)))
    n = len(ev)
    first = np.ones(n, dtype=bool)
    first[1:] = ev.fid[1:] != ev.fid[:-1]
    pos = np.searchsorted(base.fid, ev.fid)
    posc = np.minimum(pos, max(len(base) - 1, 0))
    in_base = (pos < len(base)) & (base.fid[posc] == ev.fid) if len(base) else np.zeros(n, bool)
    prev_open = np.empty(n, dtype=bool)
    prev_open[1:] = ev.kind[:-1] == SINCE
    prev_open[first] = in_base[first]
    eff = np.nonzero(((ev.kind == SINCE) & ~prev_open) | ((ev.kind != SINCE) & prev_open))[0]
    fid, ts, opens = ev.fid[eff], ev.ts[eff], ev.kind[eff] == SINCE
    e_first = np.ones(len(eff), dtype=bool)
    e_first[1:] = fid[1:] != fid[:-1]
    meets = np.zeros(len(eff), dtype=bool)  # an open at the ms of the same identity's close: coalesces
    meets[1:] = opens[1:] & ~opens[:-1] & ~e_first[1:] & (ts[1:] == ts[:-1])
    # The interval's start: a fresh open starts it; the first close of a carried fact has its start;
    # every later event of the identity inherits from the last of those (forward fill).
    head = opens & ~meets
    closes_carried = e_first & ~opens
    value = np.where(head, ts, base.start[posc[eff]] if len(base) else 0)
    src = np.where(head | closes_carried, np.arange(len(eff)), -1)
    src = np.maximum.accumulate(src) if len(src) else src
    return Changes(fid, ev.groups[eff], opens, ts, value[src] if len(src) else ts.copy())


def _open_facts(fid: np.ndarray, start: np.ndarray, groups: np.ndarray) -> Intervals:
    order = np.argsort(fid, kind="stable")
    return Intervals(fid[order], start[order], np.full(len(fid), OPEN, np.int64), groups[order])


class RefreshPerFact:
    """C-SPARQL refresh, per fact: one binding `(identity, start)` per fact valid at `tau`,
    re-emitted into the next window."""

    name = "refresh"
    fid: np.ndarray
    start: np.ndarray
    groups: np.ndarray
    bindings: int

    def __init__(self, ngv: int) -> None:
        z = np.zeros(0, np.int64)
        self.fid, self.start, self.groups = z, z.copy(), np.zeros((0, ngv), np.int64)
        self.bindings = 0

    def restore(self) -> Intervals:
        return _open_facts(self.fid, self.start, self.groups)

    def carry(self, valid: Intervals, changes: Changes) -> None:
        self.fid, self.start, self.groups = valid.fid.copy(), valid.start.copy(), valid.groups.copy()
        self.bindings += len(valid)


class RefreshPerGroup:
    """C-SPARQL refresh, per group: one aggregate-state binding per group with a valid fact; it packs
    the group's members `(identity, start)` (exact on repeated joins and unmatched quits). Without
    GROUP BY no pattern binds a group key: one binding per fact, as the oracle's simulation does."""

    name = "refresh-group"
    keys: np.ndarray
    offsets: np.ndarray
    member_fid: np.ndarray
    member_start: np.ndarray
    bindings: int

    def __init__(self, ngv: int) -> None:
        z = np.zeros(0, np.int64)
        self.keys = np.zeros((0, ngv), np.int64)  # one row per pack
        self.offsets = np.zeros(1, np.int64)  # members of pack i: offsets[i]:offsets[i+1]
        self.member_fid, self.member_start = z, z.copy()
        self.bindings = 0

    def restore(self) -> Intervals:
        counts = np.diff(self.offsets)
        return _open_facts(self.member_fid, self.member_start, np.repeat(self.keys, counts, axis=0))

    def carry(self, valid: Intervals, changes: Changes) -> None:
        ngv = valid.groups.shape[1]
        if ngv == 0:  # every fact is its own pack
            self.keys = np.zeros((len(valid), 0), np.int64)
            self.offsets = np.arange(len(valid) + 1, dtype=np.int64)
        else:
            order = np.lexsort(valid.groups.T[::-1])
            g = valid.groups[order]
            cut = np.ones(len(g), dtype=bool)
            cut[1:] = (g[1:] != g[:-1]).any(axis=1)
            heads = np.nonzero(cut)[0]
            self.keys = g[heads]
            self.offsets = np.append(heads, len(g)).astype(np.int64)
            valid = valid.take(order)
        self.member_fid, self.member_start = valid.fid.copy(), valid.start.copy()
        self.bindings += len(self.keys)


class Sequence:
    """EP-SPARQL sequence: an append-only log of state events; the current state is, per identity,
    its latest event (the "no intervening event" lookup), kept as an index into the log."""

    name = "sequence"
    n: int
    log: dict[str, np.ndarray]
    log_groups: np.ndarray
    index_fid: np.ndarray
    index_pos: np.ndarray
    bindings: int

    def __init__(self, ngv: int) -> None:
        self.n = 0
        self.log = {k: np.zeros(1024, np.int64) for k in ("fid", "ts", "start", "opens")}
        self.log_groups = np.zeros((1024, ngv), np.int64)
        self.index_fid = np.zeros(0, np.int64)  # sorted: identities whose latest event opens
        self.index_pos = np.zeros(0, np.int64)  # -> position of that event in the log
        self.bindings = 0

    def restore(self) -> Intervals:
        p = self.index_pos
        return Intervals(self.index_fid, self.log["start"][p], np.full(len(p), OPEN, np.int64), self.log_groups[p])

    def carry(self, valid: Intervals, changes: Changes) -> None:
        m = len(changes)
        if m == 0:
            return
        order = np.argsort(changes.ts, kind="stable")  # stream order in the log
        self._append(changes, order)
        # latest event per identity among this window's changes (changes are in (fid, ts) order)
        last = np.ones(m, dtype=bool)
        last[:-1] = changes.fid[:-1] != changes.fid[1:]
        pos_of = np.empty(m, np.int64)
        pos_of[order] = self.n - m + np.arange(m)
        touched, latest_opens, latest_pos = changes.fid[last], changes.opens[last], pos_of[last]
        keep = ~np.isin(self.index_fid, touched)
        fid = np.concatenate([self.index_fid[keep], touched[latest_opens]])
        pos = np.concatenate([self.index_pos[keep], latest_pos[latest_opens]])
        o = np.argsort(fid, kind="stable")
        self.index_fid, self.index_pos = fid[o], pos[o]
        self.bindings = self.n

    def _append(self, c: Changes, order: np.ndarray) -> None:
        need = self.n + len(c)
        if need > len(self.log["fid"]):
            cap = max(need, 2 * len(self.log["fid"]))
            for k, a in self.log.items():
                self.log[k] = np.resize(a, cap)
            self.log_groups = np.resize(self.log_groups, (cap, self.log_groups.shape[1]))
        sl = slice(self.n, need)
        self.log["fid"][sl], self.log["ts"][sl] = c.fid[order], c.ts[order]
        self.log["start"][sl], self.log["opens"][sl] = c.start[order], c.opens[order]
        self.log_groups[sl] = c.groups[order]
        self.n = need

    def __getstate__(self) -> dict:  # the state blob holds the log, not its spare capacity
        d = dict(self.__dict__)
        d["log"] = {k: a[: self.n] for k, a in self.log.items()}
        d["log_groups"] = self.log_groups[: self.n]
        return d


def make_strategy(name: str, ngv: int):
    return {"refresh": RefreshPerFact, "refresh-group": RefreshPerGroup, "sequence": Sequence}[name](ngv)




__all__ = ["STRATEGIES", "Changes", "state_changes", "RefreshPerFact", "RefreshPerGroup", "Sequence", "make_strategy"]
