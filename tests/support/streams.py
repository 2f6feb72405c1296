"""Streams written as files the engines read: generated IPTV-like elements cut into Parquet parts or text files."""
from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq

from tefq.io.stream_writers import write_stream
from tests.support import spark_docs as sd


def write_files(directory: str, elements, cuts: list[int], fmt: str) -> str:
    """`elements` in stream order, cut into files at the given positions; modification times in
    name order, since Spark's file source takes files by modification time."""
    d = os.path.join(directory, "stream")
    os.makedirs(d)
    bounds = [0] + sorted({c for c in cuts if 0 < c < len(elements)}) + [len(elements)]
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        p = os.path.join(d, f"part-{i:04d}.{fmt}")
        write_stream(elements[a:b], p)
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    return d


def write_parts(tmp_path, elements, nfiles, fmt="tsv"):
    d = tmp_path / "stream"
    d.mkdir()
    elements = sorted(elements, key=lambda e: e[0])
    step = max(1, -(-len(elements) // nfiles))
    for i in range(0, len(elements), step):
        p = d / f"part-{i // step:04d}.{fmt}"
        write_stream(elements[i:i + step], str(p))
        os.utime(p, (1_000_000 + i, 1_000_000 + i))  # Spark's file source goes by modification time
    return str(d)


def random_stream(seed: int, n: int) -> list[tuple[int, str, str, str]]:
    """Joins/quits with ties, events on tick boundaries, rejoins at the quit's ms and unmatched quits."""
    rnd = random.Random(seed)
    iptv = sd.IPTV
    users = [f"<{iptv}u{i}>" for i in range(12)]
    chans = [f"<{iptv}ch{i}>" for i in range(3)]
    out, t = [], 1_000
    for _ in range(n):
        t += rnd.choice([0, 0, 1, 137, 999, 1000 - t % 1000, 2500])
        out.append((t, rnd.choice(users), f"<{iptv}{rnd.choice(['join', 'join', 'quit'])}>", rnd.choice(chans)))
        if rnd.random() < 0.1:  # quit and rejoin at the same ms
            u, c = rnd.choice(users), rnd.choice(chans)
            out += [(t, u, f"<{iptv}quit>", c), (t, u, f"<{iptv}join>", c)]
    return out


def with_programs(seed: int, elements):
    """Add program starts/finishes (UC3's EPG) on the same time line."""
    rnd = random.Random(seed)
    iptv = sd.IPTV
    out = list(elements)
    for t, *_ in elements[::4]:
        out.append((t, f"<{iptv}ch{rnd.randrange(3)}>", f"<{iptv}{rnd.choice(['start', 'start', 'finish'])}>",
                    f"<{iptv}prog{rnd.randrange(4)}>"))
    return sorted(out, key=lambda e: e[0])


IPTV = sd.IPTV
JOIN, QUIT, OTHER = f"<{IPTV}join>", f"<{IPTV}quit>", "<http://x/other>"


GOOD = [
    (1_000, f"<{IPTV}u1>", JOIN, f"<{IPTV}ch1>"),
    (1_500, f"<{IPTV}u2>", JOIN, f"<{IPTV}ch2>"),
    (9_000, f"<{IPTV}u1>", QUIT, f"<{IPTV}ch1>"),
    (9_500, "_:u5", JOIN, f"<{IPTV}ch3>"),
    (12_000, f"<{IPTV}u2>", QUIT, f"<{IPTV}ch2>"),
]


def write(path: str, rows: list[tuple]) -> None:
    cols = list(zip(*rows))
    pq.write_table(pa.table({"ts": pa.array(cols[0], pa.int64()), "s": pa.array(cols[1], pa.string()),
                             "p": pa.array(cols[2], pa.string()), "o": pa.array(cols[3], pa.string())}), path)
