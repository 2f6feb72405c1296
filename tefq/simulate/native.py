"""Native facts in the same windowed executor: the TEF side of `tefq compare`.

The state is one fact table kept across windows and updated in place — nothing is re-emitted or
replayed — so its cost is the facts it creates (spec §7: `intermediate_bindings = facts_created`).
Running it through the same executor as the simulations makes their throughputs comparable: the
only difference between the approaches is how state crosses a window boundary.
"""
from __future__ import annotations

from tefq.simulate.window import StateChange, WindowState


class NativeFacts:
    name = "tef"
    shares_state = True  # the executor updates this table in place: no copy per window

    def __init__(self) -> None:
        self.table = WindowState({}, {})
        self.bindings = 0  # set from facts_created when the run ends

    def restore(self) -> WindowState:
        return self.table

    def carry(self, tau: int, state: WindowState, changes: list[StateChange]) -> None:
        self.table = state
