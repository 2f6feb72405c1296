"""Spark SQL's `xxhash64` of a string (XXH64 of its UTF-8 bytes, seed 42) in Python, for the
few cells a mapper must place exactly where Spark's projection places the others (a join-key
bucket decided on a cell the projection could not read as it is, the element hash that finds its
repeats: runtime/normal_cells.py)."""
from __future__ import annotations

SPARK_SEED = 42  # org.apache.spark.sql.catalyst.expressions.XxHash64's seed
MASK = (1 << 64) - 1
P1, P2, P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
P4, P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & MASK


def round64(acc: int, lane: int) -> int:
    return (rotl((acc + lane * P2) & MASK, 31) * P1) & MASK


def merge(acc: int, v: int) -> int:
    return (((acc ^ round64(0, v)) * P1) + P4) & MASK


def stripes(data: bytes, seed: int) -> int:
    """The accumulator after every whole 32-byte stripe of `data` (XXH64 for 32 bytes or more)."""
    v = [(seed + P1 + P2) & MASK, (seed + P2) & MASK, seed & MASK, (seed - P1) & MASK]
    for at in range(0, len(data) - 31, 32):
        v = [round64(v[i], int.from_bytes(data[at + 8 * i:at + 8 * i + 8], "little")) for i in range(4)]
    acc = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & MASK
    for lane in v:
        acc = merge(acc, lane)
    return acc


def xxhash64(data: bytes, seed: int = SPARK_SEED) -> int:
    """XXH64 of `data` as Spark returns it: a signed 64-bit integer."""
    n = len(data)
    acc = stripes(data, seed) if n >= 32 else (seed + P5) & MASK
    acc = (acc + n) & MASK
    at = n - n % 32 if n >= 32 else 0
    while at + 8 <= n:
        acc = (rotl(acc ^ round64(0, int.from_bytes(data[at:at + 8], "little")), 27) * P1 + P4) & MASK
        at += 8
    if at + 4 <= n:
        acc = (rotl(acc ^ (int.from_bytes(data[at:at + 4], "little") * P1 & MASK), 23) * P2 + P3) & MASK
        at += 4
    for byte in data[at:]:
        acc = (rotl(acc ^ (byte * P5 & MASK), 11) * P1) & MASK
    acc = ((acc ^ (acc >> 33)) * P2) & MASK
    acc = ((acc ^ (acc >> 29)) * P3) & MASK
    acc ^= acc >> 32
    return acc - (1 << 64) if acc >= 1 << 63 else acc


def element_hash(s: str, p: str, o: str) -> int:
    """Spark SQL's `xxhash64(s, p, o)`: each column's hash seeds the next."""
    h = SPARK_SEED
    for cell in (s, p, o):
        h = xxhash64(cell.encode("utf-8"), h)
    return h


def string_bucket(term: str, buckets: int) -> int:
    """Spark's `pmod(xxhash64(term), buckets)`."""
    return xxhash64(term.encode("utf-8")) % buckets
