"""Strider's join ordering for a basic graph pattern (paper 002, §4; Ren & Curé, ISWC 2017).

The BGP is an undirected connected graph (UCG): a vertex per triple pattern, an edge between two
patterns that share a variable. Two ways to weigh it:

* **static** (compile time, heuristic): a pattern's weight is how selective its shape is, by
  where its constants are — (s,p,o) 1 < (s,?,o) 2 < (?,p,o) 3 < (s,p,?) 4 < (?,?,o) 5 <
  (s,?,?) 6 < (?,p,?) 7 < (?,?,?) 8 (Strider's rule, after Tsialiamanis et al.). The order starts
  with the lightest pattern (one in a star first), then keeps joining the connected pattern that
  continues a star (shares a subject variable with a pattern already joined), the lightest first:
  star joins before chains.
* **adaptive** (run time, statistics): a vertex weighs its exact cardinality in the current
  window batch; an edge estimates its join's cardinality — inside a star of patterns whose
  objects are all variables, |tp1|·|tp2| / λ (λ: the star's smallest cardinality), otherwise
  min(|tp1|, |tp2|). The order starts with the lightest edge (its smaller pattern first) and
  keeps adding the pattern reached by the lightest edge from those already joined (a left-deep
  walk of Strider's minimum-weight path cover). A pattern with no match weighs 0: it comes
  first and the BGP is empty after one step.

Adaptive ordering has two strategies (§4.3): **forward** (F-AQP) orders batch n on batch n's own
cardinalities; **backward** (B-AQP) orders it on batch n-1's, so the plan is fixed before the
batch is read. The decision maker picks the next batch's strategy from γ = t_n / s, the share of
the trigger interval s the batch took: backward while γ < Θ (0.7), forward otherwise (the stream
is changing and the engine is late: re-plan on what it sees). The first batch is forward.
Rows never depend on the order (a BGP's joins commute); `JoinOrders.records` says per batch and
BGP what was chosen (the `join_orders` metric).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from rdflib import BNode, Variable

THETA = 0.7
MODES = ("static", "adaptive")


def is_variable(x) -> bool:
    return isinstance(x, (Variable, BNode))  # a blank node in a pattern is a variable


def shape_weight(t: tuple) -> int:
    """Strider's heuristic selectivity rank of a triple pattern (1 most selective, 8 least)."""
    s, p, o = (is_variable(x) for x in t)
    return {(False, False, False): 1, (False, True, False): 2, (True, False, False): 3,
            (False, False, True): 4, (True, True, False): 5, (False, True, True): 6,
            (True, False, True): 7, (True, True, True): 8}[(s, p, o)]


def shared_variables(a: tuple, b: tuple) -> set:
    return {x for x in a if is_variable(x)} & {x for x in b if is_variable(x)}


def in_star(a: tuple, b: tuple) -> bool:
    """Two patterns of one star: the same subject variable."""
    return is_variable(a[0]) and a[0] == b[0]


def _connected_to(j: int, placed: Sequence[int], triples: Sequence[tuple]) -> bool:
    return any(shared_variables(triples[j], triples[k]) for k in placed)


def static_order(triples: Sequence[tuple]) -> list[int]:
    """The compile-time order (indices into `triples`)."""
    n = len(triples)
    if n < 2:
        return list(range(n))
    weight = [shape_weight(t) for t in triples]
    starred = [any(in_star(triples[i], triples[j]) for j in range(n) if j != i) for i in range(n)]
    order = [min(range(n), key=lambda i: (weight[i], not starred[i], i))]
    while len(order) < n:
        rest = [j for j in range(n) if j not in order]
        reachable = [j for j in rest if _connected_to(j, order, triples)] or rest

        def key(j: int) -> tuple:
            continues_star = any(in_star(triples[j], triples[k]) for k in order)
            return (not continues_star, weight[j], j)

        order.append(min(reachable, key=key))
    return order


