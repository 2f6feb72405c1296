"""Refresh simulation, per fact (C-SPARQL style, spec §7).

Every window re-emits each fact still valid at its close `tau` as a refresh binding
`(identity, start)` into the next window; nothing else survives a window. Cost: one binding per
valid fact per window (plus, for WHILE queries, the closed facts a live scope still needs).
"""
from __future__ import annotations

from tefq.simulate.window import StateChange, WindowState


class RefreshPerFact:
    name = "refresh"

    def __init__(self) -> None:
        self.carried = WindowState({}, {})
        self.bindings = 0
        self.closed_bindings = 0  # part of `bindings`: closed facts kept for WHILE scopes

    def restore(self) -> WindowState:
        # the executor copies these bindings into the new window: that copy is the re-emission
        return self.carried

    def carry(self, tau: int, state: WindowState, changes: list[StateChange]) -> None:
        self.carried = WindowState({n: d for n, d in state.open.items() if d},
                                   {n: c for n, c in state.closed.items() if c})
        n_closed = sum(len(c) for c in self.carried.closed.values())
        self.bindings += sum(len(d) for d in self.carried.open.values()) + n_closed
        self.closed_bindings += n_closed
