"""UC3's fact table over generated events, shared by the fact-table tests on Spark (files, Redis, the API)."""
from __future__ import annotations

import os
import random

from tests.support import spark_docs as sd
from tests.support.paths import ROOT

UC3 = os.path.join(ROOT, "usecases", "uc3.tef")
IPTV = sd.IPTV


def uc3_events(seed: int, n: int, t0: int) -> list[tuple]:
    """A UC3 stream of `n` events from `t0`, 500 ms apart: users joining and quitting channels,
    channels starting and finishing programmes (some facts still open at the end)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        t = t0 + 500 * i
        if rng.random() < 0.25:
            out.append((t, f"<{IPTV}ch{rng.randrange(2)}>", f"<{IPTV}{rng.choice(['start', 'finish'])}>",
                        f"<{IPTV}prog{rng.randrange(3)}>"))
        else:
            out.append((t, f"<{IPTV}u{rng.randrange(6)}>", f"<{IPTV}{rng.choice(['join', 'quit'])}>",
                        f"<{IPTV}ch{rng.randrange(2)}>"))
    return out


def complete_lines(path: str) -> list[str]:
    """The whole rows of a file (a reader may see an append in progress)."""
    text = open(path, encoding="utf-8", newline="").read() if os.path.exists(path) else ""
    return [line for line in text.split("\r\n")[:-1]]
