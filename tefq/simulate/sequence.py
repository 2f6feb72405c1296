"""Sequence simulation (EP-SPARQL style, spec §7).

The state lives only as a sequence of state events: one per input event that changes a fact's
status (opens a closed fact or closes an open one, in order; a quit and a rejoin at the same ms
are two events). A window reads the current state as, per identity, its latest state event — the
lookup EP-SPARQL's "no intervening event" SEQ pattern performs.
"""
from __future__ import annotations

from tefq.simulate.window import Identity, StateChange, WindowState


class Sequence:
    name = "sequence"

    def __init__(self) -> None:
        self.log: list[StateChange] = []
        self.latest_open: dict[str, dict[Identity, int]] = {}  # identity -> position of its open event
        self.needed: dict = {}
        self.bindings = 0

    def restore(self) -> WindowState:
        log = self.log
        return WindowState({n: {i: log[pos].start for i, pos in d.items()} for n, d in self.latest_open.items()},
                           self.needed)

    def carry(self, tau: int, state: WindowState, changes: list[StateChange]) -> None:
        for c in sorted(changes, key=lambda c: c.ts):  # stable: keeps stream order among ties
            self.log.append(c)
            latest = self.latest_open.setdefault(c.fact, {})
            if c.opens:
                latest[c.identity] = len(self.log) - 1
            else:
                latest.pop(c.identity, None)
        # closed facts a WHILE scope still needs are earlier events of this same sequence: not new bindings
        self.needed = {n: c for n, c in state.closed.items() if c}
        self.bindings = len(self.log)
