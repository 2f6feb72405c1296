"""A run killed with SIGKILL and restarted: its command, its first lines, the stream it reads (the reliability tests' harness)."""
from __future__ import annotations

import os
import random
import signal
import subprocess

from tests.support.paths import ROOT

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
X = "http://example.org/iptv#"
BASE = 1_700_000_000_000


FILES = 8


def write_stream(directory) -> None:
    """FILES files of joins and quits, in name order and modification-time order (Spark's order)."""
    rng = random.Random(5)
    directory.mkdir()
    for k in range(FILES):
        rows = []
        for i in range(40):
            t = BASE + k * 100_000 + rng.randrange(100_000)
            user, channel = f"<{X}u{rng.randrange(30)}>", f"<{X}ch{rng.randrange(4)}>"
            rows.append((t, user, rng.choice([f"<{X}join>", f"<{X}quit>"]), channel))
        f = directory / f"{k:02d}.tsv"
        f.write_text("ts\ts\tp\to\n" + "".join(f"{t}\t{s}\t{p}\t{o}\n" for t, s, p, o in sorted(rows)))
        os.utime(f, (1_600_000_000 + k, 1_600_000_000 + k))


def killed_after(child: subprocess.Popen, seconds: float) -> bool:
    """Wait up to `seconds` for `child`; if it is still running, SIGKILL its process group (the
    JVM and the Python workers with it). True if it was killed, False if it ended by itself."""
    try:
        child.wait(seconds)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        return True


def first_lines(stderr: str) -> str:
    """The error's own words come first; Spark then prints the whole logical plan."""
    return stderr[:2500]