def edge_weights(triples: Sequence[tuple], cards: Sequence[int]) -> dict[tuple[int, int], float]:
    """Strider's estimated join cardinality of each UCG edge (i < j)."""
    n = len(triples)
    open_star = [is_variable(t[0]) and is_variable(t[2]) for t in triples]
    lam: dict = {}
    for i, t in enumerate(triples):  # λ: the smallest cardinality of each star of open patterns
        if open_star[i]:
            lam[t[0]] = min(lam.get(t[0], cards[i]), cards[i])
    out: dict[tuple[int, int], float] = {}
    for i in range(n):
        for j in range(i + 1, n):
            if not shared_variables(triples[i], triples[j]):
                continue
            if in_star(triples[i], triples[j]) and open_star[i] and open_star[j]:
                low = lam[triples[i][0]]
                out[(i, j)] = cards[i] * cards[j] / low if low else 0.0
            else:
                out[(i, j)] = float(min(cards[i], cards[j]))
    return out


def adaptive_order(triples: Sequence[tuple], cards: Sequence[int]) -> list[int]:
    """The run-time order for these exact per-pattern cardinalities."""
    n = len(triples)
    if n < 2:
        return list(range(n))
    edges = edge_weights(triples, cards)
    if edges:
        (i, j), _ = min(edges.items(), key=lambda e: (e[1], e[0]))
        order = [i, j] if (cards[i], i) <= (cards[j], j) else [j, i]
    else:
        order = [min(range(n), key=lambda i: (cards[i], i))]
    while len(order) < n:
        frontier = [(w, cards[b], b) for (a, b), w in _undirected(edges) if a in order and b not in order]
        if frontier:
            order.append(min(frontier)[2])
        else:  # a disconnected part: its smallest pattern (a cross product, as in any order)
            order.append(min((j for j in range(n) if j not in order), key=lambda j: (cards[j], j)))
    return order


def _undirected(edges: dict[tuple[int, int], float]):
    for (i, j), w in edges.items():
        yield (i, j), w
        yield (j, i), w


@dataclass
class Choice:
    """One BGP's order for one batch."""

    batch: int
    bgp: int
    strategy: str  # static | forward | backward
    order: list[int]
    cardinalities: list[int]
    gamma: float | None  # γ of the batch before, that made the decision (None: no batch before)

    def to_json(self) -> dict:
        return {"batch": self.batch, "bgp": self.bgp, "strategy": self.strategy, "order": self.order,
                "cardinalities": self.cardinalities, "gamma": self.gamma}


@dataclass
class JoinOrders:
    """One query's join ordering over its batches: the mode, each BGP's statistics from the batch
    before, the decision maker's next strategy, and what was chosen (`records`)."""

    mode: str = "adaptive"
    interval_s: float = 1.0  # s: the trigger interval γ is measured against
    theta: float = THETA
    batch: int = 0
    strategy: str = "forward"
    gamma: float | None = None
    previous: dict[int, list[int]] = field(default_factory=dict)  # bgp -> cardinalities of the batch before
    static: dict[int, list[int]] = field(default_factory=dict)
    records: list[Choice] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"join order must be one of {', '.join(MODES)}, not {self.mode!r}")

    def choose(self, bgp: int, triples: Sequence[tuple], cards: Sequence[int]) -> list[int]:
        """The order of BGP `bgp` in the current batch, whose exact cardinalities are `cards`."""
        cards = [int(c) for c in cards]
        if self.mode == "static":
            if bgp not in self.static:
                self.static[bgp] = static_order(triples)
            order, strategy = self.static[bgp], "static"
        elif self.strategy == "backward" and bgp in self.previous:
            order, strategy = adaptive_order(triples, self.previous[bgp]), "backward"
        else:
            order, strategy = adaptive_order(triples, cards), "forward"
        self.previous[bgp] = cards
        self.records.append(Choice(self.batch, bgp, strategy, list(order), cards, self.gamma))
        return list(order)

    def end_batch(self, seconds: float) -> None:
        """The decision maker: γ = t_n / s picks the strategy of the next batch."""
        self.gamma = seconds / self.interval_s if self.interval_s > 0 else float("inf")
        self.strategy = "backward" if self.gamma < self.theta else "forward"
        self.batch += 1


__all__ = ["THETA", "MODES", "JoinOrders", "Choice", "static_order", "adaptive_order", "edge_weights",
           "shape_weight", "in_star", "shared_variables", "is_variable"]
