"""`--mix SCHEDULE`: how the proportions of observation kinds change over the stream.

A schedule is one or more phases separated by `;`; the phases split the observations into equal
consecutive shares. A phase gives relative weights, e.g. `flow=8,pressure=1,chlorine=1` (a kind
not named weighs 0). `random:N` is N phases with weights drawn from the seed (Strider's "random
proportions"). The default, `flow=1,pressure=1,chlorine=1`, is a structurally stable stream.
"""
from __future__ import annotations

import re

import numpy as np

from tefq.errors import TefqError
from tefq.sensors.model import KINDS

DEFAULT_MIX = "flow=1,pressure=1,chlorine=1"
_WEIGHT = re.compile(r"\s*(\w+)\s*=\s*([0-9]*\.?[0-9]+)\s*$")


def _error(message: str, text: str, at: int) -> TefqError:
    return TefqError(message, "--mix", 1, at + 1, source_line=text)


def _phase(text: str, start: int, whole: str) -> np.ndarray:
    weights = np.zeros(len(KINDS))
    pos = start
    for item in text.split(","):
        m = _WEIGHT.match(item)
        if not m:
            raise _error(f"expected KIND=WEIGHT (kinds: {', '.join(KINDS)}), not {item.strip()!r}", whole, pos)
        if m.group(1) not in KINDS:
            raise _error(f"unknown observation kind {m.group(1)!r} (kinds: {', '.join(KINDS)})", whole, pos)
        weights[KINDS.index(m.group(1))] = float(m.group(2))
        pos += len(item) + 1
    if not weights.sum() > 0:
        raise _error("a phase needs a positive weight", whole, start)
    return weights / weights.sum()


def parse_mix(text: str, seed: int = 0) -> np.ndarray:
    """The schedule as an array (phases x kinds) of proportions; each row sums to 1."""
    m = re.fullmatch(r"\s*random\s*:\s*(\d+)\s*", text)
    if m:
        n = int(m.group(1))
        if n < 1:
            raise _error("random:N needs at least one phase", text, 0)
        return np.random.default_rng([seed, 1]).dirichlet(np.ones(len(KINDS)), size=n)
    phases, start = [], 0
    for piece in text.split(";"):
        if not piece.strip():
            raise _error("an empty phase", text, start)
        phases.append(_phase(piece, start, text))
        start += len(piece) + 1
    return np.array(phases)


def kinds_for(observations: np.ndarray, total: int, mix: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The kind of each observation (by its number among `total`), drawn from its phase's mix."""
    phase = np.minimum(observations * len(mix) // max(total, 1), len(mix) - 1)
    cumulative = np.cumsum(mix, axis=1)[phase]
    draw = rng.random(len(observations))[:, None]
    return np.minimum((draw >= cumulative).sum(axis=1), len(KINDS) - 1)


__all__ = ["DEFAULT_MIX", "parse_mix", "kinds_for"]
